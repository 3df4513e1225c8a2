"""Turning benchmark test formats into the executor's tests (assert strings, `IOTest`, `TestSuite`).

- `doctest_asserts`: docstring examples (``>>> f(1)`` + the next line, or ``f(1) ==> 2``) -> ``assert f(1) == 2``;
  these are HumanEval's *visible* tests, the examples the model already sees in its prompt.
- `split_check`: HumanEval's ``def check(candidate): assert ...`` -> one case per assert, ``candidate`` renamed to
  the entry point, so the reward is a true pass fraction; a `check` with loops or helper variables stays one case
  ``check(<entry_point>)``.
- `pytest_file_suite`: a KodCode-style pytest file -> a suite that pytest itself runs in the test worker, one case
  per test id pytest collects from it (collected in the sandbox, without a program), the file in `setup`.

Every function here returns cases that compile; text that does not parse raises `ValueError` (the loader names the
row) or is skipped where the docstring says so.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence
from dataclasses import dataclass

from murphy_lab.executor import Executor
from murphy_lab.executor.pytest_run import COLLECT, read_collection
from murphy_lab.executor.types import TestSuite

# ---------------------------------------------------------------------------------------------------- doctests


def _literal(text: str) -> str | None:
    """`text` as a Python literal in canonical spelling, or None when it is not one (``true``/``false`` are read
    as Python's booleans, as docstrings written by non-Python authors spell them)."""
    text = text.strip().rstrip(".,;")
    text = {"true": "True", "false": "False"}.get(text, text)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return repr(value)


def _call(text: str, entry_point: str, names: frozenset[str]) -> str | None:
    """`text` as one expression that calls `entry_point` and uses no unknown names, canonically spelled (comments
    dropped); None when it is not such an expression. `names` are the other names it may use."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    calls = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == entry_point
        for n in ast.walk(tree)
    )
    allowed = names | {entry_point} | set(dir(builtins))
    return ast.unparse(tree) if calls and used <= allowed else None


def _assert_equal(call: str, expected: str) -> str:
    """``assert <call> == <expected>``; a float result is compared with a tolerance (docstrings round floats)."""
    if isinstance(ast.literal_eval(expected), float):
        return f"assert abs({call} - {expected}) < 1e-6"
    return f"assert {call} == {expected}"


def _args_call(args: str, entry_point: str, params: tuple[str, ...]) -> str | None:
    """``f(<args>)`` from an example's argument text (``lst = [1, 2]`` or ``[1, 2]``) when every argument is a
    literal and every keyword is one of `params`; None otherwise."""
    try:
        call = ast.parse(f"{entry_point}({args.strip().rstrip(',')})", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) != len(params):
        return None
    try:
        for value in [*call.args, *(k.value for k in call.keywords)]:
            ast.literal_eval(value)
    except ValueError:
        return None
    if any(k.arg not in params for k in call.keywords):
        return None
    return ast.unparse(call)


# "* f(x) -> y", "for f(x) == y", "assert f(x) => y": a leading bullet/word before a one-line example
_BULLET = re.compile(r"^(?:[*\-]\s+|for\s+(?=\w+\()|assert\s+)", re.IGNORECASE)
_ARROW_LINE = re.compile(
    r"^(?P<call>\w+\(.*\))\s*#?\s*(?:==>|=>|➞|->|==|=|\bshould return\b|\breturns?\b)\s*(?P<out>.+)$"
)
_FOR_LINE = re.compile(
    r"^for (?P<args>\w+\s*=.+?),? the (?:output|result) should be (?P<out>.+)$", re.IGNORECASE
)


def doctest_asserts(
    docstring: str, entry_point: str, names: frozenset[str] = frozenset(), params: tuple[str, ...] = ()
) -> list[str]:
    """Asserts from the usage examples in a docstring; examples that cannot be parsed are skipped.

    Shapes read (the ones HumanEval uses): interactive examples (``>>> f(x)`` and the printed value on the next
    line(s), or ``>>> f(x) == y``); one-line examples (``f(x) ==> y``, ``=> y``, ``➞ y``, ``-> y``, ``== y``,
    ``= y``, ``# returns y``); ``For lst = [1, 2] the output should be 3``; and ``Input: ...`` directly followed
    by ``Output: ...``. Only expressions that call `entry_point`, use no names but builtins and `names` (helpers
    the prompt defines), with literal arguments named from `params` (the signature) and a literal expected value,
    become tests. The examples are the benchmark's own and can be wrong: run the reference against them.

    >>> doctest_asserts(">>> add(1, 2)\\n3\\nadd(2, 2) ==> 4\\nFor a = 1, b = 5 the output should be 6", "add",
    ...                 params=("a", "b"))
    ['assert add(1, 2) == 3', 'assert add(2, 2) == 4', 'assert add(a=1, b=5) == 6']
    """
    lines = [line.strip() for line in docstring.splitlines()]
    out: list[str] = []

    def add(call: str | None, expected: str | None) -> None:
        if call is not None and expected is not None:
            out.append(_assert_equal(call, expected))

    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(">>>"):
            expr = line[3:].strip()
            left, _, right = expr.rpartition(" == ")
            if left and _literal(right) is not None:  # ">>> f(x) == y" on one line
                add(_call(left, entry_point, names), _literal(right))
                i += 1
                continue
            expected, j, buffer = None, i + 1, ""
            while j < len(lines) and lines[j] and not lines[j].startswith(">>>") and j < i + 6:
                buffer += lines[j]  # the printed value may wrap over a few lines
                j += 1
                expected = _literal(buffer)
                if expected is not None:
                    break
            add(_call(expr, entry_point, names), expected)
            i = j if expected is not None else i + 1
            continue
        line = _BULLET.sub("", line)
        if (m := _ARROW_LINE.match(line)) and m["call"].startswith(entry_point + "("):
            add(_call(m["call"], entry_point, names), _literal(m["out"]))
        elif params and (m := _FOR_LINE.match(line)):
            add(_args_call(m["args"], entry_point, params), _literal(m["out"]))
        elif params and line.lower().startswith("input:") and i + 1 < len(lines):
            following = lines[i + 1]
            if following.lower().startswith("output:"):
                add(_args_call(line[6:], entry_point, params), _literal(following[7:]))
        i += 1
    return list(dict.fromkeys(out))  # drop repeated examples, keep order


# ------------------------------------------------------------------------------------------- HumanEval check()


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == self.old:
            return ast.copy_location(ast.Name(id=self.new, ctx=node.ctx), node)
        return node


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def split_check(test_code: str, entry_point: str, check_name: str = "check") -> TestSuite:
    """HumanEval's test module as a `TestSuite`, one case per assert where that is safe.

    Safe means: the body of ``check(candidate)`` is only asserts (and docstrings/constant expressions). Then every
    assert that mentions ``candidate`` becomes one case with ``candidate`` renamed to `entry_point`; asserts that do
    not mention it (``assert True``) test nothing and are dropped. The rest of the module (imports, METADATA) is the
    setup. Any other body (loops, helper variables, prints) gives a single case ``check(<entry_point>)`` with the
    whole module as setup, exactly the benchmark's own harness.
    """
    try:
        module = ast.parse(test_code)
    except SyntaxError as err:
        raise ValueError(f"test code does not parse: {err}") from err
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == check_name]
    if len(checks) != 1:
        raise ValueError(f"test code defines {len(checks)} functions named {check_name!r}, expected 1")
    check = checks[0]
    whole = TestSuite(cases=(f"{check_name}({entry_point})",), setup=test_code.strip() + "\n")
    if not check.args.args or len(check.args.args) != 1:
        return whole
    candidate = check.args.args[0].arg
    body = [n for n in check.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body or not all(isinstance(n, ast.Assert) for n in body):
        return whole
    cases = tuple(ast.unparse(_Rename(candidate, entry_point).visit(n)) for n in body if _uses(n, candidate))
    if not cases:
        return whole
    rest = [n for n in module.body if n is not check]
    setup = "\n".join(ast.unparse(n) for n in rest)
    return TestSuite(cases=cases, setup=setup + "\n" if setup else "")


# ------------------------------------------------------------------------------------------------ pytest files


COLLECT_TIMEOUT = 10.0  # seconds for pytest to start and collect a file in the sandbox (no program runs)


@dataclass
class PytestCensus:
    """What pytest collected from a file: its test ids, and how many of them are parametrized, in classes
    (unittest ones among them), use fixtures, carry a skip/skipif/xfail mark."""

    tests: int = 0
    parametrized: int = 0
    in_classes: int = 0
    unittest: int = 0
    fixtures: int = 0
    marked: int = 0


def pytest_file_suite(test_code: str, executor: Executor | None = None) -> tuple[TestSuite, PytestCensus]:
    """A pytest test file (KodCode's ``from solution import ...`` style) as a suite that pytest itself runs in the
    test worker (``TestSuite(runner="pytest")``: the file as `setup`, one case per test id), and its census.

    The ids are pytest's own: the file is collected by pytest in the executor's sandbox, against a stand-in
    module ``solution`` whose every name is a placeholder (no program runs; a file whose collection uses the
    program's values collects them as placeholders). `executor`: the one to collect in (default: a shared one).

    Raises:
        ValueError: the file does not parse, or pytest cannot collect it (the error pytest reported), or it holds
            no test: nothing of it is dropped silently.
    """
    got = pytest_file_suites([test_code], executor)[0]
    if isinstance(got, ValueError):
        raise got
    return got


def pytest_file_suites(
    test_codes: Sequence[str], executor: Executor | None = None
) -> list[tuple[TestSuite, PytestCensus] | ValueError]:
    """`pytest_file_suite` of many files, collected in parallel; a file that cannot be collected gives its
    `ValueError` in its place."""
    out: list = [None] * len(test_codes)
    jobs = []
    for k, code in enumerate(test_codes):
        try:
            ast.parse(code)
        except (SyntaxError, ValueError) as err:
            out[k] = ValueError(
                f"test code does not parse: {getattr(err, 'msg', err)} (line {getattr(err, 'lineno', '?')})"
            )
            continue
        jobs.append(
            (k, ("", TestSuite(cases=(COLLECT,), setup=code, runner="pytest", timeout=COLLECT_TIMEOUT)))
        )
    results = (executor or _collector()).run_many([job for _, job in jobs]) if jobs else []
    for (k, _), res in zip(jobs, results):
        o = res.outcomes[0]
        if o.status != "passed":
            lines = o.detail.strip().splitlines()  # pytest's error ends with its cause; else how it stopped
            why = lines[-1] if o.status == "error" and lines else f"{o.status} ({o.detail.strip()[:100]})"
            out[k] = ValueError(f"pytest cannot collect the file: {why[:300]}")
            continue
        got = read_collection(o.detail)
        suite = TestSuite(cases=tuple(got["ids"]), setup=test_codes[k], runner="pytest")
        out[k] = (suite, PytestCensus(**got["census"]))
    return out


_COLLECTOR: list[Executor] = []


def _collector() -> Executor:
    """The executor that collects files when none is given (made on first use, closed at exit)."""
    if not _COLLECTOR:
        _COLLECTOR.append(Executor(workers=2, timeout=COLLECT_TIMEOUT))
    return _COLLECTOR[0]
