"""Nearest-name suggestions for a misspelt name (a config field, a task-file column, a loader argument)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")


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


def registered(name: str | T, registry: Mapping[str, T], kind: type[T], error: str) -> T:
    """`name` itself when it is a `kind` already, else `registry[name]`; ValueError(`error`) when not registered.

    The one lookup behind `modes.mode`, `profiles.get_profile` and `policy.packaged.spec` (each keeps its message).
    """
    if isinstance(name, kind):
        return name
    if name not in registry:
        raise ValueError(error)
    return registry[name]
