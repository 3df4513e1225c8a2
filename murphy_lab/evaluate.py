"""Multi-turn Iter-k pass@1: the paper's evaluation table (docs/evaluation.md), for any refinement scaffold.

For every task and run, a scaffold (default: the Reflexion-style loop) makes up to K = max(iters) attempts, using
only the task's *visible* tests for feedback and stopping at the first attempt that passes all of them. The program
held after k attempts (`Episode.held_after(k)`; Reflexion: the latest attempt, or the visible pass that ended the
loop) is then run on the *hidden* tests:

    solved(task, run, k) = [ the held program passes every hidden test ]
    Iter-k pass@1 (%)    = 100 · mean over runs r of ( mean over tasks of solved(task, r, k) )
    std                  = standard deviation over the runs of the per-run percentages (ddof = 0)

Iter-1 is plain single-attempt pass@1 of the first sample. The table has one row per (difficulty, k): "all" for the
whole set, then one per difficulty present (LiveCodeBench's easy/medium/hard). `calls` and `tokens` are the mean
model calls and generated tokens per episode spent up to k attempts (budgets for cross-scaffold comparisons).
Transcripts (one JSON line per episode, with the hidden verdicts) re-derive the table without a model:
`table_from_transcripts(path)`.

Progress: one bar counts tasks, shown once the evaluation has lasted `PROGRESS_DELAY_S` (a short one shows none).
With `task_batch`, the scaffold runs on that many tasks at a time, so the bar (and its ETA) advances batch by batch;
without it every task is in one run (the fewest generation calls) and only the scaffold's own bar over attempt
rounds moves. Batches sample differently (each is its own generation call, batch b
seeded `seed + BATCH_SEED_STEP * b`), so a table is reproducible for a given `task_batch`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from murphy_lab.prompts import parses
from murphy_lab.scaffolds import Scaffold, get_scaffold
from murphy_lab.scaffolds.base import PROGRESS_DELAY_S, Episode, execute

COLUMNS = ["difficulty", "k", "pass@1", "std", "n_tasks", "calls", "tokens"]
# batch b of `task_batch` samples with seed + BATCH_SEED_STEP * b (batch 0: the seed itself)
BATCH_SEED_STEP = 7_919


def evaluate(
    policy: Any,
    tasks: Sequence[Any],
    executor: Any,
    iters: Sequence[int] = (1, 3, 5),
    runs: int = 3,
    scaffold: str | Scaffold = "reflexion",
    seed: int | None = 0,
    transcripts_path: str | None = None,
    progress: bool = True,
    scaffold_kw: dict | None = None,
    task_batch: int | None = None,
    **sample_kw: Any,
) -> pd.DataFrame:
    """The Iter-k pass@1 table of `policy` on `tasks` under `scaffold` (see the module docstring).

    Args:
        policy: a `Policy` (murphy_lab.policy).
        tasks: `Task` objects with visible tests (feedback) and hidden tests (the verdict).
        executor: an object with `.run_many([(program, tests), ...])` (murphy_lab.executor.Executor).
        iters: the k values of the table (paper: 1, 3, 5); the scaffold runs max(iters) attempts.
        runs: independent runs per task (the paper reports mean ± std over runs).
        scaffold: "reflexion" (default, the paper's), "lats", "dot", or a `Scaffold` instance.
        seed: base seed of every sampling call (None: unseeded).
        transcripts_path: write one JSON line per episode there (re-derive with `table_from_transcripts`).
        progress: a tqdm bar over tasks (and the scaffold's over attempt rounds).
        scaffold_kw: options for the scaffold's constructor when it is given by name.
        task_batch: run the scaffold on this many tasks at a time, so the progress bar advances per batch (None:
            all tasks in one run, the fewest generation calls); see the module docstring for its seeds.
        **sample_kw: passed to every `policy.sample` call (max_new_tokens, temperature, top_p).

    Returns:
        DataFrame with columns difficulty, k, pass@1 (%), std, n_tasks, calls, tokens; `df.attrs` holds the
        scaffold name, runs, the episodes' records and `completions` (`completion_counts`: what the model wrote).
    """
    iters = _check_iters(iters)
    tasks = list(tasks)
    if not tasks:
        raise ValueError("tasks is empty")
    for i, t in enumerate(tasks):
        if not len(getattr(t, "hidden_tests", ())):
            raise ValueError(
                f"tasks[{i}] ({getattr(t, 'task_id', '?')!r}) has no hidden tests to score it on"
            )
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("task_id values must be unique: the table groups episodes by task_id")
    if task_batch is not None and (
        isinstance(task_batch, bool) or not isinstance(task_batch, int) or task_batch < 1
    ):
        raise ValueError(f"task_batch must be None or an integer >= 1, got {task_batch!r}")
    sc = get_scaffold(scaffold, **(scaffold_kw or {}))
    size = task_batch or len(tasks)
    episodes: list[Episode] = []
    with tqdm(
        total=len(tasks),
        unit="task",
        desc=f"{sc.name} Iter-{max(iters)}",
        disable=not progress,
        delay=PROGRESS_DELAY_S,
    ) as bar:
        for b, start in enumerate(range(0, len(tasks), size)):
            batch = tasks[start : start + size]
            batch_seed = None if seed is None else seed + BATCH_SEED_STEP * b
            episodes += sc.run(
                batch,
                policy,
                executor,
                budget=max(iters),
                runs=runs,
                seed=batch_seed,
                progress=progress,
                **sample_kw,
            )
            bar.update(len(batch))
    records = score_hidden(episodes, {t.task_id: t for t in tasks}, executor, iters)
    if transcripts_path is not None:
        save_transcripts(records, transcripts_path)
    df = table(records, iters)
    limit = sample_kw.get("max_new_tokens") or getattr(policy, "max_new_tokens", None)
    df.attrs.update(
        scaffold=sc.name,
        runs=runs,
        iters=list(iters),
        records=records,
        task_batch=task_batch,
        completions=completion_counts(records, limit),
    )
    return df


def completion_counts(records: Sequence[dict], max_new_tokens: int | None = None) -> dict:
    """What the model wrote, over every attempt of every episode record (a real model's outputs are messy):

    completions     attempts made (one completion each)
    extractable     attempts whose extracted program is non-empty Python that parses
    truncated       attempts that generated `max_new_tokens` tokens, i.e. were cut by the length limit
                    (omitted when the limit is unknown; one that ends in EOS exactly at the limit counts too)
    visible_status  {executor status: attempts} on the visible tests (passed, failed, error, syntax, ...)
    hidden_status   {executor status: programs} of the held programs run on the hidden tests
    """
    attempts = [a for r in records for a in r["attempts"]]
    out: dict[str, Any] = {
        "completions": len(attempts),
        "extractable": sum(bool(a["code"].strip()) and parses(a["code"]) for a in attempts),
    }
    if max_new_tokens:
        out["truncated"] = sum(a["tokens"] >= max_new_tokens for a in attempts)
    out["visible_status"] = dict(Counter(a["status"] for a in attempts))
    out["hidden_status"] = dict(Counter(v["status"] for r in records for v in r["hidden"].values()))
    return out


def score_hidden(
    episodes: list[Episode], tasks: dict[str, Any], executor: Any, iters: Sequence[int]
) -> list[dict]:
    """Run each program held at some k in `iters` on its task's hidden tests (ONE executor batch); return records.

    A record is `episode.to_dict()` plus `iters`, `hidden` ({attempt index: verdict}) and `solved` ({k: bool}).
    """
    # k -> attempt index
    held_at = [{k: ep.held_after(k) for k in iters} if ep.held else {} for ep in episodes]
    wanted = sorted({(e, a) for e, held in enumerate(held_at) for a in held.values()})
    jobs = [tasks[episodes[e].task_id].job(episodes[e].attempts[a].code, "hidden") for e, a in wanted]
    verdict = dict(zip(wanted, execute(executor, jobs)))  # (episode, attempt) -> hidden-test result
    records = []
    for e, (ep, held) in enumerate(zip(episodes, held_at)):
        rec = ep.to_dict()
        rec["iters"] = list(iters)
        rec["hidden"] = {
            str(a): {"reward": float(r.reward), "status": getattr(r, "status", ""), "solved": _solved(r)}
            for a in sorted(set(held.values()))
            for r in [verdict[(e, a)]]
        }
        rec["solved"] = {str(k): bool(held) and rec["hidden"][str(held[k])]["solved"] for k in iters}
        records.append(rec)
    return records


def table(records: Sequence[dict], iters: Sequence[int] | None = None) -> pd.DataFrame:
    """The Iter-k table from episode records (see the module docstring for the definitions)."""
    if not records:
        raise ValueError("records is empty")
    iters = _check_iters(iters if iters is not None else records[0]["iters"])
    difficulties = list(dict.fromkeys(r.get("difficulty", "all") for r in records))
    groups = ["all"] + [d for d in difficulties if d != "all"]
    rows = []
    for d in groups:
        sub = [r for r in records if d == "all" or r.get("difficulty", "all") == d]
        runs = sorted({r["run"] for r in sub})
        for k in iters:
            per_run = [
                # pass@1 of run `run`, in %
                100.0 * np.mean([_solved_at(r, k) for r in sub if r["run"] == run])
                for run in runs
            ]
            costs = np.array([_cost_at(r, k) for r in sub], dtype=float)  # (episodes, 2): calls, tokens
            rows.append(
                {
                    "difficulty": d,
                    "k": k,
                    "pass@1": float(np.mean(per_run)),
                    "std": float(np.std(per_run)),
                    "n_tasks": len({r["task_id"] for r in sub}),
                    "calls": float(costs[:, 0].mean()),
                    "tokens": float(costs[:, 1].mean()),
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def save_transcripts(records: Sequence[dict], path: str) -> None:
    """One JSON line per episode."""
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r, default=str) + "\n")


def load_transcripts(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def table_from_transcripts(path: str, iters: Sequence[int] | None = None) -> pd.DataFrame:
    """Re-derive the Iter-k table from a transcripts file (no model, no executor); `iters` ⊆ the saved ones."""
    records = load_transcripts(path)
    if iters is not None:
        missing = set(_check_iters(iters)) - set(records[0]["iters"]) if records else set()
        if missing:
            raise ValueError(
                f"iters {sorted(missing)} were not scored in {path} (saved: {records[0]['iters']})"
            )
    return table(records, iters)


def _solved(result: Any) -> bool:
    total = getattr(result, "total", None)
    return float(result.reward) >= 1.0 and (total is None or total > 0)


def _solved_at(rec: dict, k: int) -> bool:
    return bool(rec["solved"][str(k)])


def _cost_at(rec: dict, k: int) -> tuple[int, int]:
    return Episode.from_dict(rec).cost_after(k)


def _check_iters(iters: Any) -> list[int]:
    if isinstance(iters, int):
        iters = [iters]
    iters = list(iters)
    if not iters or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in iters):
        raise ValueError(f"iters must be a non-empty list of integers >= 1, got {iters!r}")
    return sorted(set(iters))
