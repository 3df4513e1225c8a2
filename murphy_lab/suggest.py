"""Nearest-name suggestions for a misspelt name (a config field, a task-file column, a loader argument)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'tests'?)`` for the closest of `known`, or '' when none is close.

    >>> did_you_mean("test", ["tests", "prompt"])
    " (did you mean 'tests'?)"
    >>> did_you_mean("mbpp", ["MBPP", "HumanEval"])
    " (did you mean 'MBPP'?)"
    """
    by_lower = {str(k).lower(): str(k) for k in known}  # case is no spelling: 'mbpp' is 'MBPP'
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
