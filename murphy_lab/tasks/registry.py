"""Benchmarks by name, so configs and notebooks can say ``load_tasks("mbpp", split="test")``."""

from __future__ import annotations

from collections.abc import Callable

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


def load_tasks(name: str, **kwargs) -> list[Task]:
    """The tasks of the benchmark called `name`; `kwargs` go to its loader (see each loader's docstring)."""
    loader = LOADERS.get(name.lower())
    if loader is None:
        raise ValueError(f"unknown benchmark {name!r}; known: {sorted(LOADERS)}")
    return loader(**kwargs)
