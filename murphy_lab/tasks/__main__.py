"""Print a task source's counts, or check your task file: ``python -m murphy_lab.tasks NAME [KEY=VALUE ...]``.

    python -m murphy_lab.tasks jsonl path=train.jsonl             # your own tasks: every row checked
    python -m murphy_lab.tasks mbpp split=test source=/path/to/mbpp
    python -m murphy_lab.tasks toy split=test n=200 seed=1234         # any task source (tasks/registry.py)

Values are read as JSON where they parse (``n=1000``, ``difficulty='["hard"]'``), else as strings. Bad input (a bad
row, an unknown task source or argument) is printed as one error and exits with status 2, like the train and eval
commands.
"""

from __future__ import annotations

import json
import sys

from murphy_lab import cli
from murphy_lab.tasks.registry import load_tasks
from murphy_lab.tasks.summary import summarize


def parse_args(argv: list[str]) -> tuple[str, dict]:
    """(loader name, its keyword arguments) from ``NAME KEY=VALUE ...``."""
    if not argv or argv[0] in ("-h", "--help"):
        raise ValueError(
            "usage: python -m murphy_lab.tasks NAME [KEY=VALUE ...], e.g. jsonl path=train.jsonl"
        )
    kwargs = {}
    for arg in argv[1:]:
        key, eq, value = arg.partition("=")
        if not eq or not key:
            raise ValueError(f"expected KEY=VALUE, got {arg!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return argv[0], kwargs


def main(argv: list[str] | None = None) -> dict:
    name, kwargs = parse_args(sys.argv[1:] if argv is None else argv)
    counts = summarize(load_tasks(name, **kwargs))
    print(json.dumps(counts, indent=2))
    return counts


if __name__ == "__main__":
    cli.run(main)
