"""Decontamination (issue 38): training tasks checked against every benchmark a profile evaluates on, the report
beside the tables, and the paper profile's refusal to train on an overlapping set unless told to."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from murphy_lab import profiles
from murphy_lab.experiments import contamination as C
from murphy_lab.tasks.overlap import find_near_duplicates
from murphy_lab.tasks.task import Task

STORY = (
    "Given a list of integers, return the length of the longest strictly increasing contiguous run of values; an "
    "empty list has a run of length zero and a single value has a run of length one, so the answer is never "
    "negative and never larger than the length of the list itself."
)
REF = (
    "def longest_run(xs):\n    best = cur = 0\n    prev = None\n    for x in xs:\n"
    "        cur = cur + 1 if prev is not None and x > prev else 1\n        best = max(best, cur)\n"
    "        prev = x\n    return best\n"
)


def task(tid: str, prompt: str, reference: str | None = None) -> Task:
    return Task(task_id=tid, prompt=prompt, reference=reference)


def test_exact_near_and_solution_overlaps_are_found_and_distinct_tasks_are_not():
    train = [
        task("t/copy", STORY.upper() + "!!"),  # the same statement after normalization
        task(
            "t/edit", STORY.replace("strictly increasing", "increasing").replace("zero", "0")
        ),  # a near-duplicate
        task("t/same-code", "Something else entirely.", REF.replace("best", "top")),  # renamed: not found
        task("t/code", "Another text.", "# a comment\n" + REF),  # the same program after normalization
        task(
            "t/other", "Return the sum of the squares of a list of numbers, or zero for an empty list please."
        ),
    ]
    report = C.check(train, {"Bench": [task("e/1", STORY, REF)]}, "p", "d")
    kinds = {p["train_id"]: p["kind"] for p in report.pairs}
    assert kinds == {"t/copy": "statement", "t/edit": "statement-near", "t/code": "reference"}
    assert report.overlapping and {r["kind"] for r in report.summary()} == {
        "statement",
        "statement-near",
        "reference",
    }
    assert C.check(train[-1:], {"Bench": [task("e/1", STORY, REF)]}).pairs == []


def test_near_duplicates_leave_short_texts_to_the_exact_rules():
    a, b = task("a", "x", "def f(x):\n    return x*8+2\n"), task("b", "y", "def f(x):\n    return x*7+29\n")
    assert find_near_duplicates([a], [b]) == []


def test_the_report_is_written_as_markdown_and_json(tmp_path):
    report = C.check([task("t/copy", STORY)], {"Bench": [task("e/1", STORY)]}, "p", "d")
    md, js = C.write_report(report, tmp_path / "results" / "p")
    data = json.loads(js.read_text())
    assert data["overlapping"] and data["pairs"][0]["eval_id"] == "e/1" and data["pairs_total"] == 1
    assert "| Bench | statement | 1 | 1 | 1 | 0 |" in md.read_text()
    clean = C.check([task("t/x", "Add two numbers.")], {"Bench": [task("e/1", STORY)]})
    assert "No overlap found" in clean.markdown()


@pytest.fixture
def refusing(monkeypatch):
    """The toy profile with the paper's refusal switched on."""
    monkeypatch.setitem(
        profiles.PROFILES,
        "toy-refusing",
        dataclasses.replace(profiles.get_profile("toy"), name="toy-refusing", refuse_overlap=True),
    )
    return "toy-refusing"


def test_a_refusing_profile_stops_on_an_overlapping_set_unless_told_to(refusing, monkeypatch):
    monkeypatch.delenv(C.ALLOW_ENV, raising=False)
    with pytest.raises(RuntimeError, match="training/evaluation task pair.*MURPHY_LAB_ALLOW_OVERLAP=1"):
        C.refuse_overlap(refusing)  # the toy world's prompt templates repeat
    monkeypatch.setenv(C.ALLOW_ENV, "1")
    assert C.refuse_overlap(refusing).overlapping
    assert C.refuse_overlap("toy") is None  # the toy profile only reports
    assert profiles.get_profile("paper").refuse_overlap


def test_the_committed_toy_report_is_what_the_check_gives():
    committed = Path(__file__).parents[1] / "reproduce" / "results" / "toy" / "contamination.json"
    data = json.loads(committed.read_text())
    report = C.check_profile("toy")
    assert data["summary"] == report.summary() and data["pairs_total"] == len(report.pairs)
    assert report.summary()[0]["same_reference"] == 0  # no training function is an evaluation function


def test_a_kodcode_row_that_copies_a_humaneval_docstring_is_caught_and_the_sample_is_clean():
    from murphy_lab.tasks import load_humaneval, load_kodcode

    rows = [json.loads(line) for line in (Path(__file__).parent / "fixtures" / "kodcode_style.jsonl").open()]
    copied = dict(
        rows[0],
        question_id="Copy_1_C",
        question="Filter an input list of strings only for ones that contain given substring.",
    )
    train = load_kodcode(n=100, source=rows + [copied])
    report = C.check(train, {"HumanEval": load_humaneval()}, "paper-like", "kodcode")
    assert [(p["train_id"], p["eval_id"], p["kind"]) for p in report.pairs] == [
        ("kodcode/Copy_1_C", "HumanEval/7", "statement-contained")
    ]


def test_setup_writes_the_overlap_report_beside_the_tables(tmp_path):
    from murphy_lab import experiments as X

    s = X.setup("toy", tmp_path / "results", tmp_path / "cache", train=False, torch_threads=None)
    assert (s.out / "contamination.md").exists() and (s.out / "contamination.json").exists()
    collected = X.setup("smoke", tmp_path / "r2", tmp_path / "c2", from_cache_only=True, torch_threads=None)
    assert not (collected.out / "contamination.md").exists()  # only collecting: nothing is checked or written
