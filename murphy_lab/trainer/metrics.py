"""What a run logs: round statistics of MURPHY trees, and `RunLog`, the callback that writes metrics.jsonl.

`metrics.jsonl` holds one line per optimizer step: the round's statistics (rewards, credit, advantages, what
pruning kept, timings), TRL's loss / KL / grad norm, and the step time (docs/training.md lists every key). A resumed
run first drops the lines a killed run logged past its last checkpoint (`murphy_lab.trainer.run`).
"""

from __future__ import annotations

import json
import math
import resource
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import TrainerCallback

from murphy_lab.trainer import memory
from murphy_lab.tree import Node, RolloutTree


def tree_stats(trees: list[RolloutTree], kept: list[Node], padded: int, accelerator: Any) -> dict[str, float]:
    """Round statistics summed over all ranks: rewards, credit, advantages, what pruning kept."""
    allnodes = [n for t in trees for n in t.nodes()]
    turn1 = [n for t in trees for n in t.root.children]
    credits = [n.credit for n in kept if n.credit is not None]
    adv = [n.advantage for n in kept]
    sums = {
        "trees": len(trees),
        "trees_solved": sum(any(n.reward >= 1.0 for n in t.nodes()) for t in trees),
        "turn1": len(turn1),
        "turn1_reward": sum(n.reward for n in turn1),
        "turn1_solved": sum(n.reward >= 1.0 for n in turn1),
        "all": len(allnodes),
        "all_reward": sum(n.reward for n in allnodes),
        "credit_n": len(credits),
        "credit": sum(credits),
        "credit_sq": sum(c * c for c in credits),
        "adv_n": len(adv),
        "adv": sum(adv),
        "adv_sq": sum(a * a for a in adv),
        "adv_abs": sum(map(abs, adv)),
        "adv_zero": sum(abs(a) < 1e-8 for a in adv),
        "groups": sum(len(t.groups()) for t in trees),
        "groups_kept": sum(len(t.groups(kept_only=True)) for t in trees),
        "padded": padded,
        "completion_tokens": sum(len(n.meta["completion_ids"]) for n in allnodes),
    }
    if accelerator.num_processes > 1:
        vec = accelerator.gather(
            torch.tensor([list(sums.values())], dtype=torch.float64, device=accelerator.device)
        ).sum(0)
        sums = dict(zip(sums, vec.tolist()))
    s, div = sums, lambda a, b: a / b if b else 0.0

    def std(total, sq, n):
        return math.sqrt(max(div(sq, n) - div(total, n) ** 2, 0.0))

    return {
        "trees": s["trees"],
        "reward/turn1_mean": div(s["turn1_reward"], s["turn1"]),
        "reward/mean": div(s["all_reward"], s["all"]),
        "solved/turn1_frac": div(s["turn1_solved"], s["turn1"]),
        "solved/tree_frac": div(s["trees_solved"], s["trees"]),
        "credit/mean": div(s["credit"], s["credit_n"]),
        "credit/std": std(s["credit"], s["credit_sq"], s["credit_n"]),
        "advantage/mean": div(s["adv"], s["adv_n"]),
        "advantage/std": std(s["adv"], s["adv_sq"], s["adv_n"]),
        "advantage/abs_mean": div(s["adv_abs"], s["adv_n"]),
        "advantage/zero_frac": div(s["adv_zero"], s["adv_n"]),
        "groups/total": s["groups"],
        "groups/kept": s["groups_kept"],
        "trajectories/total": s["all"],
        "trajectories/kept": s["adv_n"],
        "rows/padding": s["padded"],
        "completions/mean_length": div(s["completion_tokens"], s["all"]),
    }


def cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of the child processes it reaped: on a shared machine the
    wall time says how loaded it was, this what the work cost (`time/step_cpu_s`, `time/eval_cpu_s`)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class RunLog(TrainerCallback):
    """Writes output_dir/metrics.jsonl: one line per optimizer step (round statistics, timings, TRL's loss/KL)."""

    TRL_KEYS = ("loss", "grad_norm", "learning_rate", "kl", "entropy", "clip_ratio/region_mean")

    def __init__(self, trainer: Any):
        self.trainer, self.t0, self.c0, self.line = trainer, 0.0, 0.0, None

    def on_step_begin(self, args, state, control, **kw):
        self.t0, self.c0 = time.perf_counter(), cpu_seconds()

    def on_step_end(self, args, state, control, **kw):
        self._flush(args)
        memory.release()  # what the loss passes freed (trainer/memory.py)
        step_s = time.perf_counter() - self.t0
        stats, self.trainer.rollout_stats = self.trainer.rollout_stats, {}  # empty when the round was reused
        self.line = {
            "step": state.global_step,
            "generated": bool(stats),
            **stats,
            "time/step_s": step_s,
            "time/optimization_s": step_s - stats.get("time/rollout_s", 0.0),
            "time/step_cpu_s": cpu_seconds() - self.c0,
            "memory/peak_rss_gb": memory.peak_rss_gb(),  # the process's peak so far (this step's or earlier)
        }

    def on_log(self, args, state, control, logs=None, **kw):
        if self.line is not None and logs:
            self.line.update({f"trl/{k}": v for k, v in logs.items() if k in self.TRL_KEYS})
        self._flush(args)

    def on_train_end(self, args, state, control, **kw):
        self._flush(args)

    def _flush(self, args) -> None:
        if self.line is None:
            return
        if self.trainer.accelerator.is_main_process:
            with open(Path(args.output_dir) / "metrics.jsonl", "a") as f:
                f.write(json.dumps(self.line) + "\n")
        self.line = None


class StepProgress(TrainerCallback):
    """The library's own progress line, in place of TRL's (its notebook callback draws a table row per step):
    `murphy seed 0: 12/40 [01:10<02:45, reward 0.19, solved 0.44, 150 seqs]` — step, time left, the round's mean
    turn-1 reward, the share of trees solved at any turn, and the sequences it sampled."""

    def __init__(self, trainer: Any, log: RunLog, desc: str):
        self.trainer, self.log, self.desc, self.bar = trainer, log, desc, None

    def on_train_begin(self, args, state, control, **kw):
        if self.trainer.accelerator.is_main_process:
            self.bar = tqdm(
                total=state.max_steps,
                initial=state.global_step,
                desc=self.desc,
                unit="step",
                mininterval=2.0,
                dynamic_ncols=True,
            )

    def on_step_end(self, args, state, control, **kw):
        if self.bar is None:
            return
        line = self.log.line  # RunLog runs first (the trainer adds it) and has just filled this step's line
        if line and line.get("generated"):
            self.bar.set_postfix_str(
                f"reward {line.get('reward/turn1_mean', 0):.2f}, solved "
                f"{line.get('solved/tree_frac', 0):.2f}, {line.get('trajectories/total', 0)} seqs"
            )
        self.bar.update(state.global_step - self.bar.n)

    def on_train_end(self, args, state, control, **kw):
        if self.bar is not None:
            self.bar.close()


__all__ = ["RunLog", "StepProgress", "tree_stats"]
