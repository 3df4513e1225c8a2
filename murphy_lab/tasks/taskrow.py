"""One row of a task file as a `Task`, or the problems that keep it from being one (murphy_lab.tasks.taskfile reads
the file and reports every row's problems at once).

The columns (`FIELDS`, docs/own_tasks.md has the table), the size limits (`LIMITS`, checked before anything is
parsed), and the tests a row may hold: each must parse and be able to fail (`cannot_fail`: a bare expression such
as ``"1 == 2"`` is evaluated and discarded, so every program that runs passes it).
"""

from __future__ import annotations

import ast
import json
import warnings
from typing import Any

from murphy_lab.executor.types import IOTest, TestSuite
from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.task import Task

FIELDS = (
    "task_id",
    "prompt",
    "tests",
    "io_tests",
    "visible_tests",
    "visible_io_tests",
    "entry_point",
    "setup",
    "difficulty",
    "reference",
    "metadata",
)
LIMITS = {
    # characters: past the context of every model we train (8,192 tokens ≈ 30,000 characters)
    "prompt": 100_000,
    "tests": 1_000_000,  # characters of one row's test text: setup and every test column together
    "reference": 512 * 1024,  # bytes (UTF-8): the executor's default largest program (max_program_kb = 512)
    "row": 4 << 20,  # bytes of one row as JSON
    "file": 256 << 20,  # bytes of the file (or of every file under a dataset folder)
}
"""The size limits `load_task_file` enforces (its `limits` argument overrides any of them, e.g. from a config:
`task_args.limits.prompt=200000`)."""


def _parses(code: str) -> str | None:
    """None when `code` is valid Python, else the syntax error (message, line)."""
    try:
        with warnings.catch_warnings():  # "\s" in a plain string is a harmless SyntaxWarning
            warnings.simplefilter("ignore")
            ast.parse(code)
    except SyntaxError as err:
        return f"{err.msg} (line {err.lineno})"
    return None


def _defined_names(code: str) -> set[str]:
    """Top-level names a program defines: functions, classes, assignments, imports."""
    names: set[str] = set()
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _checking(node: ast.AST) -> bool:
    """A `raise`, or an `assert` of something that is not a constant (it names or calls something)."""
    if isinstance(node, ast.Raise):
        return True
    return isinstance(node, ast.Assert) and any(
        isinstance(n, (ast.Name, ast.Call)) for n in ast.walk(node.test)
    )


def check_functions(setup: str) -> set[str]:
    """The top-level functions of `setup` a test may call to check the program (HumanEval's ``check(candidate)``,
    KodCode's ``test_x()``): those holding a `_checking` statement, or calling another such function of `setup`."""
    if not setup or _parses(setup):
        return set()
    funcs = {
        n.name: n for n in ast.parse(setup).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    calls = {
        name: {c.func.id for c in ast.walk(f) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
        for name, f in funcs.items()
    }
    checks = {name for name, f in funcs.items() if any(_checking(n) for n in ast.walk(f))}
    while more := {name for name in funcs if name not in checks and calls[name] & checks}:
        checks |= more
    return checks


def cannot_fail(test: str, checks: set[str] = frozenset()) -> str | None:
    """Why the test code `test` passes whatever the program does, or None when it can fail.

    A test can fail when its code holds an `assert` of something that is not a constant, a `raise`, a call of one
    of `checks` (`check_functions` of the row's setup), or a call of a function named ``assert...`` (by convention
    one that raises on failure: ``np.testing.assert_allclose``, ``assert_array_equal``, ``self.assertEqual``).
    Everything else cannot: a bare expression such as ``1 == 2`` is evaluated and discarded, ``assert True``
    checks a constant.

    >>> cannot_fail("1 == 2")
    "it is a bare expression: its value is discarded, so every program that runs passes it (write 'assert 1 == 2')"
    >>> cannot_fail("assert f(1) == 2") is None and cannot_fail("check(f)", {"check"}) is None
    True
    """
    tree = ast.parse(test)
    nodes = list(ast.walk(tree))
    if any(_checking(n) for n in nodes):
        return None
    for call in (n for n in nodes if isinstance(n, ast.Call)):
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if name in checks or name.startswith("assert"):
            return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        return f"it is a bare expression: its value is discarded, so every program that runs passes it (write 'assert {test.strip()}')"
    if any(isinstance(n, ast.Assert) for n in nodes):
        return "its assert checks a constant, not the program"
    return "it has no assert, no raise, no assert_... call and no call of a check function defined in 'setup'"


def _tests(value: Any, name: str, bad: list, checks: set[str]) -> list:
    """One test column as executor tests: assert strings (`tests`, `visible_tests`) or IOTests (`io_tests`,
    `visible_io_tests`). Appends (field, message) to `bad` for what is wrong; `checks` are the setup's check
    functions (`check_functions`)."""
    io = name.endswith("io_tests")
    if not isinstance(value, (list, tuple)):
        bad.append((name, f"must be a list of tests, got {type(value).__name__}"))
        return []
    if not value:
        bad.append((name, "is empty" + (" (omit it to use the tests)" if name.startswith("visible") else "")))
    out: list = []
    for i, test in enumerate(value):
        if isinstance(test, str) and not io:
            error = _parses(test)
            why = None if error else cannot_fail(test, checks)
            if error:
                bad.append((name, f"test {i} does not parse: {error}: {test[:60]!r}"))
            elif why:
                bad.append((name, f"test {i} cannot fail: {why}: {test[:60]!r}"))
            out.append(test)
        elif isinstance(test, dict) and io:
            if set(test) != {"input", "output"} or not all(isinstance(v, str) for v in test.values()):
                bad.append((name, f'test {i} must be {{"input": str, "output": str}}, got {test!r:.80}'))
            else:
                out.append(IOTest(input=test["input"], output=test["output"]))
        else:
            kind = "an {input, output} object" if io else "an assert string"
            bad.append((name, f"test {i} must be {kind}, got {type(test).__name__}"))
    return out


def _suites(row: dict, bad: list, checks: set[str]) -> tuple[list, list]:
    """(tests, visible tests) of a row: `tests` + `visible_tests`, or `io_tests` + `visible_io_tests`."""
    tests, io_tests = row.get("tests"), row.get("io_tests")
    if tests is None and io_tests is None:
        bad.append(("tests", "no tests: give 'tests' (assert strings) or 'io_tests' ({input, output} pairs)"))
        return [], []
    if tests is not None and io_tests is not None:
        bad.append(("tests", "give 'tests' or 'io_tests', not both"))
        return [], []
    name, visible_name, other = ("tests", "visible_tests", "visible_io_tests")
    if io_tests is not None:
        name, visible_name, other = ("io_tests", "visible_io_tests", "visible_tests")
    if row.get(other) is not None:
        bad.append((other, f"does not go with {name!r}: use {visible_name!r}"))
    cases = _tests(row[name], name, bad, checks)
    visible = cases if row.get(visible_name) is None else _tests(row[visible_name], visible_name, bad, checks)
    return cases, visible


def _text(row: dict, name: str, bad: list, required: bool = False) -> str | None:
    value = row.get(name)
    if value is None or (required and isinstance(value, str) and not value.strip()):
        if required:
            bad.append((name, "is missing" if value is None else "is empty"))
        return None
    if not isinstance(value, str):
        bad.append((name, f"must be a string, got {type(value).__name__}"))
        return None
    return value


TEST_TEXT = ("tests", "io_tests", "visible_tests", "visible_io_tests", "setup")  # what limits["tests"] counts


def _chars(value: Any) -> int:
    """Characters of the strings in a value (a string, or lists / dicts of them)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_chars(v) for v in value.values())
    return sum(_chars(v) for v in value) if isinstance(value, (list, tuple)) else 0


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _sizes(row: dict, limits: dict) -> list[tuple[str, str]]:
    """(field, message) for each size past `limits`: the prompt, the row's test text, the reference, the row."""
    bad = []
    prompt = row.get("prompt")
    if isinstance(prompt, str) and len(prompt) > limits["prompt"]:
        bad.append(
            ("prompt", f"is {len(prompt):,} characters; the limit is {limits['prompt']:,} (limits.prompt)")
        )
    sizes = {name: _chars(row[name]) for name in TEST_TEXT if row.get(name) is not None}
    if sum(sizes.values()) > limits["tests"]:
        bad.append(
            (
                max(sizes, key=sizes.get),
                f"the row's test text (setup and every test column) is "
                f"{sum(sizes.values()):,} characters; the limit is {limits['tests']:,} (limits.tests)",
            )
        )
    reference = row.get("reference")
    if isinstance(reference, str) and _utf8_bytes(reference) > limits["reference"]:
        bad.append(
            (
                "reference",
                f"is {_utf8_bytes(reference):,} bytes; the limit is {limits['reference']:,} "
                "(limits.reference)",
            )
        )
    if not bad:
        size = _utf8_bytes(json.dumps(row, ensure_ascii=False, default=str))
        if size > limits["row"]:
            largest = max(row, key=lambda k: _chars(row[k]) + _chars(k))
            bad.append(
                (
                    largest,
                    f"the row is {size:,} bytes (this field is the largest); the limit is "
                    f"{limits['row']:,} (limits.row)",
                )
            )
    return bad


def row_task(
    row: Any, source: str = "jsonl", limits: dict | None = None
) -> tuple[Task | None, list[tuple[str | None, str]]]:
    """One row as a `Task`, or None and its problems as (field, message) pairs. Sizes past `limits` (default
    `LIMITS`) are checked first: an oversized row is not parsed further."""
    if not isinstance(row, dict):
        return None, [(None, f"must be a JSON object, got {type(row).__name__}")]
    oversized = _sizes(row, {**LIMITS, **(limits or {})})
    if oversized:
        return None, oversized
    bad: list[tuple[str | None, str]] = []
    bad += [
        (k, f"unknown field{did_you_mean(k, FIELDS)}; put extra data under 'metadata'")
        for k in row
        if k not in FIELDS
    ]
    task_id = row.get("task_id")
    if task_id is None or task_id == "":
        bad.append(("task_id", "is missing"))
    elif isinstance(task_id, bool) or not isinstance(task_id, (str, int)):
        bad.append(("task_id", f"must be a string or an integer, got {type(task_id).__name__}"))
    prompt = _text(row, "prompt", bad, required=True)
    setup = _text(row, "setup", bad) or ""
    if setup and _parses(setup):
        bad.append(("setup", f"does not parse: {_parses(setup)}"))
    cases, visible = _suites(row, bad, check_functions(setup))
    reference = _text(row, "reference", bad)
    if reference is not None and _parses(reference):
        bad.append(("reference", f"does not parse: {_parses(reference)}"))
        reference = None
    entry_point = _text(row, "entry_point", bad)
    if entry_point is not None and not entry_point.isidentifier():
        bad.append(("entry_point", f"must be a Python name, got {entry_point!r}"))
    elif entry_point is not None and reference is not None and entry_point not in _defined_names(reference):
        bad.append(("entry_point", f"{entry_point!r} is not defined by the reference"))
    difficulty = _text(row, "difficulty", bad) or "all"
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        bad.append(("metadata", f"must be an object, got {type(metadata).__name__}"))
    if bad:
        return None, bad
    task = Task(
        task_id=str(task_id),
        prompt=prompt,
        visible_tests=TestSuite(cases=tuple(visible), setup=setup),
        hidden_tests=TestSuite(cases=tuple(cases), setup=setup),
        entry_point=entry_point,
        reference=reference,
        difficulty=difficulty,
        source=source,
        metadata={**metadata, "statement": prompt},
    )
    return task, []
