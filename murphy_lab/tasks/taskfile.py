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
"""

from __future__ import annotations

import ast
import difflib
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from murphy_lab.executor.types import IOTest, TestSuite
from murphy_lab.tasks.task import Task

FIELDS = (
    "task_id", "prompt", "tests", "io_tests", "visible_tests", "visible_io_tests", "entry_point", "setup",
    "difficulty", "reference", "metadata",
)
CHECKS = ("error", "warn", "off")


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
        rows = {p.row for p in self.problems}
        head = f"task file {where}: {len(self.problems)} problem(s) in {len(rows)} row(s)"
        super().__init__(head + ":\n" + "\n".join(f"  {p}" for p in self.problems))


class TaskFileWarning(UserWarning):
    """A reference that fails its own tests, with ``check_reference="warn"``."""


# --- reading rows ---------------------------------------------------------------------------------------------
def _jsonl_rows(path: Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """(line number, parsed row) for every non-blank line, and a Problem for each line that is not JSON."""
    rows, problems = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as err:
            problems.append(Problem(n, None, None, f"not valid JSON ({err.msg} at column {err.colno})"))
    return rows, problems


def read_task_rows(path: Any, split: str = "train") -> tuple[list[tuple[int, Any]], list[Problem]]:
    """Numbered rows of `path`: a .jsonl file (read line by line, so a broken line is named), a .json array, a
    `datasets.Dataset` / `DatasetDict` (`split`), a folder written by `Dataset.save_to_disk`, any other file or
    folder `datasets.load_dataset` reads (parquet, csv, Hugging Face layout), or a list of dicts."""
    if isinstance(path, (str, Path)):
        p = Path(path).expanduser()
        if not p.exists():
            raise ValueError(f"task file {str(path)!r} does not exist")
        if p.is_file() and p.suffix == ".jsonl":
            return _jsonl_rows(p)
        if p.is_file() and p.suffix == ".json":
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                return _jsonl_rows(p)  # JSON lines under a .json name
            if not isinstance(data, list):
                raise ValueError(f"task file {str(path)!r}: a .json file must hold a list of rows (or JSON lines)")
            return list(enumerate(data, start=1)), []
        path = _dataset(p, split)
    if hasattr(path, "keys") and hasattr(path, "values") and not isinstance(path, dict):  # a DatasetDict
        if split not in path:
            raise ValueError(f"task dataset has no split {split!r} (splits: {sorted(path.keys())})")
        path = path[split]
    if isinstance(path, dict) or not hasattr(path, "__iter__"):
        raise ValueError(f"tasks: expected a path, a datasets.Dataset or a list of rows, got {type(path).__name__}")
    return list(enumerate(path, start=1)), []


def _dataset(path: Path, split: str) -> Any:
    import datasets

    from murphy_lab.tasks.sources import read_rows

    if path.is_dir() and any((path / f).exists() for f in ("dataset_info.json", "dataset_dict.json")):
        return datasets.load_from_disk(str(path))  # Dataset.save_to_disk / DatasetDict.save_to_disk
    return read_rows(str(path), split=split)


# --- one row -> one Task --------------------------------------------------------------------------------------
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


def _tests(value: Any, name: str, bad: list) -> list:
    """One test column as executor tests: assert strings (`tests`, `visible_tests`) or IOTests (`io_tests`,
    `visible_io_tests`). Appends (field, message) to `bad` for what is wrong."""
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
            if error:
                bad.append((name, f"test {i} does not parse: {error}: {test[:60]!r}"))
            out.append(test)
        elif isinstance(test, dict) and io:
            if set(test) != {"input", "output"} or not all(isinstance(v, str) for v in test.values()):
                bad.append((name, f"test {i} must be {{\"input\": str, \"output\": str}}, got {test!r:.80}"))
            else:
                out.append(IOTest(input=test["input"], output=test["output"]))
        else:
            kind = "an {input, output} object" if io else "an assert string"
            bad.append((name, f"test {i} must be {kind}, got {type(test).__name__}"))
    return out


def _suites(row: dict, bad: list) -> tuple[list, list]:
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
    cases = _tests(row[name], name, bad)
    visible = cases if row.get(visible_name) is None else _tests(row[visible_name], visible_name, bad)
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


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, FIELDS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def row_task(row: Any, source: str = "jsonl") -> tuple[Task | None, list[tuple[str | None, str]]]:
    """One row as a `Task`, or None and its problems as (field, message) pairs."""
    if not isinstance(row, dict):
        return None, [(None, f"must be a JSON object, got {type(row).__name__}")]
    bad: list[tuple[str | None, str]] = []
    bad += [(k, f"unknown field{_suggest(k)}; put extra data under 'metadata'") for k in row if k not in FIELDS]
    task_id = row.get("task_id")
    if task_id is None or task_id == "":
        bad.append(("task_id", "is missing"))
    elif isinstance(task_id, bool) or not isinstance(task_id, (str, int)):
        bad.append(("task_id", f"must be a string or an integer, got {type(task_id).__name__}"))
    prompt = _text(row, "prompt", bad, required=True)
    cases, visible = _suites(row, bad)
    setup = _text(row, "setup", bad) or ""
    if setup and _parses(setup):
        bad.append(("setup", f"does not parse: {_parses(setup)}"))
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
        task_id=str(task_id), prompt=prompt, visible_tests=TestSuite(cases=tuple(visible), setup=setup),
        hidden_tests=TestSuite(cases=tuple(cases), setup=setup), entry_point=entry_point, reference=reference,
        difficulty=difficulty, source=source, metadata={**metadata, "statement": prompt},
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
    """
    if check_reference not in CHECKS:
        raise ValueError(f"check_reference must be one of {CHECKS}, got {check_reference!r}")
    where = repr(str(path)) if isinstance(path, (str, Path)) else type(path).__name__
    numbered, problems = read_task_rows(path, split)
    if not numbered and not problems:
        raise ValueError(f"task file {where} has no rows")
    good: list[tuple[int, Task]] = []
    for n, row in numbered:
        task, bad = row_task(row, source)
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
            warnings.warn(f"task file {where}: {len(failed)} reference(s) fail their tests:\n{lines}",
                          TaskFileWarning, stacklevel=2)
    if problems:
        raise TaskFileError(where, sorted(problems, key=lambda p: (p.row or 0)))
    return [task for _, task in good]


def _run_references(good: list[tuple[int, Task]], executor: Any, timeout: float) -> list[Problem]:
    if executor is not None:
        return check_references(good, executor)
    from murphy_lab.executor import Executor

    with Executor(timeout=timeout, workers=1) as ex:
        return check_references(good, ex)
