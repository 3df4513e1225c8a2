"""Task sources by name: ONE registry of everything that gives tasks — the benchmarks, the smoke tasks, the toy world
and your own files — so a training config, a plan's benchmarks, a profile, the command lines and the notebooks all
say ``load_tasks("mbpp", split="test")`` and mean the same loader.

A source is a loader function (its keyword arguments are the source's arguments) or, for one that lives in a layer
above `tasks` (the toy world) or imports this package itself (the smoke tasks), the "module:attribute" path of its
loader, imported the first time the source is asked for (as `murphy_lab.methods.ENTRIES` names methods). A name
that is not registered but has a colon ("mypackage.tasks:load") is a path too: your own task source, named in a
YAML config. Names are case-insensitive, so a table's "HumanEval" is the source "humaneval".

`check_source(name, args)` checks a name and its arguments against the loader's signature without reading data (a
plan does it when it is made); `load_tasks(name, **args)` checks, then loads.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping

from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.humaneval import load_humaneval
from murphy_lab.tasks.kodcode import load_kodcode
from murphy_lab.tasks.livecodebench import load_livecodebench
from murphy_lab.tasks.mbpp import load_mbpp
from murphy_lab.tasks.task import Task
from murphy_lab.tasks.taskfile import load_task_file

Loader = Callable[..., list[Task]]

SOURCES: dict[str, Loader | str] = {
    "humaneval": load_humaneval,
    "mbpp": load_mbpp,
    "livecodebench": load_livecodebench,
    "kodcode": load_kodcode,
    "jsonl": load_task_file,  # your own tasks (docs/own_tasks.md)
    "smoke": "murphy_lab.smoke:smoke_tasks",  # four hand-made tasks (imports this package: named by path)
    "toy": "murphy_lab.toy.world:make_tasks",  # the toy world's task family (layer 3: named by path)
}
"""Source name -> its loader, or the "module:attribute" path of it."""

ALIASES: dict[str, str] = {"lcb": "livecodebench", "lcb-v6": "livecodebench", "taskfile": "jsonl"}
"""Other names of a source: the paper table's "LCB-v6" (its v6 window is the paper profile's `benchmark_args`)."""

GENERATED = ("smoke", "toy")
"""Sources made in code, never read from files (the data step and the data checks skip them)."""


def register(name: str, loader: Loader | str) -> None:
    """Make `loader` (a function, or the "module:attribute" path of one) available as ``load_tasks(name, ...)``."""
    SOURCES[name.lower()] = loader


def canonical(name: str, field: str = "tasks") -> str:
    """The registered name of source `name` ("LCB-v6" -> "livecodebench"); a "module:function" path as it is;
    ValueError naming the known sources otherwise (starting with `field`, the config or plan field naming it)."""
    key = ALIASES.get(name.lower(), name.lower())
    if key in SOURCES:
        return key
    if ":" in name:
        return name
    known = sorted({*SOURCES, *ALIASES})
    raise ValueError(
        f"{field}: unknown task source {name!r}{did_you_mean(name.lower(), known)}; known: {known} "
        f"or 'module:function'"
    )


def task_source(name: str, field: str = "tasks") -> Loader:
    """The loader of source `name`, imported on first use when it is named by path."""
    key = canonical(name, field)
    loader = SOURCES.get(key, key)
    if isinstance(loader, str):
        module, _, attribute = loader.partition(":")
        try:
            loader = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as err:
            raise ValueError(
                f"{field}: task source {name!r}: cannot import {module}:{attribute} ({err})"
            ) from None
        if key in SOURCES:
            SOURCES[key] = loader
    if not callable(loader):
        raise ValueError(f"{field}: task source {name!r}: {loader!r} is not a function")
    return loader


def check_source(
    name: str, args: Mapping | None = None, field: str = "tasks", args_field: str = "task_args"
) -> Loader:
    """The loader of `name` once the name and `args` fit it: a ValueError naming each argument the loader does not
    take (with the nearest one it does), or a required one that is missing (a file-backed loader's path), before
    anything is read. `field` / `args_field` start the messages: the config's or the plan's fields that hold the
    name and the arguments ("tasks" / "task_args", "benchmarks" / "benchmark_args")."""
    loader = task_source(name, field)
    params = inspect.signature(loader).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return loader
    known = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in args or {}:
        if key not in known:
            raise ValueError(
                f"{args_field}: the {name!r} loader has no argument {key!r}{did_you_mean(key, known)}; "
                f"it takes {known}"
            )
    missing = [n for n in known if params[n].default is inspect.Parameter.empty and n not in (args or {})]
    if missing:
        example = (
            f"task_args.{missing[0]}=..."
            if args_field == "task_args"
            else f"{args_field}={{{name!r}: {{{missing[0]!r}: ...}}}}"
        )
        raise ValueError(f"{args_field}: the {name!r} loader needs {missing} (e.g. {example})")
    return loader


def load_tasks(name: str, **kwargs) -> list[Task]:
    """The tasks of the source called `name`; `kwargs` go to its loader (see each loader's docstring)."""
    return list(check_source(name, kwargs)(**kwargs))
