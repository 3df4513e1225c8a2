"""One real MURPHY step of the packaged code model (Qwen2.5-Coder-0.5B-Instruct, LoRA) on a CPU, with the levers
on and off, on the same training tasks, in one run (docs/performance.md, "The real step on a CPU"):

    python benchmarks/real_step.py               # 2 tasks (STEP_TASKS), G1 4, G2 2, 512-token turns
    python benchmarks/real_step.py --tasks 8     # the issue's step: 8 tasks
    python benchmarks/real_step.py --on-only     # only the step with the levers on
    python benchmarks/real_step.py --levers      # the generation levers one by one, each off and on in one run
    python benchmarks/real_step.py --on-only --phases   # and the peak resident memory of each phase of the step

Levers on: the step's tasks' trees grown together (one `generate` per turn for all of them), bf16 (a CPU with bf16
instructions: `policy.hf.cpu_bf16`), the code model's stop rule in the rollouts, one prefill per group,
length-sorted micro-batches and chunks. Levers off: what a step did before them: one task per step (k steps for k
tasks), fp32, no stop rule (every turn runs to the cap), every row prefilling its prompt, micro-batches in random
order padded to the round's longest row.

Each configuration runs in a child process of its own (one torch thread), so its CPU seconds (the child and the
executor processes it waited for: `resource.getrusage(RUSAGE_CHILDREN)`), wall seconds and peak RSS are its own. The
first batch of a run checks the prefix-shared log-prob pass against TRL's row pass once (`_prefix_check`, both
passes run): its CPU is reported apart and left out of the per-task figure. The last line is

    real step: <model> LoRA, <k> tasks x G1 <g1> G2 <g2>, cap <L> tokens, <c> CPU-s per task (levers off <c0>,
    <r>x), cut <u>%, loss nonzero <yes|no>, peak <g> GB

`cut`: the share of the step's completions (every turn) that ended at the cap, neither at an EOS nor at a closed code
block. `loss nonzero`: the step's loss has a non-zero gradient (TRL's grad norm > 0: some advantage is non-zero; with
the paper's group_sum aggregation the loss *value* at the first iteration is the sum of each group's advantages, 0
by construction, while its gradient is not). Writes real_step.json to $BENCH_OUT (default: the temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# MBPP training tasks (the real-cpu training set) whose four first attempts got different rewards in a probe: 4
# samples of each of 16 tasks drawn from the training set (random.Random(0).shuffle), T 1.0, 512 tokens, bf16, the
# stop rule; 10 of the 16 had rewards that varied, these are the first 8 of them (a step on them has advantages)
STEP_TASKS = ("mbpp/594", "mbpp/737", "mbpp/2", "mbpp/805", "mbpp/543", "mbpp/811", "mbpp/848", "mbpp/673")
G1, G2, CAP = 4, 2, 512


class Phases:
    """Peak resident memory (GB) per phase of a step, sampled every 20 ms by a thread: the rollouts (`grow_trees`),
    the one-time prefix check, the log-prob passes without gradient (π_ref) and with it (the loss), the backward."""

    def __init__(self):
        import threading

        self.now, self.peaks = "start", {}
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self):
        while True:
            with open("/proc/self/status") as f:
                rss = next(int(x.split()[1]) * 1024 / 1e9 for x in f if x.startswith("VmRSS"))
            self.peaks[self.now] = max(self.peaks.get(self.now, 0.0), rss)
            time.sleep(0.02)

    def wrap(self, owner, name: str, label: str) -> None:
        import torch

        inner, phases = getattr(owner, name), self

        def wrapped(*a, **kw):
            before = phases.now
            phases.now = label + (" (grad)" if label == "log-probs" and torch.is_grad_enabled() else "")
            try:
                return inner(*a, **kw)
            finally:
                phases.now = before

        setattr(owner, name, wrapped)


def child(levers: bool, k: int, out: Path, phases: bool = False) -> dict:
    """One configuration, in this process: k tasks in one step (levers on) or k steps of one task (levers off)."""
    import torch
    from transformers.trainer_callback import PrinterCallback

    from murphy_lab.config import MurphyConfig
    from murphy_lab.policy.hf import CLOSED_BLOCK
    from murphy_lab.profiles import REAL_CPU_PRESETS, TRAIN_DATA
    from murphy_lab.tasks import load_tasks
    from murphy_lab.trainer import MurphyTrainer

    torch.set_num_threads(1)
    source, args = TRAIN_DATA["mbpp-train"]
    by_id = {t.task_id: t for t in load_tasks(source, **args)}
    tasks = [by_id[i] for i in STEP_TASKS[:k]]
    per_step = k if levers else 1
    # levers on: micro-batches of ~4 rows (the real-cpu profile's); off: 4
    spg = per_step * G1 // (2 if levers else 1)
    presets = {f: v for f, v in REAL_CPU_PRESETS.items() if not f.startswith("eval")}
    cfg = MurphyConfig.for_profile(
        "real-cpu",
        **{
            **presets,
            "model": "qwen2.5-coder-0.5b",
            "g1": G1,
            "g2": G2,
            "max_completion_length": CAP,
            "per_device_train_batch_size": 2 if levers else 1,
            "steps_per_generation": spg,
            "gradient_accumulation_steps": spg,
            "max_steps": k // per_step,
            "bf16": levers,
            "save_steps": 10**6,
            "seed": 0,
        },
    )

    class Measured(MurphyTrainer):
        check_cpu, completions = 0.0, []

        def _prefix_check(self, *a, **kw):
            t0 = time.process_time()
            try:
                return super()._prefix_check(*a, **kw)
            finally:
                Measured.check_cpu += time.process_time() - t0

        def dump_round(self, trees):
            ends = set(self.eos_token_ids)
            for tree in trees:
                for n in tree.nodes():
                    ids = n.meta["completion_ids"]
                    stopped = bool(ids) and (ids[-1] in ends or bool(CLOSED_BLOCK.search(n.completion)))
                    Measured.completions.append({"tokens": len(ids), "cut": len(ids) >= CAP and not stopped})
            super().dump_round(trees)

    with tempfile.TemporaryDirectory() as run:
        grpo = cfg.to_grpo_config(run, save_strategy="no", disable_tqdm=True)
        trainer = Measured(
            model="qwen2.5-coder-0.5b",
            args=grpo,
            murphy=cfg,
            tasks=tasks,
            stop_after_code=None if levers else False,
        )
        trainer.prefill_once = trainer.sort_by_length = levers
        watch = Phases() if phases else None
        if watch:
            from murphy_lab.trainer.prefix_pass import PrefixSharing

            watch.wrap(Measured, "grow_trees", "rollouts")
            watch.wrap(Measured, "_prefix_check", "prefix check")
            watch.wrap(PrefixSharing, "_get_per_token_logps_and_entropies", "log-probs")
            watch.wrap(trainer.accelerator, "backward", "backward")
        trainer.remove_callback(PrinterCallback)
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.train()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        lines = [json.loads(x) for x in (Path(run) / "metrics.jsonl").read_text().splitlines()]
    cut = [c["cut"] for c in Measured.completions]
    return {
        "levers": levers,
        "tasks": k,
        "steps": len(lines),
        "wall_s": wall,
        "train_cpu_s": cpu,
        "check_cpu_s": Measured.check_cpu,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "completions": len(cut),
        "cut_pct": 100.0 * sum(cut) / max(len(cut), 1),
        "mean_tokens": sum(c["tokens"] for c in Measured.completions) / max(len(cut), 1),
        "grad_norm": [x.get("trl/grad_norm") for x in lines],
        "loss": [x.get("trl/loss") for x in lines],
        "reward": [x.get("reward/turn1_mean") for x in lines],
        "adv_abs": [x.get("advantage/abs_mean") for x in lines],
        "generation_s": sum(x["time/generation_s"] for x in lines),
        "rollout_s": sum(x["time/rollout_s"] for x in lines),
        "dtype": str(next(trainer.model.parameters()).dtype),
        "phases_gb": watch.peaks if watch else None,
    }


def generation_levers() -> list[str]:
    """The generation levers one by one on the 0.5B, each off and on back to back in this process (one thread):
    one prefill per group and bf16 (2 MBPP prompts x 4 rows, 64 greedy tokens: `generate_groups` against
    `generate` over the repeated rows, tokens compared), and rows leaving the batch once ended (8 training tasks x 4
    rows, 512-token cap, T 1.0, bf16, the stop rule: `TransformersPolicy(compact_rows=False / True)`)."""
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from murphy_lab.policy import CODE_MODEL, TransformersPolicy, real_model_path
    from murphy_lab.policy.hf import generate_groups
    from murphy_lab.profiles import TRAIN_DATA
    from murphy_lab.prompts import first_prompt
    from murphy_lab.tasks import load_tasks

    torch.set_num_threads(1)
    source, args = TRAIN_DATA["mbpp-train"]
    tasks = load_tasks(source, **args)
    lines, path = [], str(real_model_path(CODE_MODEL))
    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    texts = [
        tok.apply_chat_template(
            [{"role": "user", "content": first_prompt(t.prompt)}], tokenize=False, add_generation_prompt=True
        )
        for t in tasks[:2]
    ]
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    for dtype in (torch.float32, torch.bfloat16):
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
        kw = dict(max_new_tokens=64, do_sample=False, pad_token_id=tok.pad_token_id)
        seqs, cpu = {}, {}
        for once in (False, True):
            t0 = time.process_time()
            with torch.inference_mode():
                if once:
                    seqs[once] = generate_groups(model, enc["input_ids"], enc["attention_mask"], 4, **kw)
                else:
                    seqs[once] = model.generate(
                        **{k: v.repeat_interleave(4, 0) for k, v in enc.items()}, **kw
                    )
            cpu[once] = time.process_time() - t0
        lines.append(
            f"one prefill per group, {str(dtype)[6:]}: 2 prompts x 4 rows, 64 greedy tokens: {cpu[False]:.1f} "
            f"-> {cpu[True]:.1f} CPU-s ({cpu[False] / cpu[True]:.2f}x), tokens identical: "
            f"{torch.equal(seqs[False], seqs[True])}"
        )
        print(lines[-1], flush=True)
    random.Random(0).shuffle(tasks)
    prompts = [first_prompt(t.prompt) for t in tasks[:8]]
    for compact in (False, True):
        policy = TransformersPolicy(CODE_MODEL, max_new_tokens=CAP, temperature=1.0, compact_rows=compact)
        t0 = time.process_time()
        policy.sample(prompts, G1, seed=0)
        cpu, tokens = time.process_time() - t0, policy.usage["completion_tokens"]
        lines.append(
            f"rows leave the batch once ended {'on ' if compact else 'off'}: 8 tasks x {G1} rows, cap {CAP}: "
            f"{cpu:.1f} CPU-s, {tokens} tokens, {tokens / cpu:.1f} tokens/CPU-s"
        )
        print(lines[-1], flush=True)
    return lines


def run_child(levers: bool, k: int, out: Path, phases: bool = False) -> dict:
    """`child` in a subprocess; its CPU seconds are the subprocess's and its reaped children's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, __file__, "--child", "on" if levers else "off", "--tasks", str(k)]
    cmd += ["--phases"] if phases else []
    log = out / f"real_step_{'on' if levers else 'off'}.log"
    with open(log, "w") as err:
        done = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )
    if done.returncode != 0:
        raise RuntimeError(f"the step with the levers {'on' if levers else 'off'} failed; its log: {log}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(done.stdout.strip().splitlines()[-1])
    r["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    r["cpu_per_task"] = (r["cpu_s"] - r["check_cpu_s"]) / k
    # kept at once
    (out / f"real_step_{'on' if levers else 'off'}.json").write_text(json.dumps(r, indent=2) + "\n")
    return r


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=2, help=f"tasks of the step (1-{len(STEP_TASKS)}, default 2)")
    p.add_argument("--on-only", action="store_true", help="only the step with the levers on")
    p.add_argument("--phases", action="store_true", help="the peak resident memory of each phase of the step")
    p.add_argument("--levers", action="store_true", help="the generation levers one by one (off / on)")
    p.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.levers:
        generation_levers()
        return
    if not 1 <= a.tasks <= len(STEP_TASKS):
        p.error(f"--tasks must lie in [1, {len(STEP_TASKS)}]")
    out = Path(os.environ.get("BENCH_OUT", tempfile.gettempdir()))
    if a.child:
        print(json.dumps(child(a.child == "on", a.tasks, out, a.phases)))
        return
    load = os.getloadavg()
    on = run_child(True, a.tasks, out, a.phases)
    off = None if a.on_only else run_child(False, a.tasks, out, a.phases)
    for r in filter(None, (on, off)):
        print(
            f"levers {'on ' if r['levers'] else 'off'}: {r['steps']} step(s), {r['cpu_s']:.0f} CPU-s ({r['check_cpu_s']:.0f} "
            f"of them the one-time prefix check), {r['wall_s']:.0f} s wall, {r['generation_s']:.0f} s generating, "
            f"{r['completions']} completions of {r['mean_tokens']:.0f} tokens on average, cut {r['cut_pct']:.0f}%, "
            f"turn-1 reward {r['reward']}, |advantage| {r['adv_abs']}, grad norm {r['grad_norm']}, {r['dtype']}, "
            f"peak {r['peak_gb']:.1f} GB",
            flush=True,
        )
        if r.get("phases_gb"):
            peaks = ", ".join(f"{name} {gb:.1f}" for name, gb in r["phases_gb"].items() if name != "start")
            print(f"  peak resident memory by phase (GB): {peaks}", flush=True)
    (out / "real_step.json").write_text(json.dumps({"on": on, "off": off, "load": load}, indent=2) + "\n")
    c0 = "n/a" if off is None else f"{off['cpu_per_task']:.0f}"
    ratio = "n/a" if off is None else f"{off['cpu_per_task'] / on['cpu_per_task']:.1f}"
    nonzero = "yes" if any(g and g > 0 for g in on["grad_norm"]) else "no"
    print(
        f"real step: qwen2.5-coder-0.5b LoRA, {a.tasks} tasks x G1 {G1} G2 {G2}, cap {CAP} tokens, "
        f"{on['cpu_per_task']:.0f} CPU-s per task (levers off {c0}, {ratio}x), cut {on['cut_pct']:.0f}%, "
        f"loss nonzero {nonzero}, peak {on['peak_gb']:.1f} GB"
    )


if __name__ == "__main__":
    main()
