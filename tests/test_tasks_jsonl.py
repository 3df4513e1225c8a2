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
    assert rw.visible_tests.cases == ("assert reverse_words('a b c') == 'c b a'",) and len(rw.hidden_tests) == 3


def test_io_tests_become_iotests_and_visible_io_tests_a_subset_of_them():
    task = {t.task_id: t for t in load_task_file(EXAMPLES / "heldout.jsonl", check_reference="off")}["shout"]
    assert task.hidden_tests.cases == (IOTest("hi\n", "HI\n"), IOTest("Mixed Case\n", "MIXED CASE\n"))
    assert task.visible_tests.cases == (IOTest("hi\n", "HI\n"),) and task.entry_point is None


def test_setup_difficulty_entry_point_reference_and_metadata_reach_the_task(tmp_path):
    row = {**GOOD, "setup": "import math", "difficulty": "hard", "entry_point": "f",
           "reference": "def f(x):\n    return x\n", "metadata": {"origin": "mine"}}
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
    assert load_task_file(tmp_path / "tasks.json", check_reference="off") == load_task_file(path, check_reference="off")


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
    ({"task_id": "p", "tests": ["assert True"]}, "prompt", "is missing"),
    ({"task_id": "p", "prompt": "  ", "tests": ["assert True"]}, "prompt", "is empty"),
    ({"task_id": "t", "prompt": "x"}, "tests", "no tests"),
    ({"task_id": "t", "prompt": "x", "tests": []}, "tests", "is empty"),
    ({"task_id": "t", "prompt": "x", "tests": "assert True"}, "tests", "must be a list"),
    ({"task_id": "t", "prompt": "x", "tests": ["assert f(1 == 1"]}, "tests", "test 0 does not parse"),
    ({"task_id": "t", "prompt": "x", "tests": ["assert True"], "io_tests": [{"input": "", "output": ""}]},
     "tests", "not both"),
    ({"task_id": "v", "prompt": "x", "tests": ["assert True"], "visible_tests": ["assert ("]}, "visible_tests",
     "does not parse"),
    ({"task_id": "v", "prompt": "x", "tests": ["assert True"], "visible_tests": []}, "visible_tests", "is empty"),
    ({"task_id": "v", "prompt": "x", "io_tests": [{"input": "", "output": ""}], "visible_tests": ["assert True"]},
     "visible_tests", "use 'visible_io_tests'"),
    ({"task_id": "io", "prompt": "x", "io_tests": [{"input": "1"}]}, "io_tests", "test 0 must be"),
    ({"task_id": "io", "prompt": "x", "io_tests": ["assert True"]}, "io_tests", "test 0 must be an {input, output}"),
    ({"task_id": "e", "prompt": "x", "tests": ["assert g(1)"], "entry_point": "g",
      "reference": "def f(x):\n    return x\n"}, "entry_point", "'g' is not defined by the reference"),
    ({"task_id": "e", "prompt": "x", "tests": ["assert True"], "entry_point": "my func"}, "entry_point",
     "must be a Python name"),
    ({"task_id": "r", "prompt": "x", "tests": ["assert True"], "reference": "def f(:"}, "reference", "does not parse"),
    ({"task_id": "s", "prompt": "x", "tests": ["assert True"], "setup": "import ("}, "setup", "does not parse"),
    ({"task_id": "d", "prompt": "x", "tests": ["assert True"], "difficulty": 3}, "difficulty", "must be a string"),
    ({"task_id": "m", "prompt": "x", "tests": ["assert True"], "metadata": [1]}, "metadata", "must be an object"),
    ({"task_id": "u", "prompt": "x", "test": ["assert True"]}, "test", "did you mean 'tests'"),
    ({"prompt": "x", "tests": ["assert True"]}, "task_id", "is missing"),
    ({"task_id": [1], "prompt": "x", "tests": ["assert True"]}, "task_id", "must be a string or an integer"),
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


def test_a_row_that_is_not_an_object_is_named(tmp_path):
    (problem,) = problems_of(write(tmp_path, [GOOD, "[1, 2]"]))
    assert problem.row == 2 and "must be a JSON object" in problem.message


def test_every_bad_row_is_listed_in_one_error_not_only_the_first(tmp_path):
    rows = [GOOD, BAD_ROWS[0][0], BAD_ROWS[2][0], GOOD | {"task_id": "ok2"}, BAD_ROWS[5][0] | {"task_id": "t2"},
            BAD_ROWS[12][0]]
    with pytest.raises(TaskFileError) as err:
        load_task_file(write(tmp_path, rows), check_reference="off")
    assert sorted({p.row for p in err.value.problems}) == [2, 3, 5, 6]
    lines = str(err.value).splitlines()
    assert "4 problem(s) in 4 row(s)" in lines[0] and [ln.split(":")[0].strip() for ln in lines[1:]] == [
        "row 2 (task_id 'p')", "row 3 (task_id 't')", "row 5 (task_id 't2')", "row 6 (task_id 'e')"]


# --- references run on their own tests ------------------------------------------------------------------------
WRONG_REFERENCE = {"task_id": "w", "prompt": "x", "tests": ["assert f(1) == 1", "assert f(2) == 3"],
                   "reference": "def f(x):\n    return x\n"}


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
        tasks = load_task_file(write(tmp_path, [GOOD, WRONG_REFERENCE]), check_reference="warn", executor=executor)
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
