"""An IO test's verdict: the program's stdout compared with the expected output, by the benchmark's rule.

Loaded by the test worker (`worker.py`) by path; the expected output never leaves the worker.
"""

from __future__ import annotations

import importlib


def io_equal(got: str, expected: str, compare: str) -> bool:
    """Whether an IO test's stdout matches: by default line by line with trailing whitespace ignored (and
    trailing blank lines); ``"livecodebench"``: lcb_runner's rule — both stripped, the same number of lines, each
    line equal after stripping or, token by token, as `Decimal` numbers (``0.50`` equals ``0.5``)."""
    if compare != "livecodebench":
        return _rstripped(got) == _rstripped(expected)
    a, b = _stripped_lines(got), _stripped_lines(expected)
    return len(a) == len(b) and all(_same_line(x, y) for x, y in zip(a, b))


def _same_line(x: str, y: str) -> bool:
    if x == y:
        return True
    numbers = _as_numbers(x)
    return numbers is not None and numbers == _as_numbers(y)


def _rstripped(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _as_numbers(line: str):
    """The line's tokens as Decimals, or None when one is not a number (lcb_runner's convert_line_to_decimals)."""
    decimal = importlib.import_module("decimal")
    try:
        return [decimal.Decimal(token) for token in line.split()]
    except (decimal.InvalidOperation, ValueError):
        return None
