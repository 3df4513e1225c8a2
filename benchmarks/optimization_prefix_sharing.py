"""Forward + backward of MURPHY's loss pass: the row-by-row pass (TRL's) against prefix sharing (murphy_lab.prefix).

A MURPHY tree with G1 = G2 = 8, S = 2 and every turn-1 candidate failed has 72 rows: a turn-1 group of 8 sharing
the task prompt q(1), and 8 turn-2 groups of 8, each sharing its refinement prompt [task, failed code, feedback].
Token lengths (stated in the output): task prompt T_q, completion C, refinement prompt T_q + C + feedback ≈ 3·C.
The model is a random OLMo-2 config (the paper's OLMo-2 family), small enough to run here and large enough that the
matrix products, not Python, dominate on a CPU. Both passes see the same micro-batches (whole groups, in tree order:
the row pass's best case, no padding between turns) and compute

    loss = sum_rows sum_t Â_row · log π(o_t | q, o_<t) · mask / tokens        then loss.backward()

The script prints per-repeat seconds, the median of each, the speedup, the largest |Δ log p| and the largest
relative gradient difference, and the activation memory each pass keeps for its backward (bytes of the tensors
autograd saves, peak over micro-batches; on CUDA also torch.cuda.max_memory_allocated).

    python benchmarks/optimization_prefix_sharing.py --quick        # <= 2 min on 2 cores
    python benchmarks/optimization_prefix_sharing.py                 # the full-size tree

The last line is `prefix sharing: naive <s> s, shared <s> s, speedup <x>x, max |dlogp| <e>, max rel |dgrad| <e>`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from murphy_lab import prefix

SIZES = {  # (hidden, layers, task prompt T_q, completion C, feedback)
    "quick": (128, 2, 64, 96, 128),  # refinement prompt 64 + 96 + 128 = 288 = 3.0·C
    "full": (256, 4, 150, 200, 250),  # refinement prompt 150 + 200 + 250 = 600 = 3.0·C
}


def build_model(hidden: int, layers: int, vocab: int, seed: int = 0):
    from transformers import AutoModelForCausalLM, Olmo2Config

    cfg = Olmo2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=hidden // 64,
        max_position_embeddings=4096,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").float().train()


def tree_groups(g1: int, g2: int, t_q: int, c: int, feedback: int, vocab: int, seed: int = 0):
    """The groups of one fully expanded S = 2 tree: [(prompt ids, [completion ids] * G)], turn 1 first."""
    g = torch.Generator().manual_seed(seed)

    def ids(n):
        return torch.randint(3, vocab, (n,), generator=g)

    def completions(n):  # lengths spread around C (C/2 .. C), as sampled completions are
        return [ids(int(torch.randint(c // 2, c + 1, (1,), generator=g))) for _ in range(n)]

    task = ids(t_q)
    first = completions(g1)
    groups = [(task, first)]
    for failed in first:  # q(2) = [task, failed code, feedback], padded/cut to T_q + C + feedback tokens
        refine = torch.cat([task, failed, ids(feedback + c - len(failed))])
        groups.append((refine, completions(g2)))
    return groups


def layout(groups):
    """TRL's layout of some groups: left-padded prompts, right-padded completions, (B, P+C) ids and mask."""
    rows = [(p, o) for p, outs in groups for o in outs]
    width, c = max(len(p) for p, _ in rows), max(len(o) for _, o in rows)
    ids = torch.zeros(len(rows), width + c, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, (p, o) in enumerate(rows):
        ids[i, width - len(p) : width], mask[i, width - len(p) : width] = p, 1
        ids[i, width : width + len(o)], mask[i, width : width + len(o)] = o, 1
    return ids, mask, c


class SavedBytes:
    """Bytes of the tensors autograd saves for backward while active (each storage counted once)."""

    def __init__(self):
        self.seen, self.bytes = set(), 0

    def __enter__(self):
        def pack(t):
            key = (t.untyped_storage().data_ptr(), t.device)
            if key not in self.seen:
                self.seen.add(key)
                self.bytes += t.untyped_storage().nbytes()
            return t

        self.ctx = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)


def fwd_bwd(model, micro_batches, shared: bool, score):
    """One optimizer step's forward + backward over the micro-batches.
    Returns (wall seconds, CPU seconds of this process, logps, grads, peak saved bytes)."""
    model.zero_grad(set_to_none=True)
    tokens = sum(int(m[:, -c:].sum()) for _, m, c, _ in micro_batches)
    logps, peak = [], 0
    t0, cpu0 = time.perf_counter(), time.process_time()
    for ids, mask, c, adv in micro_batches:
        with SavedBytes() as saved:
            fn = prefix.shared_logps if shared else prefix.row_logps
            lp = fn(model, ids, mask, c, score)[0]
            loss = (lp * mask[:, -c:] * adv[:, None]).sum() / tokens
        peak = max(peak, saved.bytes)
        loss.backward()
        logps.append(lp.detach())
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return seconds, cpu, logps, [p.grad.clone() for p in model.parameters()], peak


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="shorter sequences, fewer repeats (<= 2 min on 2 cores)"
    )
    ap.add_argument(
        "--repeats", type=int, default=None, help="timed repeats per pass (default 3 quick, 5 full)"
    )
    ap.add_argument("--groups-per-micro-batch", type=int, default=1, help="whole groups per micro-batch")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: least disturbed by other load)")
    ap.add_argument("--vocab", type=int, default=2048)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    hidden, layers, t_q, c, feedback = SIZES["quick" if args.quick else "full"]
    repeats = args.repeats or (3 if args.quick else 5)
    g1 = g2 = 8
    model = build_model(hidden, layers, args.vocab)
    groups = tree_groups(g1, g2, t_q, c, feedback, args.vocab)
    k = args.groups_per_micro_batch
    g = torch.Generator().manual_seed(1)
    micro = []
    for i in range(0, len(groups), k):
        ids, mask, width = layout(groups[i : i + k])
        micro.append((ids, mask, width, torch.randn(ids.size(0), generator=g)))
    rows = sum(m[0].size(0) for m in micro)
    print(
        f"model: OLMo-2 config, hidden {hidden}, {layers} layers, vocab {args.vocab}, "
        f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {args.threads} threads"
    )
    print(
        f"tree: G1 = G2 = {g1}, S = 2, {len(groups)} groups, {rows} rows; task prompt {t_q} tokens, completion "
        f"{c // 2}..{c} tokens, refinement prompt {t_q + c + feedback} tokens ({(t_q + c + feedback) / c:.1f}x C); "
        f"{len(micro)} micro-batches of {k} group(s)"
    )
    score = prefix.logits_score()
    times, cpus = {"naive": [], "shared": []}, {"naive": [], "shared": []}
    for name in ("naive", "shared"):  # warm-up on the first two micro-batches, not timed
        fwd_bwd(model, micro[:2], name == "shared", score)
    for r in range(1, repeats + 1):
        for name in ("naive", "shared"):  # interleaved, so both see the same machine load
            seconds, cpu, logps, grads, peak = fwd_bwd(model, micro, name == "shared", score)
            times[name].append(seconds)
            cpus[name].append(cpu)
            print(f"  repeat {r} {name:6s} {seconds:7.3f} s wall, {cpu:7.3f} s CPU", flush=True)
            result = (logps, grads, peak)
            if name == "naive":
                naive = result
    dlogp = max(
        float(((a - b) * m[1][:, -m[2] :]).abs().max()) for a, b, m in zip(naive[0], result[0], micro)
    )
    dgrad = max(
        float((a - b).abs().max() / b.abs().max().clamp(min=1e-30)) for a, b in zip(result[1], naive[1])
    )
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    print(
        f"CPU time (this process, all threads): naive {cpu['naive']:.2f} s, shared {cpu['shared']:.2f} s, "
        f"ratio {cpu['naive'] / cpu['shared']:.2f}x; load average {open('/proc/loadavg').read().split()[0]}"
    )
    mib = 2**20
    print(
        f"activation memory saved for backward (peak micro-batch): naive {naive[2] / mib:.1f} MiB, "
        f"shared {result[2] / mib:.1f} MiB ({result[2] / naive[2]:.2f}x)"
    )
    if torch.cuda.is_available():
        print(f"cuda max_memory_allocated: {torch.cuda.max_memory_allocated() / mib:.0f} MiB")
    print(
        f"prefix sharing: naive {med['naive']:.2f} s, shared {med['shared']:.2f} s, "
        f"speedup {med['naive'] / med['shared']:.2f}x, max |dlogp| {dlogp:.1e}, max rel |dgrad| {dgrad:.1e}"
    )


if __name__ == "__main__":
    main()
