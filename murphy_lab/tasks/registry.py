"""Benchmarks by name, so configs and notebooks can say ``load_tasks("mbpp", split="test")``."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.humaneval import load_humaneval
from murphy_lab.tasks.kodcode import load_kodcode
from murphy_lab.tasks.livecodebench import load_livecodebench
from murphy_lab.tasks.mbpp import load_mbpp
from murphy_lab.tasks.task import Task
from murphy_lab.tasks.taskfile import load_task_file

LOADERS: dict[str, Callable[..., list[Task]]] = {
    "humaneval": load_humaneval,
    "mbpp": load_mbpp,
    "livecodebench": load_livecodebench,
    "lcb": load_livecodebench,
    "kodcode": load_kodcode,
    "jsonl": load_task_file,  # your own tasks (docs/own_tasks.md)
    "taskfile": load_task_file,
}


def register(name: str, loader: Callable[..., list[Task]]) -> None:
    """Make `loader` available as ``load_tasks(name, ...)`` (e.g. the toy world's task family)."""
    LOADERS[name.lower()] = loader


def check_arguments(name: str, loader: Callable, kwargs: dict) -> None:
    """A ValueError naming each argument `loader` does not take (with the nearest one it does), or a required one
    that is missing, before the loader runs (a TypeError traceback otherwise)."""
    params = inspect.signature(loader).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in known:
            raise ValueError(f"task_args: the {name!r} loader has no argument {key!r}{did_you_mean(key, known)}; "
                             f"it takes {known}")  # fmt: skip
    missing = [n for n in known if params[n].default is inspect.Parameter.empty and n not in kwargs]
    if missing:
        raise ValueError(f"task_args: the {name!r} loader needs {missing} (e.g. task_args.{missing[0]}=...)")


def load_tasks(name: str, **kwargs) -> list[Task]:
    """The tasks of the benchmark called `name`; `kwargs` go to its loader (see each loader's docstring)."""
    loader = LOADERS.get(name.lower())
    if loader is None:
        raise ValueError(f"unknown benchmark {name!r}{did_you_mean(name.lower(), LOADERS)}; known: {sorted(LOADERS)}")
    check_arguments(name, loader, kwargs)
    return loader(**kwargs)
