"""KodCode tests run the way KodCode runs them, under pytest's semantics (issue 38): parametrize, the file's fixtures,
test classes and skips become plain cases; a file that needs pytest's built-in fixtures is refused whole, counted.
`tests/fixtures/kodcode_style.jsonl` is a hand-written sample in KodCode-V1's row format (12 rows, written for
these tests: there is no KodCode copy on this machine), not a sample of the dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from murphy_lab.tasks import load_kodcode
from murphy_lab.tasks.kodcode import pytest_share
from murphy_lab.tasks.pytest_file import Unrunnable, pytest_suite

ROWS = Path(__file__).parent / "fixtures" / "kodcode_style.jsonl"


@pytest.fixture(scope="module")
def tasks():
    return {t.metadata["question_id"]: t for t in load_kodcode(n=100, source=str(ROWS))}


def test_the_sample_loads_but_the_two_rows_that_need_builtin_fixtures(tasks):
    assert len(tasks) == 10 and "Docs_606_C" not in tasks and "Algorithm_909_I" not in tasks
    share = pytest_share(str(ROWS))
    assert share == {"rows": 12, "plain": 3, "needs_pytest": 7, "refused": 2, "refused_by_reason": {
        "pytest's built-in fixture 'capsys' (it acts on the test process, not the program's)": 1,
        "pytest's built-in fixture 'tmp_path' (it acts on the test process, not the program's)": 1}}  # fmt: skip


def test_every_reference_passes_every_expanded_test(tasks, executor):
    results = executor.run_many([(t.program(t.reference), t.hidden_tests) for t in tasks.values()])
    assert {q: (r.passed, r.total) for q, r in zip(tasks, results) if not r.solved} == {}
    cases = {q: len(t.hidden_tests) for q, t in tasks.items()}
    assert cases["Prefill_202_C"] == 4 and cases["Leetcode_707_I"] == 4 and cases["Filter_303_I"] == 3
    assert cases["Data_1212_I"] == 3 and cases["Evol_808_I"] == 2  # the skipped test is not run, as in pytest


def test_a_program_failing_only_the_parametrized_tests_no_longer_earns_full_reward(tasks, executor):
    # before: the parametrized test was dropped, and this wrong program (right on the one plain test) got 1.0
    task = tasks["Codeforces_1010_I"]
    wrong = "def gcd_list(xs):\n    return 1\n"
    res = executor.run(task.program(wrong), task.hidden_tests)
    assert (res.passed, res.total) == (1, 4) and "assert gcd_list(xs) == expected" in res.feedback


def test_fixture_and_class_tests_fail_a_wrong_program(tasks, executor):
    wrong = {"Taco_404_I": "def word_count(text):\n    return {}\n", "Filter_303_I": "def flatten(nested):\n    return nested\n",
             "Evol_808_I": "def merge_intervals(intervals):\n    return intervals\n"}  # fmt: skip
    results = executor.run_many([(tasks[q].program(c), tasks[q].hidden_tests) for q, c in wrong.items()])
    assert [(r.passed, r.total) for r in results] == [(1, 2), (1, 3), (1, 2)]


@pytest.mark.parametrize(
    "test, reason",
    [
        ("def test_a(capsys):\n    pass\n", "built-in fixture 'capsys'"),
        ("import pytest\n@pytest.mark.xfail\ndef test_a():\n    pass\n", "decorator pytest would apply"),
        ("def test_a(nothing):\n    pass\n", "neither a parameter nor a fixture"),
        ("def setup_module():\n    pass\ndef test_a():\n    pass\n", "module hook"),
        ("def helper():\n    pass\n", "no runnable test"),
    ],
)
def test_what_cannot_run_is_refused_with_its_reason(test, reason):
    with pytest.raises(Unrunnable, match=reason):
        pytest_suite(test, test)
