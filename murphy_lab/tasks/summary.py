"""Counts that describe a task list (what docs/benchmarks.md records for each benchmark)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from murphy_lab.tasks.task import Task


def summarize(tasks: Sequence[Task]) -> dict:
    """Task, test and difficulty counts of a task list.

    >>> summarize([Task("a", "p", visible_tests=["assert f() == 1"], difficulty="easy")])["by_difficulty"]
    {'easy': 1}
    """
    dates = sorted(str(t.metadata["contest_date"])[:10] for t in tasks if t.metadata.get("contest_date"))
    return {
        "tasks": len(tasks),
        "by_source": dict(Counter(t.source for t in tasks)),
        "by_difficulty": dict(sorted(Counter(t.difficulty for t in tasks).items())),
        "with_visible_tests": sum(bool(t.visible_tests.cases) for t in tasks),
        "visible_cases": sum(len(t.visible_tests) for t in tasks),
        "hidden_cases": sum(len(t.hidden_tests) for t in tasks),
        "with_reference": sum(t.reference is not None for t in tasks),
        "date_window": (dates[0], dates[-1]) if dates else None,
    }
