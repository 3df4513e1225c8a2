"""KodCode-V1 (Xu et al., 2025): synthetic Python coding tasks with pytest unit tests (CC BY-NC 4.0: load, never
vendor). MURPHY trains on 1,000 KodCode tasks without saying which; our selection rule is documented and exact:

1. **Eligible** rows: a `question_id`, a question, a reference `solution`, `test_info` naming the function under
   test, and a `test` file whose every test runs as pytest runs it (`convert.pytest_cases`, `pytest_file`:
   parametrize, the file's fixtures and test classes are spelled out as plain cases; a file that needs pytest's
   built-in fixtures such as ``capsys``, ``xfail`` or ``import solution`` is refused whole, and counted in the log,
   never run with some of its tests dropped); optionally restricted by `style`, `subset` and `gpt_difficulty`.
2. **Order** every row by ``sha256(f"{seed}:{question_id}")`` (a hash shuffle: independent of the file's row order
   and of how the dataset is sharded).
3. **Take** the first `n` eligible rows in that order.

Each task: prompt = the question, plus the function declaration from `test_info` when the question does not
already show it (so the model knows the name the tests call); hidden tests = one case per pytest function;
visible tests = the same tests (KodCode is a *training* set: the paper's feedback and reward come from the same
unit tests, there is no held-out test set); reference = the solution; difficulty = gpt_difficulty;
``metadata["pytest"]``: what its tests needed (`pytest_file.PytestCensus`: plain, parametrized, fixtures, classes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from murphy_lab.tasks.convert import pytest_file_suite
from murphy_lab.tasks.sources import read_rows
from murphy_lab.tasks.task import Task

log = logging.getLogger(__name__)

HUB_ID = "KodCode/KodCode-V1"
DIFFICULTIES = ("easy", "medium", "hard")


def selection_key(seed: int, question_id: str) -> str:
    """The hash that orders rows for the selection rule: sha256 of ``"<seed>:<question_id>"`` (hex)."""
    return hashlib.sha256(f"{seed}:{question_id}".encode()).hexdigest()


class Ineligible(ValueError):
    """A row that the selection rule skips; `reason` is the short cause counted in the log."""

    def __init__(self, where: str, qid: Any, reason: str) -> None:
        super().__init__(f"{where}: row {qid!r}: {reason}")
        self.reason = reason


def kodcode_task(row: dict, where: str = "KodCode") -> Task:
    """One KodCode row as a `Task`; raises `Ineligible` (a ValueError naming the row) when it is not eligible."""
    qid = row.get("question_id")
    if not qid or not row.get("question") or not row.get("solution"):
        raise Ineligible(where, qid, "lacks question_id, question or solution")
    info = [i for i in (row.get("test_info") or []) if i and i.get("function_name")]
    if not info:
        raise Ineligible(where, qid, "no function name in test_info (not a function-style task)")
    difficulty = (row.get("gpt_difficulty") or "all").lower()
    if difficulty not in (*DIFFICULTIES, "all"):
        raise Ineligible(where, qid, f"unknown gpt_difficulty {row.get('gpt_difficulty')!r}")
    try:
        tests, census = pytest_file_suite(row.get("test") or "")
    except ValueError as err:
        raise Ineligible(where, qid, str(err)) from err
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
            "pytest": dataclasses.asdict(census),  # what its tests needed (pytest_file.PytestCensus)
        },
    )


def _column(rows: Sequence[dict], name: str) -> list:
    try:
        return list(rows[name])  # a datasets.Dataset: one column without decoding the rows
    except (TypeError, KeyError, IndexError):
        return [row.get(name) for row in rows]


def load_kodcode(
    n: int = 1000,
    seed: int = 0,
    source: Any = HUB_ID,
    split: str = "train",
    style: str | Sequence[str] | None = None,
    subset: str | Sequence[str] | None = None,
    difficulty: str | Sequence[str] | None = None,
) -> list[Task]:
    """The first `n` eligible KodCode tasks in seeded hash order (the selection rule in the module docstring).

    Args:
        n: how many tasks (the paper trains on 1,000).
        seed: the hash seed; the same (source, n, seed, filters) always gives the same tasks in the same order.
        source: hub id (default), local Hugging Face-layout folder or data file, `datasets.Dataset`, or rows.
        split: the dataset split (KodCode-V1 ships only "train").
        style, subset, difficulty: keep only rows whose `style` / `subset` / `gpt_difficulty` is (one of) these.
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
    tasks: list[Task] = []
    with tqdm(total=n, desc="KodCode selection", disable=n < 2000) as bar:
        for i in order:
            row = rows[i]
            try:
                task = kodcode_task(row, where=f"{source if isinstance(source, str) else 'rows'} row {i}")
            except Ineligible as err:
                rejected[err.reason.split(" (")[0]] += 1
                continue
            if levels and task.difficulty not in levels:
                rejected["difficulty filter"] += 1
                continue
            task.metadata["selection_rank"] = len(tasks)
            tasks.append(task)
            bar.update()
            if len(tasks) == n:
                break
    if rejected:
        log.info(
            "KodCode: skipped %d rows on the way: %s", sum(rejected.values()), dict(rejected.most_common(8))
        )
    unrunnable = {k: v for k, v in rejected.items() if k.startswith(("pytest's built-in", "a test decorator", "a module hook"))}
    if unrunnable:  # tests pytest would run that cannot run here: the row is refused whole, and said so
        log.warning("KodCode: %d rows refused because a test needs pytest itself (%s); see tasks/pytest_file.py",
                    sum(unrunnable.values()), unrunnable)
    if not tasks:
        raise ValueError(
            f"KodCode source {source!r}: no eligible task among {len(ids)} rows (skipped: {dict(rejected)})"
        )
    if len(tasks) < n:
        log.warning("KodCode source %r: only %d eligible tasks, fewer than n=%d", source, len(tasks), n)
    return tasks


def pytest_share(source: Any, split: str = "train") -> dict[str, Any]:
    """How many rows of `source` need pytest's semantics (`pytest_file`), need none, or are refused (by reason):
    the measurement behind docs/benchmarks.md's KodCode paragraph. Counts every row, not only a selection."""
    counts: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    rows = read_rows(source, split=split)
    for i in range(len(rows)):
        try:
            task = kodcode_task(rows[i])
        except Ineligible as err:
            refused[err.reason] += 1
            continue
        counts["needs pytest" if task.metadata["pytest"]["parametrized"] or task.metadata["pytest"]["fixtures"]
               or task.metadata["pytest"]["in_classes"] or task.metadata["pytest"]["skipped"] else "plain"] += 1  # fmt: skip
    total = len(rows)
    return {"rows": total, "plain": counts["plain"], "needs_pytest": counts["needs pytest"],
            "refused": sum(refused.values()), "refused_by_reason": dict(refused.most_common())}  # fmt: skip
