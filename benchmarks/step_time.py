"""Seconds per training step: TRL's own GRPOTrainer against MurphyTrainer, and what MURPHY's step is made of.

One process, one tiny local model (a random OLMo-2 config with the character tokenizer, murphy_lab.policy.tiny),
the smoke profile's four text-answer tasks, the same seed, the same GRPOConfig (`MurphyConfig.to_grpo_config`) and
the real sandboxed executor for every trainer:

  1. trl            `trl.GRPOTrainer`, reward = the executor's pass fraction on the hidden tests
  2. murphy(grpo)   `MurphyTrainer(mode="grpo")`: the same single-turn GRPO through our tree code
  3. MURPHY, S = 2, with and without prefix sharing, with and without InterP (b_grp)

Each runs `--steps` optimizer steps after one untimed warm-up step; the figures are medians over the timed steps.
For MURPHY the step is split into generation, execution, log-probs (the π_old / π_ref pass), other rollout work
(pruning, credit, batching) and optimization (the loss forward + backward and the optimizer step), with the rows
(trajectories) kept and the completion tokens trained. Cost per trained token compares a MURPHY step with a
single-turn GRPO step of the same run.

    python benchmarks/step_time.py --quick      # <= 3 min on 2 cores
    python benchmarks/step_time.py              # more steps, G1 = G2 = 8

The last line is `step time: trl <s> s, murphy(grpo) <s> s, ratio <x>`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import TrainerCallback


class StepClock(TrainerCallback):
    """Wall seconds of every optimizer step, and the rows / completion tokens each generation round trained on."""

    def __init__(self):
        self.steps, self.t0 = [], 0.0

    def on_step_begin(self, args, state, control, **kw):
        self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.steps.append(time.perf_counter() - self.t0)


def count_rows(trainer, clock: StepClock, real_rows) -> None:
    """Wrap `_generate_and_score_completions` to record each round's trained rows and completion tokens."""
    inner = trainer._generate_and_score_completions
    clock.rounds = []

    def wrapped(inputs):
        out = inner(inputs)
        clock.rounds.append((real_rows(trainer, out), int(out["completion_mask"].sum())))
        return out

    trainer._generate_and_score_completions = wrapped


def timed_logps(trainer, clock: StepClock) -> None:
    """Wrap MurphyTrainer._logps (the π_old / π_ref pass) to time it per round."""
    inner = trainer._logps
    clock.logps = []

    def wrapped(*a, **k):
        t0 = time.perf_counter()
        out = inner(*a, **k)
        clock.logps.append(time.perf_counter() - t0)
        return out

    trainer._logps = wrapped


def reward_fn(tasks, executor):
    by_id = {t.task_id: t for t in tasks}

    def reward(completions, task_id, **kw):  # the same programs and tests MurphyTrainer runs for text answers
        jobs = [(by_id[t].program(c.strip()), by_id[t].hidden_tests) for c, t in zip(completions, task_id)]
        return [r.reward for r in executor.run_many(jobs)]

    return reward


def run(name, cfg, model_path, tasks, executor, workdir, trl_trainer=False) -> dict:
    from trl import GRPOTrainer

    from murphy_lab.trainer import MurphyTrainer, task_dataset

    torch.manual_seed(cfg.seed)
    args = cfg.to_grpo_config(Path(workdir) / name, save_strategy="no", disable_tqdm=True, logging_steps=1000)
    clock = StepClock()
    if trl_trainer:
        trainer = GRPOTrainer(
            model=model_path,
            reward_funcs=reward_fn(tasks, executor),
            args=args,
            train_dataset=task_dataset(tasks),
            callbacks=[clock],
        )
        count_rows(trainer, clock, lambda tr, out: len(out["advantages"]))
    else:
        trainer = MurphyTrainer(
            model=model_path, args=args, murphy=cfg, tasks=tasks, executor=executor, callbacks=[clock]
        )
        count_rows(trainer, clock, lambda tr, out: int(tr.rollout_stats["trajectories/kept"]))
        timed_logps(trainer, clock)
    trainer.train()
    lines = []
    metrics = Path(workdir) / name / "metrics.jsonl"
    if metrics.exists():
        lines = [json.loads(s) for s in metrics.read_text().splitlines()]
    timed = slice(1, None)  # step 1 warms up
    med = statistics.median
    out = {
        "name": name,
        "step_s": med(clock.steps[timed]),
        "rows": med(r for r, _ in clock.rounds[timed]),
        "tokens": med(t for _, t in clock.rounds[timed]),
    }
    if lines:
        split = {
            k: med(d[f"time/{k}_s"] for d in lines[timed])
            for k in ("generation", "execution", "scoring", "optimization")
        }
        split["logps"] = med(clock.logps[timed])
        split["other"] = split.pop("scoring") - split["logps"]
        out.update(split, trajectories=med(d["trajectories/total"] for d in lines[timed]))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="G1 = G2 = 4, 3 timed steps (<= 3 min on 2 cores)")
    ap.add_argument(
        "--steps", type=int, default=None, help="timed steps per trainer (default 3 quick, 6 full)"
    )
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: least disturbed by other load)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from murphy_lab.config import MurphyConfig
    from murphy_lab.executor import Executor
    from murphy_lab.policy.tiny import build_tiny_model
    from murphy_lab.smoke import smoke_tasks

    steps = args.steps or (3 if args.quick else 6)
    g = 4 if args.quick else 8
    tasks = smoke_tasks()
    common = dict(
        g1=g,
        per_device_train_batch_size=g * len(tasks),
        max_completion_length=24 if args.quick else 48,
        max_steps=steps + 1,
        learning_rate=1e-3,
        beta=0.04,
        seed=0,
        save_steps=10_000,
        bf16=False,
    )
    with tempfile.TemporaryDirectory() as workdir, Executor(timeout=5.0, workers=2) as executor:
        hidden = 32 if args.quick else 64
        model = build_tiny_model(Path(workdir) / "model", hidden=hidden, layers=2, heads=4, seed=0)

        def cfg(**kw):
            return MurphyConfig.for_profile("smoke", model=model, **{**common, **kw})

        grpo = dict(mode="grpo", turns=1)
        murphy = dict(mode="murphy", turns=2, g2=g)
        runs = [
            ("trl", cfg(**grpo), True),
            ("murphy(grpo)", cfg(**grpo), False),
            ("MURPHY, shared", cfg(**murphy), False),
            ("MURPHY, row pass", cfg(**murphy, prefix_sharing=False), False),
            ("MURPHY+InterP, shared", cfg(**murphy, b_grp=g // 2), False),
            ("MURPHY+InterP, row pass", cfg(**murphy, b_grp=g // 2, prefix_sharing=False), False),
        ]
        results = {}
        for name, c, is_trl in runs:
            results[name] = r = run(
                name.replace(" ", "_").replace(",", ""),
                c,
                model,
                tasks,
                executor,
                workdir,
                trl_trainer=is_trl,
            )
            ms = 1000 * r["step_s"]
            line = (
                f"{name:24s} step {r['step_s']:6.2f} s  rows {r['rows']:5.0f}  tokens {r['tokens']:6.0f}  "
                f"{ms / r['rows']:6.1f} ms/row  {ms / max(r['tokens'], 1):6.2f} ms/token"
            )
            if "generation" in r:
                line += "  | " + "  ".join(
                    f"{k} {r[k]:.2f}" for k in ("generation", "execution", "logps", "other", "optimization")
                )
            print(line, flush=True)
    print(
        f"machine: load average {open('/proc/loadavg').read().split()[0]}, {args.threads} threads; model hidden "
        f"{hidden}, 2 layers; G1 = G2 = {g}, {len(tasks)} tasks a step, {steps} timed steps (medians)"
    )
    base = results["murphy(grpo)"]
    per_token = {k: v["step_s"] / max(v["tokens"], 1) for k, v in results.items()}
    for k in ("MURPHY, shared", "MURPHY, row pass"):
        print(
            f"{k}: cost per trained token / murphy(grpo)'s = {per_token[k] / per_token['murphy(grpo)']:.2f}x; "
            f"per row {results[k]['step_s'] / results[k]['rows'] / (base['step_s'] / base['rows']):.2f}x"
        )
    sh, rp = results["MURPHY, shared"], results["MURPHY, row pass"]
    print(
        f"optimization time, prefix sharing vs row pass: {sh['optimization']:.2f} s vs {rp['optimization']:.2f} s "
        f"({100 * (sh['optimization'] / rp['optimization'] - 1):+.1f}%); log-probs {sh['logps']:.2f} s vs "
        f"{rp['logps']:.2f} s"
    )
    trl, ours = results["trl"]["step_s"], base["step_s"]
    print(f"step time: trl {trl:.2f} s, murphy(grpo) {ours:.2f} s, ratio {ours / trl:.2f}")


if __name__ == "__main__":
    main()
