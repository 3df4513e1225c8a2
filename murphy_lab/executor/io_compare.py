"""An IO test's verdict: the program's stdout compared with the expected output, by the benchmark's rule.

Loaded by the test worker (`worker.py`) by path; the expected output never leaves the worker. Lines are split on
``\\n`` only, in every rule (``str.splitlines`` would also split on ``\\x1c``, ``\\x0b``, ``\\x85``, ``\\u2028``: an
answer printed on one line with one of those between its numbers would pass as two lines). The comparison is
Python code the worker runs on its timer (`worker.run_io`), and its cost is bounded by the expected output: the
program's tokens are read lazily and only as many as the expected line has (plus one).
"""

from __future__ import annotations

import importlib
import itertools
import re

_TOKEN = re.compile(r"\S+")  # str.split()'s tokens (the same whitespace), found one at a time


def io_equal(got: str, expected: str, compare: str) -> bool:
    """Whether an IO test's stdout matches: by default line by line with trailing whitespace ignored (and
    trailing blank lines); ``"livecodebench"``: lcb_runner's rule — both stripped, the same number of lines, each
    line equal after stripping or, token by token, as `Decimal` numbers (``0.50`` equals ``0.5``)."""
    if compare != "livecodebench":
        got, expected = got.rstrip(), expected.rstrip()
        if got.count("\n") != expected.count("\n"):  # lines are split only when their counts agree
            return False
        return all(a.rstrip() == b.rstrip() for a, b in zip(got.split("\n"), expected.split("\n")))
    got, expected = got.strip(), expected.strip()
    if got.count("\n") != expected.count("\n"):
        return False
    return all(_same_line(x.strip(), y.strip()) for x, y in zip(got.split("\n"), expected.split("\n")))


def _same_line(x: str, y: str) -> bool:
    """lcb_runner's: equal, or both lines all numbers and the same numbers (a token that is not a `Decimal` on
    either side, or a different count, is a wrong answer: stopping at the first difference gives the same
    verdict and reads no more of the program's line than the expected line has)."""
    if x == y:
        return True
    decimal = importlib.import_module("decimal")
    for a, b in itertools.zip_longest(_TOKEN.finditer(x), _TOKEN.finditer(y)):
        if a is None or b is None:
            return False
        try:
            if decimal.Decimal(a.group()) != decimal.Decimal(b.group()):
                return False
        except (decimal.InvalidOperation, ValueError):
            return False
    return True
