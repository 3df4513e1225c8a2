"""Every execution path runs `task.program(code)`: a LiveCodeBench solution that uses the names LCB's import header
provides (deque, Counter, heappush, inf, lru_cache, bisect_left, List) unimported scores 1 on each of them —
rollouts, the three refinement scaffolds, hidden-test scoring, the trainer's rewards, µCode's rollouts and
best-of-N, ReVeal's chains and the toy measurement. Without the header each of these scores 0."""

from __future__ import annotations

import dataclasses

import pytest
from lcb import FUNCTIONAL_SOLUTION, STDIN_SOLUTION, fenced, functional_task, stdin_task

from murphy_lab.policy import ScriptedPolicy
from murphy_lab.prompts import extract_program

CASES = [(functional_task, FUNCTIONAL_SOLUTION), (stdin_task, STDIN_SOLUTION)]
IDS = ["functional", "stdin"]


def always(code: str) -> ScriptedPolicy:
    return ScriptedPolicy(lambda prompt, n: [fenced(code)] * n)


@pytest.mark.parametrize("make, code", CASES, ids=IDS)
def test_the_bare_solution_fails_and_the_program_passes(make, code, executor):
    task = make()
    assert executor.run(code, task.hidden_tests).reward == 0.0  # NameError: what every path ran before
    assert executor.run(task.program(code), task.hidden_tests).reward == 1.0


@pytest.mark.parametrize("make, code", CASES, ids=IDS)
def test_rollout_trees_reward_the_solution(make, code, executor):
    from murphy_lab.rollout import build_task_trees

    (tree,) = build_task_trees([make()], always(code), executor, g1=2, g2=2, turns=2, progress=False)
    assert [n.reward for n in tree.nodes()] == [1.0, 1.0] and tree.root.children[0].code == code


@pytest.mark.parametrize("scaffold", ["reflexion", "lats", "dot"])
@pytest.mark.parametrize("make, code", CASES, ids=IDS)
def test_scaffolds_and_hidden_scoring_solve_it_at_iter_1(scaffold, make, code, executor):
    from murphy_lab.evaluate import evaluate

    df = evaluate(always(code), [make()], executor, iters=(1,), runs=1, scaffold=scaffold, progress=False)
    episode = df.attrs["records"][0]
    assert episode["attempts"][0]["reward"] == 1.0  # visible tests, run by the scaffold
    assert set(df["pass@1"]) == {100.0}  # hidden tests, run by evaluate ("all" and the difficulty row)


class Recorder:
    """An executor that records the programs it is given and runs them on the real one."""

    def __init__(self, executor):
        self.executor, self.programs = executor, []

    def run_many(self, jobs):
        self.programs += [p for p, _ in jobs]
        return self.executor.run_many(jobs)


def test_trainer_rewards_run_the_program(tmp_path, tiny_model_path, executor):
    from murphy_lab.config import MurphyConfig
    from murphy_lab.trainer import MurphyTrainer

    tasks = [functional_task(), stdin_task()]
    cfg = MurphyConfig.for_profile(
        "smoke",
        model=tiny_model_path,
        g1=2,
        g2=1,
        turns=1,
        mode="grpo",
        per_device_train_batch_size=4,
        max_steps=1,
    )
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    rec = Recorder(executor)
    trainer = MurphyTrainer(model=tiny_model_path, args=args, murphy=cfg, tasks=tasks, executor=rec)
    trees, _, _ = trainer._grow(tasks)
    by_id = {t.task_id: t for t in tasks}
    nodes = [n for t in trees for n in t.nodes()]
    assert rec.programs == [by_id[t.task_id].program(n.code) for t in trees for n in t.nodes()]
    assert all(n.code == extract_program(n.completion) for n in nodes)  # the reading evaluation uses


@pytest.mark.parametrize("make, code", CASES, ids=IDS)
def test_mucode_oracle_labels_the_solution_correct(make, code, executor):
    from murphy_lab.baselines.mucode.rollouts import collect_rollouts

    (tree,) = collect_rollouts([make()], always(code), executor, rollouts=2, turns=2, progress=False)
    assert [n.reward for n in tree.nodes()] == [1.0, 1.0]  # visible tests
    assert [n.meta["correct"] for n in tree.nodes()] == [True, True]  # hidden tests (the oracle)


@pytest.mark.parametrize("selection", ["public+verifier", "verifier"])
def test_mucode_best_of_n_runs_the_program(selection, executor):
    from murphy_lab.baselines.mucode.inference import VerifierBestOfN
    from murphy_lab.evaluate import evaluate

    class Verifier:
        def score(self, prompts, completions):
            return [0.0] * len(prompts)

    sc = VerifierBestOfN(Verifier(), n=2, selection=selection)
    df = evaluate(
        always(FUNCTIONAL_SOLUTION),
        [functional_task()],
        executor,
        iters=(1,),
        runs=1,
        scaffold=sc,
        progress=False,
    )
    assert set(df["pass@1"]) == {100.0}


def test_reveal_chains_run_the_program():
    from murphy_lab.baselines.reveal.chain import program_of

    task = functional_task()
    assert program_of(task, FUNCTIONAL_SOLUTION) == task.program(FUNCTIONAL_SOLUTION)


def test_toy_failure_values_run_the_program(monkeypatch):
    import murphy_lab.toy.measure as measure

    class Sampler:  # a toy program that only runs with the task's program hook (a header defining `OFFSET`)
        def sample(self, prompts, n):
            return [["def f(x):\n    return x*2+OFFSET\n"] * n for _ in prompts]

    real = measure.make_tasks
    monkeypatch.setattr(
        measure,
        "make_tasks",
        lambda *a, **k: [
            dataclasses.replace(t, metadata={**t.metadata, "program_prefix": "OFFSET = 1\n"})
            for t in real(*a, **k)
        ],
    )
    kinds = measure.failure_values(Sampler(), n_tasks=3, g1=2, g2=2)
    # every attempt ran (with the header) and failed the lock informatively
    assert kinds and "uninformative" not in kinds
