"""The µCode run: rounds of rollouts -> verifier -> relabel -> SFT, then evaluation; every stage cached on disk.

Layout under `output_dir` (a stage is finished when its `done.json` exists; a rerun with `resume=True` skips it
and reads its outputs back):

    config.json                       the resolved MuCodeConfig
    round1/rollouts/trees.jsonl       chains of π_0 (tree.load_trees opens them), hidden-test labels in meta
    round1/verifier/pairs.jsonl       this round's (x, y+, y-) pairs;  model/  R_φ trained on pairs of rounds ≤ 1
    round1/relabel/trees.jsonl        the same trees with R_φ scores;  sft.jsonl  this round's (state, y*) rows
    round1/sft/model/                 π_1 = SFT on the rows of rounds ≤ 1 (from the base, as mucode.sh)
    ...                               round r uses π_{r-1} and aggregates data D = D_1 ∪ ... ∪ D_r
    round{R+1}/rollouts, verifier/    with `final_verifier`: R_φ for best-of-N trained on π_R's rollouts
    eval/table.csv                    Iter-k pass@1: plain (Reflexion scaffold) and verifier best-of-N rows
    metrics.jsonl                     one line per finished stage: stats and seconds
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from murphy_lab import prompts as P
from murphy_lab.baselines.mucode.config import MuCodeConfig
from murphy_lab.baselines.mucode.inference import VerifierBestOfN
from murphy_lab.baselines.mucode.relabel import relabel
from murphy_lab.baselines.mucode.rollouts import collect_rollouts, rollout_stats
from murphy_lab.baselines.mucode.sft import sft_generator
from murphy_lab.baselines.mucode.verifier import Verifier, preference_pairs, train_verifier
from murphy_lab.evaluate import evaluate
from murphy_lab.executor import Executor
from murphy_lab.models import load_policy
from murphy_lab.profiles import benchmark_tasks, get_profile, resolve
from murphy_lab.scaffolds.reflexion import Reflexion
from murphy_lab.tasks import load_tasks
from murphy_lab.tree import load_trees, save_trees

DONE = "done.json"


# --- the stage cache ---------------------------------------------------------------------------------------------
def stage(root: Path, name: str, fn: Callable[[Path], dict | None], log: Path | None = None) -> dict:
    """Run `fn(stage_dir)` unless `root/name/done.json` exists; return the stats it wrote (or wrote before).

    The marker is written last, so a stage killed half-way runs again from scratch on resume. A stage that ran
    appends its stats as one JSON line to `log` (metrics.jsonl) when given.
    """
    d = Path(root) / name
    marker = d / DONE
    if marker.exists():
        info = json.loads(marker.read_text())
        info["skipped"] = True
        return info
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    info = dict(fn(d) or {})
    info["seconds"] = round(time.time() - t0, 3)
    marker.write_text(json.dumps(info, default=str) + "\n")
    if log is not None:
        with open(log, "a") as f:
            f.write(json.dumps({"stage": f"{Path(root).name}/{name}", **info}, default=str) + "\n")
    return info


def finished_stages(output_dir: str | Path) -> list[str]:
    """Stages of a run directory that have a done marker (relative paths)."""
    out = Path(output_dir)
    return sorted(str(p.parent.relative_to(out)) for p in out.glob(f"**/{DONE}")) if out.exists() else []


# --- what a profile means ----------------------------------------------------------------------------------------
def run_inputs(cfg: MuCodeConfig, workdir: str | Path) -> tuple[str, list, list]:
    """(generator base checkpoint, training tasks, evaluation tasks) of a config: the model and tasks it names, else
    what its profile builds (`profiles.resolve`: local models under workdir, the profile's training set), and its
    `eval_tasks`, else the profile's first benchmark (`profiles.benchmark_tasks`; none when `evaluate` is off)."""
    model, train = resolve(cfg, workdir)
    if cfg.eval_tasks:
        test = load_tasks(cfg.eval_tasks, **cfg.eval_task_args)
    elif cfg.evaluate:
        prof = get_profile(cfg.profile)  # a config records its profile by name
        test = benchmark_tasks(prof, prof.benchmarks[0], prof.n_eval_tasks)
    else:
        test = []  # training only (evaluate: False, e.g. murphy_lab.experiments): no evaluation tasks needed
    if cfg.n_eval_tasks:
        test = test[: cfg.n_eval_tasks]
    return model, list(train), list(test)


def generator_policy(path: str, cfg: MuCodeConfig, temperature: float) -> Any:
    """The generator for rollouts and evaluation, on the config's backend (vLLM or transformers), in its prompt format."""
    return load_policy(
        path,
        cfg.use_vllm,
        max_new_tokens=cfg.max_new_tokens,
        temperature=temperature,
        top_p=cfg.top_p,
        use_chat_template=bool(cfg.chat),
        chat_template_kwargs=cfg.chat_template_kwargs or None,
    )


def release(policy: Any) -> None:
    """Free a generation backend before training in the same process (vLLM holds most of the GPU otherwise).

    Best effort: drops the model / engine and empties the CUDA cache. Not exercised on a GPU in our tests.
    """
    for attr in ("llm", "model"):
        if hasattr(policy, attr):
            setattr(policy, attr, None)
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def make_executor(cfg: MuCodeConfig) -> Any:
    return Executor(**cfg.executor)


# --- the run -----------------------------------------------------------------------------------------------------
def run_mucode(
    config: MuCodeConfig | dict,
    output_dir: str | Path,
    resume: bool = False,
    *,
    model: str | None = None,
    tasks: list | None = None,
    eval_tasks: list | None = None,
    executor: Any = None,
    progress: bool = True,
) -> Path:
    """Run µCode end to end (see the module docstring); return the final generator's checkpoint directory.

    `config` is a MuCodeConfig or a dict (a YAML file's content, `method: mucode` allowed). `model`, `tasks`,
    `eval_tasks` and `executor` override what the profile would build (tests and notebooks inject them).
    With `resume=False` an output_dir that already holds finished stages is refused (pass resume=True).
    """
    cfg = config if isinstance(config, MuCodeConfig) else MuCodeConfig.from_dict(config)
    out = Path(output_dir)
    done = finished_stages(out)
    if done and not resume:
        raise FileExistsError(
            f"output_dir {out} already holds finished stages {done[:3]}...; pass resume=True"
        )
    out.mkdir(parents=True, exist_ok=True)
    cfg.save(out / "config.json")
    if model is not None and tasks is not None:
        base, train_tasks, test_tasks = (
            model,
            list(tasks),
            list(eval_tasks if eval_tasks is not None else tasks),
        )
    else:
        base, train_tasks, test_tasks = run_inputs(cfg, out)
        base, train_tasks = model or base, list(tasks) if tasks is not None else train_tasks
        test_tasks = list(eval_tasks) if eval_tasks is not None else test_tasks
    if cfg.n_train_tasks:  # µCode's data budget: the first n tasks of the training set
        train_tasks = train_tasks[: cfg.n_train_tasks]
    own = executor is None  # an executor we start, we also close
    executor = make_executor(cfg) if own else executor
    try:
        return _run(cfg, out, base, train_tasks, test_tasks, executor, progress)
    finally:
        if own and hasattr(executor, "close"):
            executor.close()


def _run(
    cfg: MuCodeConfig,
    out: Path,
    base: str,
    train_tasks: list,
    test_tasks: list,
    executor: Any,
    progress: bool,
) -> Path:
    """The rounds and the evaluation (run_mucode has resolved everything)."""
    verifier_base = cfg.verifier_model or base
    log = out / "metrics.jsonl"
    generator = base  # π_0
    for r in range(1, cfg.rounds + 1):
        rd = out / f"round{r}"
        _rollouts_and_verifier(
            cfg, out, rd, r, generator, verifier_base, train_tasks, executor, log, progress
        )

        def relabel_stage(d: Path, rd: Path = rd) -> dict:
            trees = load_trees(str(rd / "rollouts" / "trees.jsonl"))
            Verifier(rd / "verifier" / "model").score_trees(trees)  # R_φ(x, y) on every candidate
            save_trees(trees, str(d / "trees.jsonl"))
            rows = relabel(trees, cfg.relabel_with, cfg.num_to_relabel, cfg.keep_positive)
            _write_jsonl(d / "sft.jsonl", rows)
            return {
                "rows": len(rows),
                **{k: sum(x["kind"] == k for x in rows) for k in ("relabeled", "positive")},
            }

        stage(rd, "relabel", relabel_stage, log)

        def sft_stage(d: Path, r: int = r) -> dict:
            rows = [
                x for i in range(1, r + 1) for x in _read_jsonl(out / f"round{i}" / "relabel" / "sft.jsonl")
            ]
            start = base if cfg.sft_from == "base" or r == 1 else str(out / f"round{r - 1}" / "sft" / "model")
            return sft_generator(rows, start, d, **cfg.stage_knobs("sft"))

        stage(rd, "sft", sft_stage, log)
        generator = str(rd / "sft" / "model")  # π_r
    verifier_round = cfg.rounds
    if cfg.final_verifier:
        verifier_round = cfg.rounds + 1
        rd = out / f"round{verifier_round}"
        _rollouts_and_verifier(
            cfg, out, rd, verifier_round, generator, verifier_base, train_tasks, executor, log, progress
        )

    def eval_stage(d: Path) -> dict:
        table = evaluate_mucode(
            generator,
            out / f"round{verifier_round}" / "verifier" / "model",
            test_tasks,
            executor,
            cfg,
            transcripts_dir=d,
            progress=progress,
        )
        table.to_csv(d / "table.csv", index=False)
        return {"rows": len(table)}

    if cfg.evaluate:
        stage(out, "eval", eval_stage, log)
    return Path(generator)


def _rollouts_and_verifier(cfg, out, rd, r, generator, verifier_base, tasks, executor, log, progress) -> None:
    """Stages 1-2 of round r: chains of the current generator, then R_φ on all pairs collected so far."""

    def rollout_stage(d: Path) -> dict:
        policy = generator_policy(generator, cfg, cfg.temperature)
        trees = collect_rollouts(
            tasks,
            policy,
            executor,
            rollouts=cfg.rollouts,
            turns=cfg.turns,
            seed=cfg.seed + r,
            progress=progress,
        )
        # the budget in the trainer's own keys (murphy_lab.trainer.metrics), from what the policy counted as it sampled
        sampled, tokens = policy.usage["completions"], policy.usage["completion_tokens"]
        release(policy)
        save_trees(trees, str(d / "trees.jsonl"))
        return {
            **rollout_stats(trees),
            "trajectories/total": sampled,
            "completions/mean_length": tokens / max(sampled, 1),
        }

    stage(rd, "rollouts", rollout_stage, log)

    def verifier_stage(d: Path) -> dict:
        trees = load_trees(str(rd / "rollouts" / "trees.jsonl"))
        _write_jsonl(d / "pairs.jsonl", preference_pairs(trees, cfg.pairs_per_task, seed=cfg.seed + r))
        pairs = [
            p for i in range(1, r + 1) for p in _read_jsonl(out / f"round{i}" / "verifier" / "pairs.jsonl")
        ]
        return train_verifier(pairs, verifier_base, d, loss=cfg.verifier_loss, **cfg.stage_knobs("verifier"))

    stage(rd, "verifier", verifier_stage, log)


def evaluate_mucode(
    generator: str,
    verifier: str | Path | Any,
    tasks: list,
    executor: Any,
    cfg: MuCodeConfig,
    transcripts_dir: str | Path | None = None,
    progress: bool = True,
):
    """Iter-k pass@1 of the µCode generator: plain (Reflexion scaffold) and verifier best-of-N, in one table."""
    extract = P.answer_extractor(tasks)
    policy = generator_policy(generator, cfg, cfg.eval_temperature)
    v = verifier if hasattr(verifier, "score") else Verifier(verifier)
    frames = []
    for name, sc in (
        ("iter-k", Reflexion(extract=extract)),
        ("verifier-bon", VerifierBestOfN(v, n=cfg.best_of_n, selection=cfg.selection, extract=extract)),
    ):
        path = None if transcripts_dir is None else str(Path(transcripts_dir) / f"transcripts_{name}.jsonl")
        df = evaluate(
            policy,
            tasks,
            executor,
            iters=cfg.iters,
            runs=cfg.runs,
            scaffold=sc,
            seed=cfg.seed,
            transcripts_path=path,
            progress=progress,
        )
        df.insert(0, "inference", name)
        df.insert(0, "method", "mucode")
        frames.append(df)
    release(policy)
    return pd.concat(frames, ignore_index=True)


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _read_jsonl(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
