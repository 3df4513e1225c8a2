"""MBPP (Austin et al., 2021): crowd-sourced basic Python problems with three asserts each (CC BY 4.0).

Two variants: "full" (974 problems, fields text/code/test_list/test_setup_code/challenge_test_list) and
"sanitized" (427 hand-verified problems, fields prompt/code/test_imports/test_list). Splits by task id, as the
upstream README defines them and the Hugging Face dataset ships them: prompt 1–10, test 11–510, validation 511–600,
train 601–974 (sanitized: 7 / 257 / 43 / 120 tasks; full: 10 / 500 / 90 / 374).

The paper profile evaluates full MBPP's test split (`load_mbpp("test", "full")`, 500 tasks, the one whose counts the
paper's numbers fit: docs/evaluation.md); the default here stays the sanitized variant.

MBPP has no separate visible tests. Our choice (documented in docs/benchmarks.md): the **first** assert is the
visible test and is quoted in the prompt, so the model knows the function's name and call shape (as the paper's
Reflexion-style scaffold shows tests); **all** asserts are hidden tests.
"""

from __future__ import annotations

import ast
import builtins
import json
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from murphy_lab.executor.types import TestSuite
from murphy_lab.tasks.sources import read_rows
from murphy_lab.tasks.task import Task

log = logging.getLogger(__name__)

TIMEOUT = 3.0  # seconds per case: bigcode-evaluation-harness's MBPP task, compute_code_eval(timeout=3.0)
HUB_ID = "google-research-datasets/mbpp"
SPLITS = {
    "prompt": (1, 10),
    "test": (11, 510),
    "validation": (511, 600),
    "train": (601, 974),
}  # task id ranges
VARIANTS = {"sanitized": "sanitized-mbpp.json", "full": "mbpp.jsonl"}  # variant -> original release file
PROMPT_TEMPLATE = "{text}\nYour code should pass this test:\n{test}"


def _parse(code: str) -> ast.Module:
    with warnings.catch_warnings():  # some MBPP tests hold regexes in plain strings ("\s"): harmless warnings
        warnings.simplefilter("ignore")
        return ast.parse(code)


def _entry_point(code: str, tests: Sequence[str]) -> str | None:
    """The first name the tests call that the reference defines (falls back to the first non-builtin call)."""
    try:
        defined = {n.name for n in _parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    except SyntaxError:
        defined = set()
    called = []
    for test in tests:
        for node in ast.walk(_parse(test)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.append(node.func.id)
    for name in called:
        if name in defined:
            return name
    return next((n for n in called if not hasattr(builtins, n)), None)


def mbpp_task(row: dict, split: str = "", where: str = "MBPP") -> Task:
    """One MBPP row (either variant's fields) as a `Task`; raises ValueError naming the row when it is malformed."""
    task_id = row.get("task_id")
    text = row.get("prompt") or row.get("text")  # sanitized: prompt; full: text
    tests = list(row.get("test_list") or [])
    if task_id is None or not text or not row.get("code"):
        raise ValueError(f"{where}: row {task_id!r} lacks task_id, problem text or code")
    if not tests:
        raise ValueError(f"{where}: row {task_id!r} has no tests (empty test_list)")
    for test in tests:
        try:
            _parse(test)
        except SyntaxError as err:
            raise ValueError(
                f"{where}: row {task_id!r}: test does not parse ({err.msg}): {test[:80]!r}"
            ) from err
    imports = "\n".join(row.get("test_imports") or [])
    # full MBPP's test_setup_code (tasks 367, 927) uses classes the program defines, so it must run after the
    # program: it goes in front of every case rather than into the setup.
    before = (row.get("test_setup_code") or "").replace("\r\n", "\n").strip()
    hidden = tuple(f"{before}\n{t}" if before else t for t in tests)
    reference = row["code"].replace("\r\n", "\n")
    entry = _entry_point(reference, tests)
    # reaches the program even when it is a builtin's name (MBPP/126: sum)
    entries = (entry,) if entry else ()
    return Task(
        task_id=f"mbpp/{task_id}",
        prompt=PROMPT_TEMPLATE.format(text=text.strip(), test=tests[0]),
        visible_tests=TestSuite(cases=hidden[:1], setup=imports, entry_points=entries, timeout=TIMEOUT),
        hidden_tests=TestSuite(cases=hidden, setup=imports, entry_points=entries, timeout=TIMEOUT),
        entry_point=entry,
        reference=reference,
        source="mbpp",
        metadata={
            "mbpp_task_id": int(task_id),
            "statement": text.strip(),  # the problem text without the quoted test (train/eval overlap checks)
            "split": split,
            "variant": "sanitized" if "test_imports" in row else "full",
            "challenge_test_list": list(row.get("challenge_test_list") or []),
        },
    )


def _split_of(task_id: int) -> str:
    """The split a task id belongs to (ids past 974, should a file have them, count as train)."""
    return next(
        (name for name, (lo, hi) in SPLITS.items() if lo <= task_id <= hi), "train" if task_id > 974 else ""
    )


def _original_rows(path: Path, variant: str) -> tuple[list[dict], str]:
    """Rows of an original release file (or the file for `variant` inside a folder holding them)."""
    if path.is_dir():
        path = path / VARIANTS[variant]
    if not path.is_file():
        raise FileNotFoundError(f"MBPP file {str(path)!r} does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            rows = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"MBPP file {str(path)!r} is not valid JSON: {err}") from err
    return rows, str(path)


def _is_original(source: Any) -> bool:
    if not isinstance(source, (str, Path)):
        return False
    path = Path(source).expanduser()
    return path.name in VARIANTS.values() or (
        path.is_dir() and any((path / f).is_file() for f in VARIANTS.values())
    )


def load_mbpp(split: str = "test", variant: str = "sanitized", source: Any = HUB_ID) -> list[Task]:
    """MBPP tasks of one split ("test", "train", "validation", "prompt" or "all").

    Args:
        split: which task ids (see `SPLITS`); "all" = every split.
        variant: "sanitized" (the hand-verified 427) or "full" (974).
        source: the Hugging Face hub id (default), a local Hugging Face-layout folder (``<variant>/<split>-*.parquet``)
            or data file, the original release files (a folder holding ``mbpp.jsonl`` / ``sanitized-mbpp.json``,
            or one of those files), a `datasets.Dataset`, or a list of rows.
    """
    if split not in (*SPLITS, "all"):
        raise ValueError(f"split must be one of {[*SPLITS, 'all']}, not {split!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, not {variant!r}")
    splits = list(SPLITS) if split == "all" else [split]

    def chosen(rows: Sequence[dict], where: str) -> list[tuple[dict, str]]:  # rows of `splits`, by task id
        for i, row in enumerate(rows):
            if not isinstance(row.get("task_id"), int):
                raise ValueError(f"{where}: row {i} has no integer task_id")
        return [(row, where) for row in rows if _split_of(row["task_id"]) in splits]

    labelled: list[tuple[dict, str]] = []  # (row, where it came from)
    if _is_original(source):
        labelled = chosen(*_original_rows(Path(source).expanduser(), variant))
    elif not isinstance(source, (str, Path)) or Path(source).expanduser().is_file():
        labelled = chosen(read_rows(source), str(source) if isinstance(source, (str, Path)) else "rows")
    else:  # the hub or a Hugging Face-layout folder: the dataset's own splits
        for name in splits:
            labelled += [
                (r, f"{source} [{variant}/{name}]") for r in read_rows(source, config=variant, split=name)
            ]
    tasks = [mbpp_task(row, _split_of(row["task_id"]), where) for row, where in labelled]
    if not tasks:
        raise ValueError(f"MBPP source {source!r} has no rows in split {split!r} (variant {variant!r})")
    log.info("MBPP %s/%s: %d tasks", variant, split, len(tasks))
    return tasks
