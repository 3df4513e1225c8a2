"""Benchmark references pass their own tests in our executor (the loaders' end-to-end check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from murphy_lab.tasks import load_humaneval, load_kodcode, load_livecodebench, load_mbpp

executor = pytest.importorskip("murphy_lab.executor", reason="the executor package is not available")
Executor = getattr(executor, "Executor", None)
if Executor is None:  # pragma: no cover - while the executor was being written
    pytest.skip("murphy_lab.executor has no Executor yet", allow_module_level=True)

MBPP_DIR = next(
    (
        p
        for p in (Path("/work/shared/data/mbpp"), Path(__file__).parents[2] / "shared/data/mbpp")
        if (p / "sanitized-mbpp.json").is_file()
    ),
    None,
)


@pytest.fixture(scope="module")
def ex():
    with Executor(timeout=30, workers=2) as ex:  # generous: slow references on a loaded machine
        yield ex


def _failures(ex, tasks, suite: str) -> list[tuple[str, str]]:
    jobs = [(t.program(t.reference), getattr(t, suite)) for t in tasks if getattr(t, suite).cases]
    results = ex.run_many(jobs)
    names = [t.task_id for t in tasks if getattr(t, suite).cases]
    return [(name, r.feedback[:300]) for name, r in zip(names, results) if not r.solved]


@pytest.mark.slow
def test_humaneval_references_pass_their_hidden_tests(ex):
    assert _failures(ex, load_humaneval(), "hidden_tests") == []


@pytest.mark.slow
def test_humaneval_references_pass_their_visible_tests(ex):
    assert _failures(ex, load_humaneval(), "visible_tests") == []


@pytest.mark.slow
@pytest.mark.skipif(MBPP_DIR is None, reason="original MBPP files not present")
def test_mbpp_sanitized_test_references_pass_their_hidden_tests(ex):
    tasks = load_mbpp("test", "sanitized", source=MBPP_DIR)
    assert len(tasks) == 257 and _failures(ex, tasks, "hidden_tests") == []


@pytest.mark.slow
@pytest.mark.skipif(MBPP_DIR is None, reason="original MBPP files not present")
def test_all_427_sanitized_mbpp_references_pass_their_hidden_tests(ex):
    tasks = load_mbpp("all", "sanitized", source=MBPP_DIR)
    assert len(tasks) == 427 and _failures(ex, tasks, "hidden_tests") == []


KOD_ROW = {
    "question_id": "k1",
    "question": "Return the sum of a list.",
    "solution": "def total(xs):\n    return sum(xs)\n",
    "test": "import pytest\nfrom solution import total as t\n\ndef test_empty():\n    assert t([]) == 0\n\n"
    "def test_two():\n    assert t([1, 2]) == 3\n\ndef test_type():\n    with pytest.raises(TypeError):\n        t(None)\n",
    "test_info": [{"function_name": "total", "function_declaration": "def total(xs):"}],
    "gpt_difficulty": "easy",
}


def test_kodcode_cases_give_a_pass_fraction_in_the_executor(ex):
    task = load_kodcode(n=1, source=[KOD_ROW])[0]
    right, half = ex.run_many(
        [(task.reference, task.hidden_tests), ("def total(xs):\n    return 0\n", task.hidden_tests)]
    )
    assert (right.reward, half.reward) == (1.0, 1 / 3)  # the wrong program passes only test_empty


def test_lcb_functional_and_stdin_tests_run_in_the_executor(ex):
    rows = [
        {
            "question_id": "f",
            "difficulty": "easy",
            "contest_date": "2024-01-01T00:00:00",
            "question_content": "Add.",
            "starter_code": "class Solution:\n    def add(self, a: List[int]) -> int:\n        ",
            "public_test_cases": '[{"input": "[1, 2]", "output": "3", "testtype": "functional"}]',
            "private_test_cases": '[{"input": "[]", "output": "0", "testtype": "functional"}]',
            "metadata": '{"func_name": "add"}',
        },
        {
            "question_id": "s",
            "difficulty": "hard",
            "contest_date": "2024-01-01T00:00:00",
            "question_content": "Add.",
            "starter_code": "",
            "public_test_cases": '[{"input": "1 2\\n", "output": "3\\n", "testtype": "stdin"}]',
            "private_test_cases": "",
            "metadata": "{}",
        },
    ]
    functional, stdin = load_livecodebench(source=rows)
    codes = [
        "class Solution:\n    def add(self, a: List[int]) -> int:\n        return sum(a)\n",
        "a, b = map(int, input().split())\nprint(a + b)\n",
    ]
    jobs = [
        (t.program(c), s)
        for t, c in zip((functional, stdin), codes)
        for s in (t.visible_tests, t.hidden_tests)
    ]
    assert [r.reward for r in ex.run_many(jobs)] == [1.0, 1.0, 1.0, 1.0]
