"""Prefix-shared log-probs: every shared prompt is encoded once, every completion is scored against its keys/values.

In a MURPHY tree the G2 refinements of a failed node share one prompt q = [task, v, f(v)], and the G1 turn-1
candidates of a task share q(1). The row-by-row pass (TRL's) encodes each prompt once per row. Here, for a batch
laid out as TRL lays it out (B rows: P left-padded prompt columns, then C right-padded completion columns):

    1. rows whose prompt columns are identical form a group                                  K groups, B rows
    2. prefix pass: the K distinct prompts minus their last column, through the decoder    -> keys/values (K, P-1)
    3. tail pass:   each row's [last prompt token, completion] attends to its group's keys/values, repeated per
                    row as expanded views (so the gradients of all siblings add up in the prefix pass), and the LM
                    head scores the C completion tokens                                   -> log-probs (B, C)

Position ids are the row pass's column indices and the attention mask is the row pass's, so the log-probs are the
row pass's up to floating-point summation order (fp32: |Δ log p| ~ 1e-7, tests/test_prefix.py). Cost: K·(P-1)
prefix tokens plus B·(C+1) tail tokens, against B·(P+C) for the row pass. Needs a decoder whose cache is a plain
full-attention `DynamicCache` (eager or sdpa attention); anything else raises `PrefixUnsupported`.

    logps, entropy = shared_logps(model, input_ids, attention_mask, logits_to_keep=C)
    logps, entropy = row_logps(model, input_ids, attention_mask, logits_to_keep=C)      # the reference
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

# score(model, inputs, labels) -> (log-probs, entropy or None), (B, T-1) or its last columns (at least those with a
# label): the LM head, next-token shifted
Score = Callable[[torch.nn.Module, dict, torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]
ATTENTION = ("eager", "sdpa")  # attention implementations the shared pass is exact with (tested)


class PrefixUnsupported(RuntimeError):
    """The model (cache type, attention backend) cannot share prefixes; use the row pass."""


def logits_score(temperature: float = 1.0, compute_entropy: bool = False) -> Score:
    """The plain LM head: log softmax(logits / temperature) of each next token (0 where the label is -100), the
    head applied only from the position before the first label on (`logits_to_keep`), as TRL's fused head does."""

    def score(model, inputs, labels):
        first = (labels != -100).any(0).nonzero()
        keep = labels.size(1) - int(first[0]) + 1 if first.numel() else 1  # positions from the one before
        logits = model(**inputs, logits_to_keep=keep).logits[:, :-1].float() / temperature  # t predicts t+1
        logp_all = torch.log_softmax(logits, dim=-1)
        target = labels[:, labels.size(1) - keep + 1 :]
        logps = (
            logp_all.gather(-1, target.clamp(min=0).unsqueeze(-1))
            .squeeze(-1)
            .masked_fill(target == -100, 0.0)
        )
        entropy = -(logp_all.exp() * logp_all).sum(-1) if compute_entropy else None
        return logps, entropy

    return score


def row_logps(model, input_ids, attention_mask, logits_to_keep: int, score: Score | None = None):
    """The row-by-row pass (TRL's): every row's prompt and completion through the model. Returns (B, C) log-probs
    (and entropies or None)."""
    score = score or logits_score()
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :-logits_to_keep] = -100
    logps, entropy = score(model, {"input_ids": input_ids, "attention_mask": attention_mask}, labels)
    return logps[:, -logits_to_keep:], None if entropy is None else entropy[:, -logits_to_keep:]


def prefix_groups(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> torch.Tensor:
    """(B,) group index of each row: rows with identical prompt columns (tokens and padding) share one group."""
    key = prompt_ids.masked_fill(prompt_mask == 0, -1)
    return torch.unique(key, dim=0, return_inverse=True)[1]


def shared_logps(
    model,
    input_ids,
    attention_mask,
    logits_to_keep: int,
    score: Score | None = None,
    prefix_model: torch.nn.Module | None = None,
    batch_size: int | None = None,
    by_length: bool = False,
):
    """Per-token log-probs of the completion columns, each shared prompt encoded once (module docstring).

    Args:
        model: the causal LM the tail pass (and the LM head, through `score`) runs on (may be DDP/PEFT-wrapped).
        input_ids, attention_mask: (B, P+C), TRL's layout; logits_to_keep: C.
        score: the LM head applied to the tail pass (default `logits_score()`; the trainer passes TRL's fused head).
        prefix_model: the same model unwrapped (its decoder runs the prefix pass); default `model`.
        batch_size: rows per chunk (whole groups; a group larger than this is one chunk). None = one chunk.
        by_length: chunks of groups of similar length (longest first), each cut to its own last unmasked column,
            instead of chunks in group order padded to the batch's longest row (the log-probs of the cut columns,
            masked in every row of their chunk, are 0).
    Returns (logps (B, C), entropy (B, C) or None), rows in the input order.
    """
    score = score or logits_score()
    p = input_ids.size(1) - logits_to_keep  # prompt columns
    group = prefix_groups(input_ids[:, :p], attention_mask[:, :p])
    parts = []
    for rows in _chunks(group, batch_size, attention_mask.sum(1) if by_length else None):
        ids, mask = input_ids[rows], attention_mask[rows]
        end = input_ids.size(1)
        # the chunk's columns up to its last unmasked one (causal: earlier columns do not see later ones)
        if by_length:
            end = max(p + 1, int(mask.any(0).nonzero().max()) + 1)
        logps, entropy = _shared_chunk(
            model, prefix_model or model, ids[:, :end], mask[:, :end], group[rows], p, score
        )
        if end < input_ids.size(1):  # the cut columns: masked in every row of the chunk
            logps = torch.nn.functional.pad(logps, (0, input_ids.size(1) - end))
            entropy = (
                None if entropy is None else torch.nn.functional.pad(entropy, (0, input_ids.size(1) - end))
            )
        parts.append((rows, logps, entropy))
    order = torch.cat([rows for rows, _, _ in parts])
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    logps = torch.cat([lp for _, lp, _ in parts])[inverse]
    entropy = None if parts[0][2] is None else torch.cat([e for _, _, e in parts])[inverse]
    return logps, entropy


def first_groups(group: torch.Tensor, rows: int) -> torch.Tensor:
    """Indices of the first whole groups (in group order) that fit in `rows` rows; at least the first group."""
    return _chunks(group, rows)[0]


def shuffle_groups(batch: dict) -> dict:
    """The rows of a TRL generation batch (a dict of (B, ...) tensors, lists and scalars) in a random order of their
    prompt groups, siblings adjacent: what TRL's row shuffle would do, at the granularity of groups."""
    group = prefix_groups(batch["prompt_ids"], batch["prompt_mask"]).cpu()
    rank = torch.randperm(int(group.max()) + 1)[group]  # each group's random position
    return _permute(batch, torch.argsort(rank, stable=True))


def sort_groups(batch: dict) -> dict:
    """The rows of a TRL generation batch with their prompt groups in order of length, longest first (a group's
    length: its longest row's prompt + completion tokens; ties keep their order), siblings adjacent: TRL's split into
    steps_per_generation micro-batches then gives each micro-batch rows of similar length, so the passes over it pad
    less. One optimizer step sums the same rows either way (decision 3 in docs/training.md)."""
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    group = prefix_groups(batch["prompt_ids"], batch["prompt_mask"]).cpu()
    order = _chunks(group, None, mask.sum(1).cpu())[0]
    return _permute(batch, order)


def balanced_split(batch: dict, parts: int) -> list[dict]:
    """A length-sorted TRL generation batch (`sort_groups`) cut into `parts` micro-batches of consecutive rows whose
    costs (`split_cost`: what the shared pass over a micro-batch computes) are as even as possible: the largest is
    the smallest any cut into consecutive pieces gives, so never more than TRL's equal row counts, whose first
    micro-batch holds the longest rows and sets the round's peak memory. Exact only for losses normalised by the
    round's counts (dapo, group_sum): a step's gradient is the same sum over the same rows."""
    rows = batch["completion_mask"].size(0)
    if rows < parts:
        raise ValueError(f"{rows} rows cannot make {parts} micro-batches")
    group = prefix_groups(batch["prompt_ids"], batch["prompt_mask"]).cpu().tolist()
    prompt = batch["prompt_mask"].sum(1).cpu().tolist()
    completion = batch["completion_mask"].sum(1).cpu().tolist()

    def cut(cap: int) -> list[int]:
        """Greedy: each micro-batch takes rows while its cost stays <= cap; the index of each one's first row."""
        firsts = [0]
        for i in range(1, rows):
            if (
                split_cost(
                    group[firsts[-1] : i + 1], prompt[firsts[-1] : i + 1], completion[firsts[-1] : i + 1]
                )
                > cap
            ):
                firsts.append(i)
        return firsts

    # the smallest cap that needs at most `parts` micro-batches (greedy is optimal for a cost that grows as a
    # piece grows); then, were there fewer, the costliest pieces of several rows are halved
    lo = max(split_cost(group[i : i + 1], prompt[i : i + 1], completion[i : i + 1]) for i in range(rows))
    hi = split_cost(group, prompt, completion)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if len(cut(mid)) <= parts else (mid + 1, hi)
    firsts = cut(lo)
    while len(firsts) < parts:
        ends = firsts[1:] + [rows]
        _, a, b = max(
            (split_cost(group[a:b], prompt[a:b], completion[a:b]), a, b)
            for a, b in zip(firsts, ends)
            if b - a > 1
        )
        firsts = sorted(firsts + [(a + b) // 2])
    bounds = firsts + [rows]
    return [_permute(batch, torch.arange(a, b)) for a, b in zip(bounds, bounds[1:])]


def split_cost(group: list[int], prompt: list[int], completion: list[int]) -> int:
    """Token positions the shared pass runs for consecutive rows (their group ids, prompt and completion lengths):
    each distinct prompt once, padded to the longest prompt, and each row's tail padded to the longest completion."""
    distinct = 1 + sum(g != h for g, h in zip(group, group[1:]))  # siblings are adjacent
    return distinct * max(prompt) + len(group) * (max(completion) + 1)


def _permute(batch: dict, order: torch.Tensor) -> dict:
    def permute(v):
        if isinstance(v, torch.Tensor):
            return v if v.ndim == 0 else v[order.to(v.device)]
        return v if v is None else [v[i] for i in order.tolist()]

    return {k: permute(v) for k, v in batch.items()}


def _chunks(
    group: torch.Tensor, batch_size: int | None, lengths: torch.Tensor | None = None
) -> list[torch.Tensor]:
    """Row indices, whole groups together, at most `batch_size` rows a chunk (None: one chunk); groups in index
    order, or with `lengths` (B,) by their longest row, longest first."""
    if lengths is None:
        rows = torch.argsort(group, stable=True)
        sizes = torch.bincount(group).tolist()
    else:
        longest = torch.zeros(int(group.max()) + 1, dtype=lengths.dtype, device=group.device)
        longest = longest.scatter_reduce(0, group, lengths.to(group.device), reduce="amax")
        rank = torch.empty_like(longest)
        rank[torch.argsort(-longest, stable=True)] = torch.arange(longest.numel(), device=group.device)
        rows = torch.argsort(rank[group], stable=True)
        sizes = torch.bincount(rank[group]).tolist()
    if batch_size is None or batch_size >= group.numel():
        return [rows]
    chunks, start, taken = [], 0, 0
    for size in sizes:
        if taken and taken + size > batch_size:
            chunks.append(rows[start : start + taken])
            start, taken = start + taken, 0
        taken += size
    chunks.append(rows[start : start + taken])
    return chunks


def _shared_chunk(model, prefix_model, input_ids, attention_mask, group, p: int, score: Score):
    """One chunk of whole groups, rows sorted by group: prefix pass over its distinct prompts, tail pass over its rows."""
    # group index within this chunk (rows come group by group, in group order or by length), 0..K-1,
    # non-decreasing
    _, local = torch.unique_consecutive(group, return_inverse=True)
    first = torch.zeros(int(local.max()) + 1, dtype=torch.long, device=group.device)
    first[local] = torch.arange(local.numel(), device=group.device)  # some row of each group (all are alike)
    prompt_mask = attention_mask[first, : p - 1]  # (K, P-1): every prompt without its last column
    start = int((prompt_mask.sum(0) == 0).sum())  # leading columns that are padding in every prompt here
    if start >= p - 1:  # one-token prompts: nothing to share
        return row_logps(model, input_ids, attention_mask, input_ids.size(1) - p, score)
    decoder = _decoder(prefix_model)
    key = _cache_keyword(decoder)
    columns = torch.arange(input_ids.size(1), device=input_ids.device)
    # prefix pass
    out = decoder(
        input_ids=input_ids[first, start : p - 1],
        attention_mask=prompt_mask[:, start:],
        position_ids=columns[start : p - 1].expand(first.numel(), -1),
        use_cache=True,
    )
    cache = out["cache"] if "cache" in out else out["past_key_values"]
    _check_cache(cache)
    # (K, ...) -> (B, ...): each row reads its group's keys/values
    _expand(cache, torch.bincount(local).tolist())
    tail = input_ids[:, p - 1 :]  # (B, C+1): last prompt token, then the completion
    labels = tail.masked_fill(attention_mask[:, p - 1 :] == 0, -100)
    labels[:, 0] = -100  # the prompt token is context, not a target
    inputs = {
        "input_ids": tail,
        "attention_mask": attention_mask[:, start:],
        "position_ids": columns[p - 1 :].expand(tail.size(0), -1),
        key: cache,
    }
    return score(model, inputs, labels)  # tail pass


def _expand(cache, counts: list[int]) -> None:
    """Repeat group k's keys/values counts[k] times along the batch: expand (a view, whose backward sums the
    siblings' gradients) and one cat, far cheaper in backward than index_select's scatter-add on a CPU."""
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name)
            parts = [t[k : k + 1].expand(n, *t.shape[1:]) for k, n in enumerate(counts)]
            setattr(layer, name, parts[0] if len(parts) == 1 else torch.cat(parts))


def _decoder(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer body of a causal LM (PEFT unwrapped): the module that returns hidden states and a cache."""
    if hasattr(model, "get_base_model"):  # PEFT
        model = model.get_base_model()
    return model.base_model


def _cache_keyword(decoder: torch.nn.Module) -> str:
    """transformers >= 5.2x calls the cache argument `cache`; earlier releases `past_key_values`."""
    return "cache" if "cache" in inspect.signature(decoder.forward).parameters else "past_key_values"


def _check_cache(cache) -> None:
    from transformers.cache_utils import DynamicCache, DynamicLayer

    layers = getattr(cache, "layers", None)
    if (
        not isinstance(cache, DynamicCache)
        or not layers
        or any(type(layer) is not DynamicLayer for layer in layers)
    ):
        kinds = sorted({type(layer).__name__ for layer in layers or []})
        raise PrefixUnsupported(
            f"prefix sharing needs full-attention DynamicCache layers, got {type(cache).__name__} {kinds}"
        )


def disagreement(rows: torch.Tensor, shared: torch.Tensor, mask: torch.Tensor, half: bool) -> str | None:
    """None when shared log-probs reproduce the row pass's on the completion tokens (`mask`): max |Δ log p| <= 1e-4
    in fp32; in bf16/fp16, where the row pass itself moves with the batch shape, mean |Δ| <= 2e-2. Else why not."""
    diff = (rows - shared).abs()[mask.bool()].float()
    worst = float(diff.mean() if half else diff.max()) if diff.numel() else 0.0
    tol = 2e-2 if half else 1e-4
    return None if worst <= tol else f"shared log-probs differ from the row pass by {worst:.2e} (> {tol:g})"


def supported(model: torch.nn.Module) -> str | None:
    """None when `model` can share prefixes exactly, else the reason it cannot (a one-line message)."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return "not a decoder-only transformers model"
    attn = getattr(config, "_attn_implementation", None)
    if attn not in ATTENTION:
        return f"attention implementation {attn!r} (shared prefixes are exact with {ATTENTION})"
    if getattr(model, "is_activation_checkpointing", getattr(model, "is_gradient_checkpointing", False)):
        return "gradient checkpointing drops the cache in training"
    try:
        _decoder(model)
    except AttributeError:
        return f"{type(model).__name__} has no decoder body (base_model)"
    return None


__all__ = [
    "PrefixUnsupported",
    "balanced_split",
    "disagreement",
    "first_groups",
    "logits_score",
    "prefix_groups",
    "row_logps",
    "shared_logps",
    "shuffle_groups",
    "sort_groups",
    "split_cost",
    "supported",
]
