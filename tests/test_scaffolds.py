"""Refinement scaffolds (Reflexion, LATS, DoT): same Iter-k contract, batched phases, honest budgets."""

from __future__ import annotations

import pytest

from murphy_lab.evaluate import evaluate
from murphy_lab.policy import ScriptedPolicy, TransformersPolicy
from murphy_lab.scaffolds import LATS, DoT, Reflexion, get_scaffold, sample_requests
from murphy_lab.scaffolds.dot import most_novel
from murphy_lab.tasks import Task

WRONG = "def add(a, b):\n    return a - b\n"
HALF = "def add(a, b):\n    return 3\n"  # passes add(1, 2) == 3 only
RIGHT = "def add(a, b):\n    return a + b\n"


def add_task(i: int = 0) -> Task:
    return Task(
        task_id=f"add{i}",
        prompt=f"Write add(a, b) that returns a + b. ({i})",
        visible_tests=["assert add(1, 2) == 3", "assert add(5, 5) == 10"],
        hidden_tests=["assert add(2, 2) == 4", "assert add(0, 0) == 0"],
    )


def script(first=(WRONG,), repair=RIGHT, reflection="Use + instead of -."):
    """Turn-1 prompts cycle through `first`; reflection requests get `reflection`; repair prompts get `repair`."""

    def fn(prompt, n):
        if "say why the attempt fails" in prompt:
            return [reflection] * n
        if "Is the candidate correct" in prompt:
            return ["4"] * n
        if "### Feedback:" in prompt:
            return [repair] * n
        return [first[j % len(first)] for j in range(n)]

    return fn


@pytest.mark.parametrize("name", ["reflexion", "lats", "dot"])
def test_feedback_policy_is_repaired_within_three_attempts(name, executor):
    df = evaluate(
        ScriptedPolicy(script()),
        [add_task(0), add_task(1)],
        executor,
        iters=(1, 3),
        runs=2,
        scaffold=name,
        progress=False,
    )
    assert list(df["pass@1"]) == [0.0, 100.0]


@pytest.mark.parametrize("name", ["reflexion", "lats", "dot"])
def test_every_model_call_is_counted(name, executor):
    (ep,) = get_scaffold(name).run([add_task()], ScriptedPolicy(script(repair=WRONG)), executor, budget=3)
    extra_calls = sum(len(e.get("candidates", [None])) for e in ep.extra)  # DoT's entries hold n reflections
    assert ep.total_calls == len(ep.attempts) + extra_calls == ep.calls[-1]


@pytest.mark.parametrize("name", ["reflexion", "lats", "dot"])
def test_budget_caps_attempts(name, executor):
    (ep,) = get_scaffold(name).run([add_task()], ScriptedPolicy(script(repair=WRONG)), executor, budget=3)
    assert len(ep.attempts) == 3 and len(ep.held) == 3


def test_get_scaffold_rejects_unknown_names():
    with pytest.raises(ValueError, match="scaffold must be one of"):
        get_scaffold("tot")


def test_get_scaffold_passes_instances_through():
    lats = LATS(width=3)
    assert get_scaffold(lats) is lats


def test_solve_returns_the_held_program_and_transcript(executor):
    program, ep = Reflexion().solve(add_task(), ScriptedPolicy(script()), executor, k=3)
    assert program == RIGHT and [a.code for a in ep.attempts] == [WRONG, RIGHT]


def test_identical_prompts_are_merged_into_n():
    policy = ScriptedPolicy(lambda p, n: [p] * n)
    out = sample_requests(policy, [("a", 1), ("a", 1), ("b", 1), ("b", 1)])
    assert policy.history == [(["a", "b"], 2)] and [o[0][0] for o in out] == ["a", "a", "b", "b"]


def test_mixed_request_sizes_are_flattened_into_one_call():
    policy = ScriptedPolicy(lambda p, n: [p] * n)
    out = sample_requests(policy, [("a", 2), ("b", 1)])
    assert policy.history == [(["a", "a", "b"], 1)] and [len(o) for o in out] == [2, 1]


def test_reflexion_makes_one_sample_call_per_round(executor):
    policy = ScriptedPolicy(script(repair=WRONG))
    Reflexion().run([add_task(0), add_task(1)], policy, executor, budget=3, runs=2)
    assert policy.calls == 3


def test_lats_expands_the_child_with_the_higher_value(executor):
    lats = LATS(width=2, reflect=False)
    (ep,) = lats.run(
        [add_task()], ScriptedPolicy(script(first=(WRONG, HALF), repair=WRONG)), executor, budget=3
    )
    assert [a.reward for a in ep.attempts[:2]] == [0.0, 0.5] and ep.attempts[2].parent == 1


def test_lats_holds_the_best_visible_program(executor):
    (ep,) = LATS(width=2).run(
        [add_task()], ScriptedPolicy(script(first=(HALF, WRONG), repair=WRONG)), executor, budget=4
    )
    assert ep.held_after(4) == 0


def test_lats_reflection_reaches_the_repair_prompt(executor):
    (ep,) = LATS(width=1).run([add_task()], ScriptedPolicy(script()), executor, budget=2)
    assert "### Notes:\n- Use + instead of -." in ep.attempts[1].prompt


def test_lats_self_evaluation_is_recorded(executor):
    (ep,) = LATS(width=2, self_eval=True, reflect=False).run(
        [add_task()], ScriptedPolicy(script(repair=WRONG)), executor, budget=2
    )
    assert [e["score"] for e in ep.extra if e["kind"] == "self_eval"] == [0.4, 0.4]


def test_dot_prefers_the_reflection_unlike_its_memory():
    assert most_novel(["use plus", "check the sign of b", "use plus please"], ["use plus"]) == 1


def test_dot_quotes_its_memory_of_reflections(executor):
    count = iter(range(100))

    def fn(prompt, n):
        if "say why the attempt fails" in prompt:
            return [f"idea number {next(count)}" for _ in range(n)]
        return [WRONG] * n

    (ep,) = DoT(n_reflections=2).run([add_task()], ScriptedPolicy(fn), executor, budget=3)
    assert "- idea number 0\n- idea number 2" in ep.attempts[2].prompt


def test_dot_counts_reflections_in_the_budget(executor):
    (ep,) = DoT(n_reflections=3).run([add_task()], ScriptedPolicy(script(repair=WRONG)), executor, budget=2)
    assert ep.cost_after(2)[0] == 1 + 3 + 1


@pytest.mark.parametrize("name", ["reflexion", "lats", "dot"])
def test_tiny_model_runs_every_scaffold(name, tiny_model_path, executor):
    policy = TransformersPolicy(tiny_model_path, max_new_tokens=6)
    (ep,) = get_scaffold(name).run([add_task()], policy, executor, budget=2, seed=0)
    assert len(ep.attempts) == 2 and ep.total_tokens > 0
