"""Your own tasks: a JSON-lines file (or a Hugging Face dataset with the same columns), one task per row.

    {"task_id": "add", "prompt": "Write add(a, b) ...", "tests": ["assert add(1, 2) == 3"], "entry_point": "add"}
    {"task_id": "echo", "prompt": "Read a line, print it twice.", "io_tests": [{"input": "hi\\n", "output": "hihi"}]}

    tasks = load_task_file("train.jsonl")             # or, in a config: tasks: jsonl, task_args: {path: ...}

Columns (docs/own_tasks.md has the full table): `task_id`, `prompt`, `tests` (assert strings) or `io_tests`
(``{input, output}`` stdin/stdout pairs), and optionally `visible_tests` / `visible_io_tests` (the tests whose
feedback is quoted during refinement; default: the same tests), `entry_point`, `setup`, `difficulty`, `reference`,
`metadata`. Each column holds one type, so the same rows load as a Hugging Face dataset.

Every row is checked (`murphy_lab.tasks.taskrow.row_task`) before anything else happens, and every bad row is reported at once in one `TaskFileError`
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

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.task import Task
from murphy_lab.tasks.taskrow import FIELDS, LIMITS, row_task

CHECKS = ("error", "warn", "off")
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
            "FIELDS} for row in rows]), FIELDS from murphy_lab.tasks.taskrow (docs/own_tasks.md)",
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
