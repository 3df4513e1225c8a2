"""Your own tasks: a JSON-lines file (or a Hugging Face dataset with the same columns), one task per row.

    {"task_id": "add", "prompt": "Write add(a, b) ...", "tests": ["assert add(1, 2) == 3"], "entry_point": "add"}
    {"task_id": "echo", "prompt": "Read a line, print it twice.", "io_tests": [{"input": "hi\\n", "output": "hihi"}]}

    tasks = load_task_file("train.jsonl")             # or, in a config: tasks: jsonl, task_args: {path: ...}

Columns (docs/own_tasks.md has the full table): `task_id`, `prompt`, `tests` (assert strings) or `io_tests`
(``{input, output}`` stdin/stdout pairs), and optionally `visible_tests` / `visible_io_tests` (the tests whose
feedback is quoted during refinement; default: the same tests), `entry_point`, `setup`, `difficulty`, `reference`,
`metadata`. Each column holds one type, so the same rows load as a Hugging Face dataset.

Every row is checked before anything else happens, and every bad row is reported at once in one `TaskFileError`
(a ValueError), one line per problem: ``row 3 (task_id 'x'): field 'tests': ...``. Row numbers are 1-based: the
line number in a JSONL file, ``dataset[n - 1]`` for a dataset. A `reference` is run on its own tests;
`check_reference` makes a failure an error ("error", the default), a `TaskFileWarning` ("warn") or skips the run
("off").

What is refused besides malformed rows (docs/own_tasks.md, "Validation"):

- sizes past `LIMITS` (the prompt, a row's test text, the reference, a row, the file), before anything is parsed,
  so a 50 MB prompt costs a line of error instead of an out-of-memory kill when the model reads it;
- a test that cannot fail (`can_fail`): a bare expression (``"1 == 2"`` is evaluated and discarded, so every
  program that runs passes it), an assert of a constant, code with no assert, raise or check call;
- bytes that are not UTF-8 (the row and field are named; a UTF-8 byte-order mark is accepted).

A `datasets.Dataset` lacking documented columns gets a `TaskFileWarning`: `Dataset.from_list` keeps only the first
row's keys, so a column that the first row lacked is dropped for every row without a word.
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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
CHECKS = ("error", "warn", "off")
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
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one row (`row` is 1-based; None for the file as a whole)."""

    row: int | None
    task_id: Any
    field: str | None
    message: str

    def __str__(self) -> str:
        where = "file" if self.row is None else f"row {self.row}"
        if self.task_id is not None:
            where += f" (task_id {self.task_id!r})"
        return f"{where}: field {self.field!r}: {self.message}" if self.field else f"{where}: {self.message}"


class TaskFileError(ValueError):
    """A task file with bad rows; `problems` lists every one of them."""

    def __init__(self, where: str, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:  # one line: the file, the row, the field and what is wrong
            super().__init__(f"task file {where}: {self.problems[0]}")
            return
        rows = {p.row for p in self.problems}
        head = f"task file {where}: {len(self.problems)} problem(s) in {len(rows)} row(s)"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in self.problems))


class TaskFileWarning(UserWarning):
    """A reference that fails its own tests, with ``check_reference="warn"``."""


# --- reading rows ---------------------------------------------------------------------------------------------
def _not_utf8(value: Any) -> bool:
    """A string (or a list / dict holding one) with a byte that did not decode (a surrogate escape)."""
    if isinstance(value, str):
        return any("\udc80" <= c <= "\udcff" for c in value)
    if isinstance(value, dict):
        return any(_not_utf8(v) for v in value.values())
    return isinstance(value, list) and any(_not_utf8(v) for v in value)


def _jsonl_rows(path: Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """(line number, parsed row) for every non-blank line, and a Problem for each line that is not JSON or not
    UTF-8 (the field holding the bad byte is named). A UTF-8 byte-order mark is skipped; lines end at ``\\n``."""
    rows, problems = [], []
    data = path.read_bytes()
    for n, raw in enumerate(data.removeprefix(BOM).split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            line, bad_byte = raw.decode("utf-8"), None
        except UnicodeDecodeError as err:  # keep the row readable (surrogate escapes) to name its field
            line, bad_byte = (
                raw.decode("utf-8", "surrogateescape"),
                f"0x{raw[err.start]:02x} at byte {err.start + 1}",
            )
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            msg = err.msg.removesuffix(" at")  # "Unterminated string starting at": the column follows once
            why = (
                f"not UTF-8 (byte {bad_byte} of the line)"
                if bad_byte
                else f"not valid JSON ({msg} at column {err.colno})"
            )
            problems.append(Problem(n, None, None, why))
            continue
        if bad_byte:
            tid = row.get("task_id") if isinstance(row, dict) else None
            fields = [k for k, v in row.items() if _not_utf8(v)] if isinstance(row, dict) else []
            problems.append(
                Problem(
                    n,
                    None if _not_utf8(tid) else tid,
                    fields[0] if fields else None,
                    f"holds a byte that is not UTF-8 ({bad_byte} of the line); save the file as UTF-8",
                )
            )
        rows.append((n, row))
    return rows, problems


def _json_rows(path: Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """A .json file: a list of rows, or JSON lines under a .json name."""
    data = path.read_bytes().removeprefix(BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ValueError(
            f"task file {str(path)!r}: line {line}: a byte that is not UTF-8 (0x{data[err.start]:02x}); "
            "save the file as UTF-8"
        ) from None
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        return _jsonl_rows(path)
    if not isinstance(rows, list):
        raise ValueError(f"task file {str(path)!r}: a .json file must hold a list of rows (or JSON lines)")
    return list(enumerate(rows, start=1)), []


def _disk_bytes(path: Path) -> int:
    return (
        path.stat().st_size
        if path.is_file()
        else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    )


def read_task_rows(
    path: Any, split: str = "train", limits: dict | None = None
) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """Numbered rows of `path`: a .jsonl file (read line by line, so a broken line is named), a .json array, a
    `datasets.Dataset` / `DatasetDict` (`split`), a folder written by `Dataset.save_to_disk`, any other file or
    folder `datasets.load_dataset` reads (parquet, csv, Hugging Face layout), or a list of dicts. A file or folder
    larger than ``limits["file"]`` is refused before it is read."""
    limits = {**LIMITS, **(limits or {})}
    if isinstance(path, (str, Path)):
        p = Path(path).expanduser()
        if not p.exists():
            raise ValueError(f"task file {str(path)!r} does not exist")
        size = _disk_bytes(p)
        if size > limits["file"]:
            raise ValueError(
                f"task file {str(path)!r} is {size:,} bytes; the limit is {limits['file']:,} (limits.file)"
            )
        if p.is_file() and p.suffix == ".jsonl":
            return _jsonl_rows(p)
        if p.is_file() and p.suffix == ".json":
            return _json_rows(p)
        path = _dataset(p, split)
    if hasattr(path, "keys") and hasattr(path, "values") and not isinstance(path, dict):  # a DatasetDict
        if split not in path:
            raise ValueError(f"task dataset has no split {split!r} (splits: {sorted(path.keys())})")
        path = path[split]
    if isinstance(path, dict) or not hasattr(path, "__iter__"):
        raise ValueError(
            f"tasks: expected a path, a datasets.Dataset or a list of rows, got {type(path).__name__}"
        )
    if hasattr(path, "column_names") and len(path):
        _check_columns(path)
    return list(enumerate(path, start=1)), []


def _check_columns(dataset: Any) -> None:
    """Warn when a `datasets.Dataset` looks built by `Dataset.from_list` with columns lost: its columns are exactly
    what its first row holds (no null in row 1, as from_list makes them) and documented columns are missing.
    A dataset built with every documented column, or read from JSON lines by `datasets.load_dataset` (which
    keeps every row's keys, so row 1 holds nulls where it lacks one), does not warn."""
    missing = [f for f in FIELDS if f not in dataset.column_names]
    if missing and all(v is not None for v in dataset[0].values()):
        warnings.warn(
            f"task dataset has no column(s) {missing} and its columns are exactly its first row's: if any other row "
            "had them, they were dropped when the dataset was built (datasets.Dataset.from_list keeps only the "
            "first row's keys). Build it with every documented column: Dataset.from_list([{f: row.get(f) for f in "
            "FIELDS} for row in rows]), FIELDS from murphy_lab.tasks.taskfile (docs/own_tasks.md)",
            TaskFileWarning,
            stacklevel=4,
        )


# --- one row -> one Task --------------------------------------------------------------------------------------
def _dataset(path: Path, split: str) -> Any:
    import datasets

    from murphy_lab.tasks.sources import read_rows

    if path.is_dir() and any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json")):
        return datasets.load_from_disk(str(path))  # Dataset.save_to_disk / DatasetDict.save_to_disk
    return read_rows(str(path), split=split)


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


# --- the file -------------------------------------------------------------------------------------------------
def _duplicates(numbered: list[tuple[int, Any]]) -> list[Problem]:
    first: dict[str, int] = {}
    out = []
    for n, row in numbered:
        tid = row.get("task_id") if isinstance(row, dict) else None
        if tid is None or isinstance(tid, (bool, dict, list)):
            continue
        if str(tid) in first:
            out.append(Problem(n, tid, "task_id", f"duplicate: row {first[str(tid)]} has the same task_id"))
        else:
            first[str(tid)] = n
    return out


def check_references(numbered_tasks: list[tuple[int, Task]], executor: Any) -> list[Problem]:
    """A Problem for every task whose reference does not pass all of its tests (hidden, then visible), in ONE
    executor batch."""
    jobs, owners = [], []
    for n, task in numbered_tasks:
        if task.reference is None:
            continue
        suites = [("tests", task.hidden_tests)]
        if task.visible_tests != task.hidden_tests:
            suites.append(("visible_tests", task.visible_tests))
        for name, suite in suites:
            jobs.append((task.program(task.reference), suite))
            owners.append((n, task, name))
    out = []
    for (n, task, name), result in zip(owners, executor.run_many(jobs) if jobs else []):
        if not result.solved:
            detail = " ".join(result.feedback.split())[:160]
            msg = f"the reference fails its own {name}: {result.passed}/{result.total} passed ({detail})"
            out.append(Problem(n, task.task_id, "reference", msg))
    return out


def load_task_file(
    path: Any,
    split: str = "train",
    check_reference: str = "error",
    executor: Any = None,
    timeout: float = 5.0,
    source: str = "jsonl",
    limits: dict | None = None,
) -> list[Task]:
    """The tasks of a task file, every row validated first (see the module docstring); raises `TaskFileError`.

    Args:
        path: a .jsonl file (or any source `read_task_rows` takes: a dataset, a dataset folder, a list of dicts).
        split: the split to read from a dataset folder or `DatasetDict`.
        check_reference: "error" (a reference that fails its own tests is a bad row), "warn" (a
            `TaskFileWarning`), or "off" (references are not run).
        executor: runs the references (default: a one-worker `murphy_lab.executor.Executor(timeout=timeout)`).
        timeout: seconds per test for the default executor.
        source: recorded as `Task.source`.
        limits: size limits to change, e.g. {"prompt": 200_000} (`LIMITS` lists them and their units).
    """
    if check_reference not in CHECKS:
        raise ValueError(f"check_reference must be one of {CHECKS}, got {check_reference!r}")
    limits = _limits(limits)
    where = repr(str(path)) if isinstance(path, (str, Path)) else type(path).__name__
    numbered, problems = read_task_rows(path, split, limits)
    if not numbered and not problems:
        raise ValueError(f"task file {where} has no rows")
    good: list[tuple[int, Task]] = []
    for n, row in numbered:
        task, bad = row_task(row, source, limits)
        tid = row.get("task_id") if isinstance(row, dict) else None
        problems += [Problem(n, tid, name, msg) for name, msg in bad]
        if task is not None:
            good.append((n, task))
    problems += _duplicates(numbered)
    if check_reference != "off" and any(t.reference is not None for _, t in good):
        failed = _run_references(good, executor, timeout)
        if check_reference == "error":
            problems += failed
        elif failed:
            lines = "\n".join(f"  {p}" for p in failed)
            warnings.warn(
                f"task file {where}: {len(failed)} reference(s) fail their tests:\n{lines}",
                TaskFileWarning,
                stacklevel=2,
            )
    if problems:
        raise TaskFileError(where, sorted(problems, key=lambda p: p.row or 0))
    return [task for _, task in good]


def _limits(limits: Any) -> dict:
    """`LIMITS` with the caller's changes, each checked."""
    if limits is None:
        return dict(LIMITS)
    if not isinstance(limits, dict):
        raise ValueError(f"limits must be a mapping such as {{'prompt': 200000}}, got {limits!r}")
    for name, value in limits.items():
        if name not in LIMITS:
            raise ValueError(
                f"limits: unknown limit {name!r}{did_you_mean(name, LIMITS)}; known: {sorted(LIMITS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"limits.{name} must be a positive integer, got {value!r}")
    return {**LIMITS, **limits}


def _run_references(good: list[tuple[int, Task]], executor: Any, timeout: float) -> list[Problem]:
    if executor is not None:
        return check_references(good, executor)
    from murphy_lab.executor import Executor

    with Executor(timeout=timeout, workers=1) as ex:
        return check_references(good, ex)
