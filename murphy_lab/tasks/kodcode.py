"""KodCode-V1 (Xu et al., 2025): synthetic Python coding tasks with pytest unit tests (CC BY-NC 4.0: load, never
vendor). MURPHY trains on 1,000 KodCode tasks without saying which; our selection rule is documented and exact:

1. **Eligible** rows: a `question_id`, a question, a reference `solution`, `test_info` naming the function under
   test, a `gpt_difficulty` among easy/medium/hard (or none), and a `test` file pytest collects (in the executor's
   sandbox, `convert.pytest_file_suite`: pytest itself runs it, one case per test id); optionally restricted by
   `style`, `subset` and `gpt_difficulty`.
2. **Order** every row by ``sha256(f"{seed}:{question_id}")`` (a hash shuffle: independent of the file's row order
   and of how the dataset is sharded).
3. **Verified**: the row's reference solution passes every one of its test ids through the executor, as real pytest
   scores it. KodCode's authors kept only rows whose solution passes its tests, so a row whose reference fails here
   is a difference of ours (or of the machine: a reference near the time limit), never the model's: it is left out
   and counted by reason.
4. **Take** the first `n` rows in that order that are eligible and verified.

Each task: prompt = the question, plus the function declaration from `test_info` when the question does not
already show it (so the model knows the name the tests call); hidden tests = the suite pytest runs (one case per test
id); visible tests = the same tests (KodCode is a *training* set: the paper's feedback and reward come from the same
unit tests, there is no held-out test set); reference = the solution; difficulty = gpt_difficulty;
``metadata["pytest"]``: what pytest collected (`convert.PytestCensus`). The counts of every selection, by reason,
are logged and kept (`last_selection`) for the data step's manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from tqdm.auto import tqdm

from murphy_lab.executor import Executor
from murphy_lab.tasks.convert import PytestCensus, pytest_file_suites
from murphy_lab.tasks.sources import read_rows
from murphy_lab.tasks.task import Task

log = logging.getLogger(__name__)

HUB_ID = "KodCode/KodCode-V1"
DIFFICULTIES = ("easy", "medium", "hard")
# the reason a row is left out by verification (+ its status)
REFERENCE_FAILS = "the reference fails its tests"
_LAST: dict = {}


def selection_key(seed: int, question_id: str) -> str:
    """The hash that orders rows for the selection rule: sha256 of ``"<seed>:<question_id>"`` (hex)."""
    return hashlib.sha256(f"{seed}:{question_id}".encode()).hexdigest()


class Ineligible(ValueError):
    """A row that the selection rule skips; `reason` is the short cause counted in the log."""

    def __init__(self, where: str, qid: Any, reason: str) -> None:
        super().__init__(f"{where}: row {qid!r}: {reason}")
        self.reason = reason


def check_row(row: dict, where: str = "KodCode") -> str:
    """The row's difficulty once its fields make it eligible (everything but its test file); `Ineligible`."""
    qid = row.get("question_id")
    if not qid or not row.get("question") or not row.get("solution"):
        raise Ineligible(where, qid, "lacks question_id, question or solution")
    if not [i for i in (row.get("test_info") or []) if i and i.get("function_name")]:
        raise Ineligible(where, qid, "no function name in test_info (not a function-style task)")
    difficulty = (row.get("gpt_difficulty") or "all").lower()
    if difficulty not in (*DIFFICULTIES, "all"):
        raise Ineligible(where, qid, f"unknown gpt_difficulty {row.get('gpt_difficulty')!r}")
    return difficulty


def kodcode_task(row: dict, where: str = "KodCode", collected=None) -> Task:
    """One KodCode row as a `Task` (not verified: `load_kodcode` does that); raises `Ineligible` (a ValueError
    naming the row). `collected`: its test file's (suite, census) or `ValueError`, when collected already."""
    difficulty = check_row(row, where)
    qid = row["question_id"]
    if collected is None:
        collected = pytest_file_suites([row.get("test") or ""])[0]
    if isinstance(collected, ValueError):
        raise Ineligible(where, qid, str(collected))
    tests, census = collected
    info = [i for i in row["test_info"] if i and i.get("function_name")]
    question = row["question"].strip()
    declarations = [i.get("function_declaration") or "" for i in info]
    missing = [d.strip() for d in declarations if d.strip() and d.strip() not in question]
    if missing:  # tell the model the name the tests call
        question += "\n\nUse this function signature:\n" + "\n".join(missing)
    return Task(
        task_id=f"kodcode/{qid}",
        prompt=question,
        visible_tests=tests,
        hidden_tests=tests,
        entry_point=info[0]["function_name"],
        reference=row["solution"],
        difficulty=difficulty,
        source="kodcode",
        metadata={
            "question_id": qid,
            "statement": row["question"].strip(),  # without the added signature (train/eval overlap checks)
            "style": row.get("style", ""),
            "subset": row.get("subset", ""),
            "gpt_pass_trial_num": row.get("gpt_pass_trial_num"),
            "gpt_pass_percentage": row.get("gpt_pass_percentage"),
            "pytest": dataclasses.asdict(census),  # what pytest collected (convert.PytestCensus)
        },
    )


def _column(rows: Sequence[dict], name: str) -> list:
    try:
        return list(rows[name])  # a datasets.Dataset: one column without decoding the rows
    except (TypeError, KeyError, IndexError):
        return [row.get(name) for row in rows]


def _reason(err: Ineligible) -> str:
    return (
        err.reason.split(" (")[0]
        if not err.reason.startswith("pytest cannot")
        else "pytest cannot collect the file"
    )


def verify(tasks: list[Task], executor: Executor) -> list[str]:
    """'' for each task whose reference passes every test id, else why not (`REFERENCE_FAILS` and the status)."""
    results = executor.run_many([t.job(t.reference, "hidden") for t in tasks])
    return ["" if r.solved else f"{REFERENCE_FAILS} ({r.status})" for r in results]


def load_kodcode(
    n: int = 1000,
    seed: int = 0,
    source: Any = HUB_ID,
    split: str = "train",
    style: str | Sequence[str] | None = None,
    subset: str | Sequence[str] | None = None,
    difficulty: str | Sequence[str] | None = None,
    executor: Executor | None = None,
) -> list[Task]:
    """The first `n` eligible, verified KodCode tasks in seeded hash order (the selection rule in the module
    docstring); the counts by reason go to the log and `last_selection()`.

    Args:
        n: how many tasks (the paper trains on 1,000).
        seed: the hash seed; the same (source, n, seed, filters) always gives the same tasks in the same order.
        source: hub id (default), local Hugging Face-layout folder or data file, `datasets.Dataset`, or rows.
        split: the dataset split (KodCode-V1 ships only "train").
        style, subset, difficulty: keep only rows whose `style` / `subset` / `gpt_difficulty` is (one of) these.
        executor: the one that collects the test files and runs the references (default: one of 2 workers, made
            for this call).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, not {n}")

    def chosen(value: str | Sequence[str] | None) -> set[str] | None:
        return None if value is None else {value} if isinstance(value, str) else set(value)

    styles, subsets, levels = chosen(style), chosen(subset), chosen(difficulty)
    if levels and not levels <= set(DIFFICULTIES):
        raise ValueError(f"difficulty must be among {DIFFICULTIES}, got {sorted(levels)}")
    rows = read_rows(source, split=split)
    ids = _column(rows, "question_id")
    for i, qid in enumerate(ids):
        if not qid:
            raise ValueError(f"{source!r} row {i} has no question_id (needed by the selection rule)")
    candidates = range(len(ids))
    rejected: Counter[str] = Counter()
    for name, wanted in (("style", styles), ("subset", subsets)):
        if wanted:  # filter on the column first: no row is decoded for it
            column = _column(rows, name)
            kept = [i for i in candidates if column[i] in wanted]
            rejected[f"{name} filter"] += len(candidates) - len(kept)
            candidates = kept
    order = sorted(candidates, key=lambda i: selection_key(seed, str(ids[i])))
    where = source if isinstance(source, str) else "rows"
    tasks: list[Task] = []
    considered = 0
    with (
        nullcontext(executor) if executor else Executor(workers=2) as ex,
        tqdm(total=n, desc="KodCode selection", disable=n < 2000) as bar,
    ):
        while order and len(tasks) < n:  # in chunks, in order: the same n tasks whatever the chunk size
            chunk, order = order[: max(16, 2 * (n - len(tasks)))], order[max(16, 2 * (n - len(tasks))) :]
            fields = []
            for i in chunk:
                try:
                    level = check_row(rows[i], where=f"{where} row {i}")
                except Ineligible as err:
                    fields.append(err)
                    continue
                fields.append(
                    Ineligible("", None, "difficulty filter") if levels and level not in levels else None
                )
            todo = [i for i, f in zip(chunk, fields) if f is None]
            suites = dict(zip(todo, pytest_file_suites([rows[i].get("test") or "" for i in todo], ex)))
            made: list[tuple[int, Task | Ineligible]] = []
            for i, f in zip(chunk, fields):
                if f is None:
                    try:
                        f = kodcode_task(rows[i], where=f"{where} row {i}", collected=suites[i])
                    except Ineligible as err:
                        f = err
                made.append((i, f))
            fresh = [t for _, t in made if isinstance(t, Task)]
            verdicts = dict(zip(map(id, fresh), verify(fresh, ex)))
            for _, t in made:
                considered += 1
                if isinstance(t, Ineligible):
                    rejected[_reason(t)] += 1
                elif verdicts[id(t)]:
                    rejected[verdicts[id(t)]] += 1
                else:
                    t.metadata["selection_rank"] = len(tasks)
                    tasks.append(t)
                    bar.update()
                    if len(tasks) == n:
                        break
    _LAST.clear()
    _LAST.update(
        rows=len(ids), considered=considered, selected=len(tasks), skipped=dict(rejected.most_common())
    )
    if rejected:
        log.info(
            "KodCode: skipped %d rows on the way: %s", sum(rejected.values()), dict(rejected.most_common(8))
        )
    failing = {k: v for k, v in rejected.items() if k.startswith(REFERENCE_FAILS)}
    if failing:  # KodCode's own rows pass their tests: a failing reference is a difference of ours, said so
        log.warning(
            "KodCode: %d rows left out because their reference fails its tests under our executor (%s)",
            sum(failing.values()),
            failing,
        )
    if not tasks:
        raise ValueError(
            f"KodCode source {source!r}: no eligible task among {len(ids)} rows (skipped: {dict(rejected)})"
        )
    if len(tasks) < n:
        log.warning("KodCode source %r: only %d eligible tasks, fewer than n=%d", source, len(tasks), n)
    return tasks


def last_selection() -> dict:
    """The counts of the last `load_kodcode` of this process: rows read, rows considered in hash order, tasks
    selected, and the rows skipped on the way by reason (`REFERENCE_FAILS` with the failing status among them)."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in _LAST.items()}


def pytest_share(source: Any, split: str = "train", executor: Executor | None = None) -> dict[str, Any]:
    """Every row of `source`: how many pytest collects (and how many of those use parametrize, classes, unittest,
    fixtures, skip/xfail marks), how many are refused and why, how many references pass their tests — the
    measurement behind docs/benchmarks.md's KodCode paragraph. Counts every row, not only a selection."""
    rows = read_rows(source, split=split)
    refused: Counter[str] = Counter()
    uses: Counter[str] = Counter()
    with nullcontext(executor) if executor else Executor(workers=2) as ex:
        collected = pytest_file_suites([rows[i].get("test") or "" for i in range(len(rows))], ex)
        tasks = []
        for i in range(len(rows)):
            try:
                tasks.append(kodcode_task(rows[i], collected=collected[i]))
            except Ineligible as err:
                refused[err.reason] += 1
        for t in tasks:
            census = PytestCensus(**t.metadata["pytest"])
            uses.update(k for k, v in dataclasses.asdict(census).items() if k != "tests" and v)
        failing = Counter(v for v in verify(tasks, ex) if v)
    return {
        "rows": len(rows),
        "collected": len(tasks),
        "refused": sum(refused.values()),
        "refused_by_reason": dict(refused.most_common()),
        "uses": dict(sorted(uses.items())),
        "reference_passes": len(tasks) - sum(failing.values()),
        "reference_fails": dict(failing),
    }
