"""LiveCodeBench code generation (Jain et al., 2024), the `livecodebench/code_generation_lite` Hugging Face dataset.

Contest problems from LeetCode, AtCoder and Codeforces, each with a release date and a difficulty
(easy/medium/hard). Release tags are cumulative sets of JSONL files: ``release_v1`` = test.jsonl (May 2023 – Mar
2024, 400 problems) ... ``release_v6`` = test.jsonl … test6.jsonl (May 2023 – Apr 2025, 1,055 problems); ``v6``
alone is test6.jsonl (the 175 problems added in v6); ``v2_v4`` = test2–test4.jsonl. The paper evaluates on
"LiveCodeBench-v6" split by difficulty; we pin ``release_v6`` as the default tag.

- stdin problems (AtCoder, Codeforces): every test is an `IOTest(input, output)`.
- functional problems (LeetCode): the program defines ``class Solution`` with method ``metadata["func_name"]``; a
  test's input is newline-separated JSON values (the arguments) and its output one JSON value, so each test becomes
  ``assert Solution().<func_name>(<args>) == <expected>``, where the suite's setup binds ``Solution`` to the ONE
  object all of the problem's tests call (as lcb_runner's `grade_call_based`: one ``Solution()``, or the program's
  top-level function when its text has no ``class Solution``).
- public_test_cases are the visible tests; the hidden tests are public + private cases (private_test_cases: plain
  JSON, or base64 + zlib + pickle of a JSON string in later files), as the official harness scores a problem on
  all of them (lcb_runner's `get_evaluation_sample` joins the two lists).
- every program runs as lcb_runner runs it (`lcb_harness`, recorded as ``metadata["harness"]`` and applied by
  `Task.program` on every execution path, evaluation and training reward alike): behind its import header
  (`IMPORT_HEADER`), and a stdin program rewritten and called as `grade_stdio` calls it (the final ``__main__``
  guard removed, wrapped in a function, stdin and stdout in memory, `SystemExit` swallowed).
- the suites carry lcb_runner's rules: `TIMEOUT` (6 s) per test, and ``compare="livecodebench"``: stdout is
  compared line by line after stripping, and where two lines differ, token by token as `Decimal` numbers (``0.50``
  equals ``0.5``); a functional result returned as a tuple compares as a list (lcb_runner converts it).

The dataset ships a loading script, which current `datasets` releases no longer run; we read its JSONL files
directly (`read_rows(files=...)`), which is the same data.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import pickle
import zlib
from datetime import date, datetime
from pathlib import Path
from typing import Any

from murphy_lab.executor.types import IOTest, TestSuite
from murphy_lab.tasks.lcb_harness import SHARED
from murphy_lab.tasks.sources import read_rows
from murphy_lab.tasks.task import Task

log = logging.getLogger(__name__)

HUB_ID = "livecodebench/code_generation_lite"
DIFFICULTIES = ("easy", "medium", "hard")
_FILES = ["test.jsonl"] + [f"test{i}.jsonl" for i in range(2, 7)]  # one file per release increment v1..v6
VERSION_FILES: dict[str, list[str]] = {f"release_v{i}": _FILES[:i] for i in range(1, 7)}
VERSION_FILES["release_latest"] = list(_FILES)
VERSION_FILES.update({f"v{i}": [_FILES[i - 1]] for i in range(1, 7)})
VERSION_FILES.update({f"v{i}_v{j}": _FILES[i - 1 : j] for i in range(1, 7) for j in range(i + 1, 7)})

TIMEOUT = 6.0  # seconds per test: lcb_runner's default (`--timeout 6`, `run_test(timeout=6)`)
STDIN_NOTE = "Read the input from standard input and write the answer to standard output."
STARTER_NOTE = "Complete this starter code (the tests call the method directly):"


class _JSONOnly(pickle.Unpickler):
    """Unpickles plain data only: LiveCodeBench's private tests are a pickled str; refuse any class or function."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from private_test_cases")


def decode_tests(raw: str | list) -> list[dict]:
    """A test-case field as a list of {input, output, testtype}: JSON text, or base64(zlib(pickle(JSON text)))."""
    if isinstance(raw, list):
        return raw
    if not raw:
        return []
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    text = _JSONOnly(io.BytesIO(zlib.decompress(base64.b64decode(raw.encode("utf-8"))))).load()
    return json.loads(text)


def _literal(value_json: str) -> str:
    return repr(json.loads(value_json))


def functional_case(test: dict, func_name: str) -> str:
    """``assert Solution().f(a, b) == expected`` from a test whose input is newline-separated JSON arguments."""
    args = ", ".join(_literal(line) for line in test["input"].split("\n") if line.strip())
    return f"assert Solution().{func_name}({args}) == {_literal(test['output'])}"


def _suite(tests: list[dict], func_name: str | None) -> TestSuite:
    """The tests under lcb_runner's rules (its time limit and comparison)."""
    rules = {"timeout": TIMEOUT, "compare": "livecodebench"}
    if func_name is None:
        return TestSuite(cases=tuple(IOTest(input=t["input"], output=t["output"]) for t in tests), **rules)
    cases = tuple(functional_case(t, func_name) for t in tests)
    # loading has its own limit, as lcb_runner's `compile_code` alarm gives it, before the first test's 6 s start
    return TestSuite(
        cases=cases, setup=f"Solution = {SHARED}\n", entry_points=(SHARED,), load_timeout=TIMEOUT, **rules
    )


def _date(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    return datetime.fromisoformat(str(value))


def livecodebench_task(row: dict, where: str = "LiveCodeBench") -> Task:
    """One code_generation_lite row as a `Task`; raises ValueError naming the row when it is malformed."""
    qid = row.get("question_id", "?")
    difficulty = str(row.get("difficulty", "")).lower()
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"{where}: question {qid!r} has unknown difficulty {row.get('difficulty')!r}")
    try:
        public = decode_tests(row.get("public_test_cases"))
        private = decode_tests(row.get("private_test_cases"))
        metadata = json.loads(row.get("metadata") or "{}")
    except Exception as err:  # noqa: BLE001 - any decoding failure is a malformed row
        raise ValueError(f"{where}: question {qid!r}: cannot decode test cases/metadata ({err})") from err
    if not public and not private:
        raise ValueError(f"{where}: question {qid!r} has no tests")
    kinds = {t.get("testtype") for t in public + private}
    if not kinds <= {"stdin", "functional"} or len(kinds) != 1:
        raise ValueError(
            f"{where}: question {qid!r} has test types {sorted(map(str, kinds))}, expected one of stdin/functional"
        )
    functional = kinds == {"functional"}
    func_name = metadata.get("func_name") if functional else None
    if functional and not func_name:
        raise ValueError(f"{where}: question {qid!r} has functional tests but no metadata func_name")
    try:
        visible, hidden = _suite(public, func_name), _suite(public + private, func_name)  # official scoring
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(
            f"{where}: question {qid!r}: a test's input/output is not valid JSON ({err})"
        ) from err
    starter = (row.get("starter_code") or "").strip("\n")
    note = f"{STARTER_NOTE}\n{starter}" if starter else STDIN_NOTE
    return Task(
        task_id=f"lcb/{qid}",
        prompt=f"{row.get('question_content', '').strip()}\n\n{note}",
        visible_tests=visible,
        hidden_tests=hidden,
        entry_point=func_name,
        reference=None,  # LiveCodeBench ships no solutions
        difficulty=difficulty,
        source="livecodebench",
        metadata={
            "title": row.get("question_title", ""),
            "statement": row.get("question_content", "").strip(),
            "platform": row.get("platform", ""),
            "contest_id": row.get("contest_id", ""),
            "contest_date": str(row.get("contest_date", "")),
            "testtype": "functional" if functional else "stdin",
            "starter_code": starter,
            "hidden_cases": {"public": len(public), "private": len(private)},
            "harness": "livecodebench-functional" if functional else "livecodebench-stdin",
        },
    )


def load_livecodebench(
    version_tag: str = "release_v6",
    source: Any = HUB_ID,
    start_date: str | date | None = None,
    end_date: str | date | None = None,
    difficulty: str | list[str] | None = None,
) -> list[Task]:
    """LiveCodeBench problems of one release, optionally restricted to a date window and difficulties.

    Args:
        version_tag: a key of `VERSION_FILES` (default "release_v6").
        source: the hub id (default), a local folder holding the release's JSONL files (a clone of the dataset
            repository), a single data file, a `datasets.Dataset` or a list of rows. A single file/rows are taken as
            they are (the tag is still checked).
        start_date, end_date: keep problems whose contest_date lies in [start_date, end_date] (ISO dates, inclusive).
        difficulty: "easy" / "medium" / "hard" or a list of them; None keeps all.
    """
    if version_tag not in VERSION_FILES:
        raise ValueError(
            f"unknown LiveCodeBench version_tag {version_tag!r}; known tags: {sorted(VERSION_FILES)}"
        )
    wanted = [difficulty] if isinstance(difficulty, str) else list(difficulty or DIFFICULTIES)
    unknown = [d for d in wanted if d not in DIFFICULTIES]
    if unknown:
        raise ValueError(f"difficulty must be among {DIFFICULTIES}, got {unknown}")
    start = _date(start_date) if start_date is not None else None
    end = _date(end_date) if end_date is not None else None
    if end is not None and isinstance(end_date, (str, date)) and len(str(end_date)) <= 10:
        end = end.replace(hour=23, minute=59, second=59)  # a bare date means the whole day
    rows = read_rows(source, files=VERSION_FILES[version_tag])
    tasks, skipped = [], 0
    for i, row in enumerate(rows):
        where = f"{source if isinstance(source, (str, Path)) else 'rows'} row {i}"
        level = str(row.get("difficulty", "")).lower()
        if level not in DIFFICULTIES:
            raise ValueError(
                f"{where}: question {row.get('question_id')!r} has unknown difficulty {row.get('difficulty')!r}"
            )
        try:
            when = _date(row.get("contest_date"))
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"{where}: question {row.get('question_id')!r} has no valid contest_date ({err})"
            ) from err
        if level not in wanted or (start and when < start) or (end and when > end):
            skipped += 1  # filter before decoding: private tests can be megabytes
            continue
        tasks.append(livecodebench_task(row, where))
    if not tasks:
        raise ValueError(
            f"LiveCodeBench {version_tag} from {source!r}: no problem matches difficulty={wanted}, "
            f"window=[{start_date}, {end_date}] ({len(rows)} rows read)"
        )
    log.info(
        "LiveCodeBench %s: %d tasks kept, %d outside the window/difficulty", version_tag, len(tasks), skipped
    )
    return tasks
