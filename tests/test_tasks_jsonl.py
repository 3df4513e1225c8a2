"""Your own task file (murphy_lab.tasks.taskfile): the documented format loads, every bad row is named up front."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from murphy_lab.executor import IOTest
from murphy_lab.tasks import load_tasks
from murphy_lab.tasks.taskfile import TaskFileError, TaskFileWarning, load_task_file

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "own_tasks"
GOOD = {"task_id": "good", "prompt": "Write f(x) returning x.", "tests": ["assert f(1) == 1"]}


def write(tmp_path, rows, name="tasks.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def problems_of(path, **kw) -> list:
    with pytest.raises(TaskFileError) as err:
        load_task_file(path, check_reference="off", **kw)
    return err.value.problems


# --- the format ------------------------------------------------------------------------------------------------
def test_the_shipped_example_files_load_as_five_tasks_each_through_the_registry_name(executor):
    for name in ("train.jsonl", "heldout.jsonl"):
        tasks = load_tasks("jsonl", path=str(EXAMPLES / name), executor=executor)  # references checked too
        assert len(tasks) == 5 and len({t.task_id for t in tasks}) == 5


def test_visible_tests_default_to_the_tests_and_an_explicit_subset_is_kept():
    tasks = {t.task_id: t for t in load_task_file(EXAMPLES / "train.jsonl", check_reference="off")}
    assert tasks["add"].visible_tests == tasks["add"].hidden_tests
    rw = tasks["reverse_words"]
    assert (
        rw.visible_tests.cases == ("assert reverse_words('a b c') == 'c b a'",) and len(rw.hidden_tests) == 3
    )


def test_io_tests_become_iotests_and_visible_io_tests_a_subset_of_them():
    task = {t.task_id: t for t in load_task_file(EXAMPLES / "heldout.jsonl", check_reference="off")}["shout"]
    assert task.hidden_tests.cases == (IOTest("hi\n", "HI\n"), IOTest("Mixed Case\n", "MIXED CASE\n"))
    assert task.visible_tests.cases == (IOTest("hi\n", "HI\n"),) and task.entry_point is None


def test_setup_difficulty_entry_point_reference_and_metadata_reach_the_task(tmp_path):
    row = {
        **GOOD,
        "setup": "import math",
        "difficulty": "hard",
        "entry_point": "f",
        "reference": "def f(x):\n    return x\n",
        "metadata": {"origin": "mine"},
    }
    (task,) = load_task_file(write(tmp_path, [row]), check_reference="off")
    assert task.hidden_tests.setup == task.visible_tests.setup == "import math"
    assert (task.difficulty, task.entry_point, task.reference) == ("hard", "f", row["reference"])
    assert task.metadata["origin"] == "mine" and task.source == "jsonl"


def test_a_hugging_face_dataset_of_the_same_rows_gives_the_same_tasks(tmp_path):
    import datasets

    path = EXAMPLES / "heldout.jsonl"
    from_file = load_task_file(path, check_reference="off")
    ds = datasets.load_dataset("json", data_files=str(path), split="train")
    assert load_task_file(ds, check_reference="off") == from_file
    ds.save_to_disk(str(tmp_path / "saved"))
    assert load_task_file(str(tmp_path / "saved"), check_reference="off") == from_file
    ds.to_parquet(str(tmp_path / "tasks.parquet"))
    assert load_task_file(str(tmp_path / "tasks.parquet"), check_reference="off") == from_file


def test_a_json_array_file_gives_the_same_tasks_as_json_lines(tmp_path):
    path = EXAMPLES / "train.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    (tmp_path / "tasks.json").write_text(json.dumps(rows))
    assert load_task_file(tmp_path / "tasks.json", check_reference="off") == load_task_file(
        path, check_reference="off"
    )


def test_the_pipeline_scores_each_example_task_solved_by_its_own_reference(executor):
    """A policy that writes each task's reference solves every example task at Iter-1: prompts, io/assert tests,
    setup and the visible/hidden split reach the scaffold and the executor intact."""
    from murphy_lab.evaluate import evaluate
    from murphy_lab.policy import ScriptedPolicy

    tasks = load_task_file(EXAMPLES / "heldout.jsonl", executor=executor)
    by_prompt = {t.prompt: t.reference for t in tasks}
    policy = ScriptedPolicy(lambda p, n: [next(r for q, r in by_prompt.items() if q in str(p))] * n)
    df = evaluate(policy, tasks, executor, iters=(1,), runs=1, progress=False)
    assert df.loc[df.difficulty == "all", "pass@1"].item() == 100.0


# --- every malformed row gets its named error -----------------------------------------------------------------
BAD_ROWS = [
    ({"task_id": "p", "tests": ["assert f(1) == 1"]}, "prompt", "is missing"),
    ({"task_id": "p", "prompt": "  ", "tests": ["assert f(1) == 1"]}, "prompt", "is empty"),
    ({"task_id": "t", "prompt": "x"}, "tests", "no tests"),
    ({"task_id": "t", "prompt": "x", "tests": []}, "tests", "is empty"),
    ({"task_id": "t", "prompt": "x", "tests": "assert f(1) == 1"}, "tests", "must be a list"),
    ({"task_id": "t", "prompt": "x", "tests": ["assert f(1 == 1"]}, "tests", "test 0 does not parse"),
    (
        {
            "task_id": "t",
            "prompt": "x",
            "tests": ["assert f(1) == 1"],
            "io_tests": [{"input": "", "output": ""}],
        },
        "tests",
        "not both",
    ),
    (
        {"task_id": "v", "prompt": "x", "tests": ["assert f(1) == 1"], "visible_tests": ["assert ("]},
        "visible_tests",
        "does not parse",
    ),
    (
        {"task_id": "v", "prompt": "x", "tests": ["assert f(1) == 1"], "visible_tests": []},
        "visible_tests",
        "is empty",
    ),
    (
        {
            "task_id": "v",
            "prompt": "x",
            "io_tests": [{"input": "", "output": ""}],
            "visible_tests": ["assert f(1) == 1"],
        },
        "visible_tests",
        "use 'visible_io_tests'",
    ),
    ({"task_id": "io", "prompt": "x", "io_tests": [{"input": "1"}]}, "io_tests", "test 0 must be"),
    (
        {"task_id": "io", "prompt": "x", "io_tests": ["assert f(1) == 1"]},
        "io_tests",
        "test 0 must be an {input, output}",
    ),
    (
        {
            "task_id": "e",
            "prompt": "x",
            "tests": ["assert g(1)"],
            "entry_point": "g",
            "reference": "def f(x):\n    return x\n",
        },
        "entry_point",
        "'g' is not defined by the reference",
    ),
    (
        {"task_id": "e", "prompt": "x", "tests": ["assert f(1) == 1"], "entry_point": "my func"},
        "entry_point",
        "must be a Python name",
    ),
    (
        {"task_id": "r", "prompt": "x", "tests": ["assert f(1) == 1"], "reference": "def f(:"},
        "reference",
        "does not parse",
    ),
    (
        {"task_id": "s", "prompt": "x", "tests": ["assert f(1) == 1"], "setup": "import ("},
        "setup",
        "does not parse",
    ),
    (
        {"task_id": "d", "prompt": "x", "tests": ["assert f(1) == 1"], "difficulty": 3},
        "difficulty",
        "must be a string",
    ),
    (
        {"task_id": "m", "prompt": "x", "tests": ["assert f(1) == 1"], "metadata": [1]},
        "metadata",
        "must be an object",
    ),
    ({"task_id": "u", "prompt": "x", "test": ["assert f(1) == 1"]}, "test", "did you mean 'tests'"),
    ({"prompt": "x", "tests": ["assert f(1) == 1"]}, "task_id", "is missing"),
    (
        {"task_id": [1], "prompt": "x", "tests": ["assert f(1) == 1"]},
        "task_id",
        "must be a string or an integer",
    ),
]


@pytest.mark.parametrize("row, field, message", BAD_ROWS, ids=[f"{f}:{m}" for _, f, m in BAD_ROWS])
def test_each_kind_of_bad_row_is_named_by_row_and_field(tmp_path, row, field, message):
    problems = problems_of(write(tmp_path, [GOOD, row]))
    assert [p.row for p in problems if p.field == field] == [2]
    text = str(next(p for p in problems if p.field == field))
    assert text.startswith("row 2") and f"field {field!r}" in text and message in text


def test_a_duplicate_task_id_names_the_row_that_had_it_first(tmp_path):
    (problem,) = problems_of(write(tmp_path, [GOOD, {**GOOD, "prompt": "other"}]))
    assert (problem.row, problem.field) == (2, "task_id") and "row 1 has the same task_id" in problem.message


def test_a_line_that_is_not_json_is_named_by_its_line_number(tmp_path):
    (problem,) = problems_of(write(tmp_path, [GOOD, "", "{not json"]))
    assert problem.row == 3 and "not valid JSON" in str(problem)


def test_an_unterminated_string_reads_once_at_its_column(tmp_path):
    (problem,) = problems_of(write(tmp_path, [GOOD, '{"task_id": "x}']))
    assert "Unterminated string starting at column 13" in problem.message and "at at" not in problem.message


def test_a_row_that_is_not_an_object_is_named(tmp_path):
    (problem,) = problems_of(write(tmp_path, [GOOD, "[1, 2]"]))
    assert problem.row == 2 and "must be a JSON object" in problem.message


def test_every_bad_row_is_listed_in_one_error_not_only_the_first(tmp_path):
    rows = [
        GOOD,
        BAD_ROWS[0][0],
        BAD_ROWS[2][0],
        GOOD | {"task_id": "ok2"},
        BAD_ROWS[5][0] | {"task_id": "t2"},
        BAD_ROWS[12][0],
    ]
    with pytest.raises(TaskFileError) as err:
        load_task_file(write(tmp_path, rows), check_reference="off")
    assert sorted({p.row for p in err.value.problems}) == [2, 3, 5, 6]
    lines = str(err.value).splitlines()
    assert "4 problem(s) in 4 row(s)" in lines[0] and [ln.split(":")[0].strip() for ln in lines[1:]] == [
        "row 2 (task_id 'p')",
        "row 3 (task_id 't')",
        "row 5 (task_id 't2')",
        "row 6 (task_id 'e')",
    ]


# --- references run on their own tests ------------------------------------------------------------------------
WRONG_REFERENCE = {
    "task_id": "w",
    "prompt": "x",
    "tests": ["assert f(1) == 1", "assert f(2) == 3"],
    "reference": "def f(x):\n    return x\n",
}


def test_a_reference_that_fails_its_own_tests_is_an_error_by_default(tmp_path, executor):
    with pytest.raises(TaskFileError) as err:
        load_task_file(write(tmp_path, [GOOD, WRONG_REFERENCE]), executor=executor)
    (problem,) = err.value.problems
    assert (problem.row, problem.field) == (2, "reference") and "1/2 passed" in problem.message


def test_a_reference_failing_its_visible_tests_is_named_too(tmp_path, executor):
    row = {**WRONG_REFERENCE, "tests": ["assert f(1) == 1"], "visible_tests": ["assert f(2) == 3"]}
    with pytest.raises(TaskFileError, match="fails its own visible_tests"):
        load_task_file(write(tmp_path, [row]), executor=executor)


def test_check_reference_warn_warns_and_still_returns_the_tasks(tmp_path, executor):
    with pytest.warns(TaskFileWarning, match="row 2 .*'w'.*reference"):
        tasks = load_task_file(
            write(tmp_path, [GOOD, WRONG_REFERENCE]), check_reference="warn", executor=executor
        )
    assert [t.task_id for t in tasks] == ["good", "w"]


def test_check_reference_off_runs_nothing(tmp_path):
    class Refuses:
        def run_many(self, jobs):
            raise AssertionError("references must not run with check_reference='off'")

    tasks = load_task_file(write(tmp_path, [WRONG_REFERENCE]), check_reference="off", executor=Refuses())
    assert len(tasks) == 1


def test_reference_and_structure_problems_are_reported_together(tmp_path, executor):
    with pytest.raises(TaskFileError) as err:
        load_task_file(write(tmp_path, [WRONG_REFERENCE, BAD_ROWS[0][0]]), executor=executor)
    assert [(p.row, p.field) for p in err.value.problems] == [(1, "reference"), (2, "prompt")]


# --- bad arguments --------------------------------------------------------------------------------------------
def test_a_missing_file_is_a_value_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="nope.jsonl.*does not exist"):
        load_task_file(tmp_path / "nope.jsonl")


def test_an_empty_file_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="has no rows"):
        load_task_file(write(tmp_path, []))


def test_an_unknown_check_reference_value_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="check_reference"):
        load_task_file(write(tmp_path, [GOOD]), check_reference="maybe")


# --- tests that cannot fail are refused -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "test, why",
    [
        ("1 == 2", "bare expression"),
        ("f(1) == 1", "write 'assert f(1) == 1'"),
        ("f(1)", "bare expression"),
        ("assert True", "checks a constant"),
        ("assert 1 == 1", "checks a constant"),
        ("x = f(1)", "no assert, no raise"),
        ("isclose(f(1), 1)", "bare expression"),  # a call that returns a bool checks nothing
        ("check(f)", "bare expression"),  # no setup defines check
    ],
)
def test_a_test_that_cannot_fail_is_named_by_row_and_field(tmp_path, test, why):
    (problem,) = problems_of(
        write(tmp_path, [GOOD, {**GOOD, "task_id": "x", "tests": ["assert f(1) == 1", test]}])
    )
    assert (problem.row, problem.field) == (2, "tests") and "test 1 cannot fail" in problem.message
    assert why in problem.message


@pytest.mark.parametrize(
    "test, setup",
    [
        ("assert f(1) == 1", ""),
        ("for x in (1, 2):\n    assert f(x) == x", ""),
        ("if f(1) != 1:\n    raise AssertionError('f(1)')", ""),
        ("check(f)", "def check(candidate):\n    assert candidate(1) == 1\n"),
        (
            "test_f()",
            "def helper(y):\n    assert f(y) == y\ndef test_f():\n    helper(1)\n",
        ),  # through a helper
        # an imported assert_... function
        ("assert_allclose(f(1.0), 1.0)", "from numpy.testing import assert_allclose"),
        ("np.testing.assert_array_equal(f([1]), [1])", "import numpy as np"),
    ],
)
def test_asserts_raises_and_setup_check_functions_are_accepted(tmp_path, test, setup):
    (task,) = load_task_file(
        write(tmp_path, [{**GOOD, "tests": [test], "setup": setup}]), check_reference="off"
    )
    assert task.hidden_tests.cases == (test,)


def test_a_setup_function_that_checks_nothing_does_not_make_a_test(tmp_path):
    row = {**GOOD, "tests": ["check(f)"], "setup": "def check(candidate):\n    candidate(1)\n"}
    (problem,) = problems_of(write(tmp_path, [row]))
    assert problem.field == "tests" and "cannot fail" in problem.message


def test_a_visible_test_that_cannot_fail_is_named_too(tmp_path):
    (problem,) = problems_of(write(tmp_path, [{**GOOD, "visible_tests": ["f(1) == 1"]}]))
    assert (problem.row, problem.field) == (1, "visible_tests")


def test_a_bare_expression_test_would_pass_any_program_in_the_executor(executor):
    """Why the rule exists: the executor runs `1 == 2` as a statement and reports it passed."""
    assert executor.run("def f(x):\n    return 0\n", ["1 == 2"]).reward == 1.0


# --- sizes, before anything is parsed ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "field, row, limit",
    [
        ("prompt", {**GOOD, "prompt": "x" * 100_001}, "limits.prompt"),
        ("tests", {**GOOD, "tests": ["assert f(1) == 1" + " " * 1_000_000]}, "limits.tests"),
        (
            "setup",
            {**GOOD, "setup": "#" * 700_000, "tests": ["assert f(1) == 1" + " " * 400_000]},
            "limits.tests",
        ),
        ("reference", {**GOOD, "reference": "#" * (512 * 1024 + 1)}, "limits.reference"),
        ("metadata", {**GOOD, "metadata": {"notes": "n" * (4 << 20)}}, "limits.row"),
    ],
)
def test_an_oversized_field_is_named_with_its_limit(tmp_path, field, row, limit):
    (problem,) = problems_of(write(tmp_path, [GOOD | {"task_id": "ok"}, row]))
    assert (
        (problem.row, problem.field) == (2, field)
        and limit in problem.message
        and "the limit is" in problem.message
    )


def test_a_50_mb_prompt_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    import murphy_lab.tasks.taskrow as taskrow

    monkeypatch.setattr(taskrow, "_parses", lambda code: pytest.fail("an oversized row must not be parsed"))
    (problem,) = problems_of(write(tmp_path, [{**GOOD, "prompt": "x" * (50 << 20)}]))
    assert problem.field == "prompt" and "52,428,800 characters" in problem.message


def test_a_file_past_the_file_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = write(tmp_path, [GOOD])
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("an oversized file must not be read"))
    with pytest.raises(ValueError, match=r"bytes; the limit is 10 \(limits.file\)"):
        load_task_file(path, limits={"file": 10})


def test_limits_can_be_raised_and_unknown_ones_are_named(tmp_path):
    path = write(tmp_path, [{**GOOD, "prompt": "x" * 100_001}])
    assert len(load_task_file(path, check_reference="off", limits={"prompt": 200_000})) == 1
    with pytest.raises(ValueError, match="did you mean 'prompt'"):
        load_task_file(path, limits={"promt": 200_000})
    with pytest.raises(ValueError, match="positive integer"):
        load_task_file(path, limits={"prompt": "big"})


# --- encodings ---------------------------------------------------------------------------------------------------
def test_a_byte_that_is_not_utf8_names_the_row_and_the_field(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        json.dumps(GOOD).encode()
        + b"\n"
        + json.dumps({**GOOD, "task_id": "caf", "prompt": "PLACE"})
        .encode()
        .replace(b"PLACE", b"caf\xe9 f(x)")
        + b"\n"
    )
    (problem,) = problems_of(path)
    assert (problem.row, problem.task_id, problem.field) == (2, "caf", "prompt")
    assert "not UTF-8 (0xe9 at byte" in problem.message


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    for name in ("bom.jsonl", "bom.json"):
        path = tmp_path / name
        body = json.dumps([GOOD]) if name.endswith(".json") else json.dumps(GOOD) + "\n"
        path.write_bytes(b"\xef\xbb\xbf" + body.encode())
        assert [t.task_id for t in load_task_file(path, check_reference="off")] == ["good"]


def test_a_json_array_with_a_byte_that_is_not_utf8_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'[\n{"task_id": "a",\n "prompt": "caf\xe9"}]')
    with pytest.raises(ValueError, match=r"bad.json'?: line 3: a byte that is not UTF-8 \(0xe9\)"):
        load_task_file(path)


def test_a_line_separator_inside_a_string_does_not_split_the_row(tmp_path):
    """JSON allows a raw U+2028 in a string; str.splitlines() would cut the row in two there."""
    path = tmp_path / "sep.jsonl"
    path.write_text(
        json.dumps({**GOOD, "prompt": "two\u2028lines"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (task,) = load_task_file(path, check_reference="off")
    assert task.prompt == "two\u2028lines"


def test_one_problem_is_one_line_naming_the_file_row_and_field(tmp_path):
    with pytest.raises(TaskFileError) as err:
        load_task_file(write(tmp_path, [{**GOOD, "tests": ["1 == 2"]}]), check_reference="off")
    (line,) = str(err.value).splitlines()
    assert (
        line.startswith("task file '")
        and "tasks.jsonl': row 1 (task_id 'good'): field 'tests': test 0 cannot" in line
    )


# --- Hugging Face datasets: columns lost by Dataset.from_list ----------------------------------------------------
MIXED = [
    GOOD,
    {
        "task_id": "io",
        "prompt": "Echo a line.",
        "io_tests": [{"input": "a\n", "output": "a\n"}],
        "visible_io_tests": [{"input": "a\n", "output": "a\n"}],
        "setup": "import sys",
    },
]


def test_a_dataset_that_lost_columns_to_from_list_is_warned_about():
    import datasets

    # keeps only GOOD's keys: io_tests, visible_io_tests, setup are gone
    ds = datasets.Dataset.from_list(MIXED)
    with pytest.warns(TaskFileWarning, match=r"no column\(s\) \[.*'io_tests'.*from_list"):
        with pytest.raises(TaskFileError, match="row 2 .*no tests"):
            load_task_file(ds, check_reference="off")


def test_the_documented_recipe_keeps_every_column_and_does_not_warn(recwarn):
    import datasets

    from murphy_lab.tasks.taskrow import FIELDS

    ds = datasets.Dataset.from_list([{f: row.get(f) for f in FIELDS} for row in MIXED])
    assert load_task_file(ds, check_reference="off") == load_task_file(MIXED, check_reference="off")
    assert not [w for w in recwarn if issubclass(w.category, TaskFileWarning)]
