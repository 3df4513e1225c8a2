"""build_task_trees: MURPHY's prompts on top of tree.build_trees, one generate call and one execution batch per turn."""

from __future__ import annotations

import pytest

from murphy_lab import prompts as P
from murphy_lab.policy import ScriptedPolicy, TransformersPolicy
from murphy_lab.rollout import build_task_trees, load_trees
from murphy_lab.tasks import Task

WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"


def add_task(i: int = 0, difficulty: str = "easy") -> Task:
    return Task(
        task_id=f"add{i}",
        prompt=f"Write add(a, b) that returns a + b. ({i})",
        visible_tests=["assert add(1, 2) == 3"],
        hidden_tests=["assert add(2, 2) == 4", "assert add(0, 0) == 0"],
        difficulty=difficulty,
        source="test",
    )


class Counting:
    """Wraps an executor and counts `run_many` batches."""

    def __init__(self, executor):
        self.executor, self.batches = executor, 0

    def run_many(self, jobs):
        self.batches += 1
        return self.executor.run_many(jobs)


def feedback_fixes(prompt, n):
    """Wrong at turn 1, right when the prompt carries feedback."""
    return [RIGHT if "### Feedback:" in prompt else WRONG] * n


def test_one_sample_call_per_turn(executor):
    policy = ScriptedPolicy(lambda p, n: [WRONG] * n)
    build_task_trees([add_task(0), add_task(1)], policy, executor, g1=2, g2=2, turns=3, progress=False)
    assert policy.calls == 3


def test_one_execution_batch_per_turn(executor):
    counting = Counting(executor)
    build_task_trees(
        [add_task(0), add_task(1)],
        ScriptedPolicy(lambda p, n: [WRONG] * n),
        counting,
        g1=2,
        g2=2,
        turns=2,
        progress=False,
    )
    assert counting.batches == 2


def test_failed_candidates_get_g2_children(executor):
    (tree,) = build_task_trees(
        [add_task()], ScriptedPolicy(lambda p, n: [WRONG] * n), executor, g1=3, g2=2, turns=2, progress=False
    )
    assert len(tree.root.children) == 3 and [len(c.children) for c in tree.root.children] == [2, 2, 2]


def test_solved_candidates_are_leaves(executor):
    (tree,) = build_task_trees(
        [add_task()], ScriptedPolicy(lambda p, n: [RIGHT] * n), executor, g1=2, g2=2, turns=2, progress=False
    )
    assert len(tree) == 2 and all(c.is_leaf and c.reward == 1.0 for c in tree.root.children)


def test_turn1_prompt_is_the_first_prompt(executor):
    task = add_task()
    (tree,) = build_task_trees([task], ScriptedPolicy(feedback_fixes), executor, g1=2, g2=1, progress=False)
    assert tree.root.children[0].prompt == P.first_prompt(task.prompt)


def test_refinement_prompt_quotes_task_code_and_feedback(executor):
    task = add_task()
    (tree,) = build_task_trees([task], ScriptedPolicy(feedback_fixes), executor, g1=2, g2=1, progress=False)
    parent = tree.root.children[0]
    assert parent.children[0].prompt == P.refine_prompt(task.prompt, parent.code, parent.feedback)
    assert parent.children[0].reward == 1.0


def test_rewards_come_from_the_chosen_tests(executor):
    half = "def add(a, b):\n    return a + b if a else 99\n"  # visible: passes; hidden: 1 of 2
    policy = ScriptedPolicy(lambda p, n: [half] * n)
    (hidden,) = build_task_trees([add_task()], policy, executor, g1=2, turns=1, progress=False)
    (visible,) = build_task_trees(
        [add_task()], policy, executor, g1=2, turns=1, reward_tests="visible", progress=False
    )
    assert hidden.root.children[0].reward == 0.5 and visible.root.children[0].reward == 1.0


def test_trees_carry_task_id_and_meta(executor):
    trees = build_task_trees(
        [add_task(0, "easy"), add_task(1, "hard")],
        ScriptedPolicy(feedback_fixes),
        executor,
        g1=2,
        g2=1,
        progress=False,
    )
    assert [t.task_id for t in trees] == ["add0", "add1"]
    assert trees[1].meta["difficulty"] == "hard" and trees[1].meta["reward_tests"] == "hidden"


def test_trees_are_saved_as_json_lines(executor, tmp_path):
    path = str(tmp_path / "trees.jsonl")
    trees = build_task_trees(
        [add_task(0), add_task(1)],
        ScriptedPolicy(feedback_fixes),
        executor,
        g1=2,
        g2=1,
        progress=False,
        path=path,
    )
    loaded = load_trees(path)
    assert [len(t) for t in loaded] == [len(t) for t in trees] == [4, 4]
    assert loaded[0].root.children[0].children[0].code == RIGHT


def test_sampling_keywords_reach_the_policy(executor):
    seen = []

    class Spy(ScriptedPolicy):
        def sample(self, prompts, n, **kw):
            seen.append(kw)
            return super().sample(prompts, n, **kw)

    build_task_trees(
        [add_task()], Spy(feedback_fixes), executor, g1=2, turns=1, progress=False, temperature=0.7
    )
    assert seen == [{"temperature": 0.7}]


def test_unknown_tests_choice_is_rejected(executor):
    with pytest.raises(ValueError, match="tests must be"):
        build_task_trees([add_task()], ScriptedPolicy(feedback_fixes), executor, reward_tests="all")


def test_task_without_the_chosen_tests_is_rejected(executor):
    task = Task(task_id="t", prompt="p", visible_tests=["assert True"])
    with pytest.raises(ValueError, match="no hidden tests"):
        build_task_trees([task], ScriptedPolicy(feedback_fixes), executor)


def test_tiny_model_grows_trees_with_one_generate_per_turn(tiny_model_path, executor):
    policy = TransformersPolicy(tiny_model_path, max_new_tokens=8)
    trees = build_task_trees(
        [add_task(0), add_task(1)], policy, executor, g1=2, g2=2, turns=2, progress=False, seed=0
    )
    # a random-init model never solves the task: every turn-1 candidate is refined
    assert policy.calls == 2 and [len(t) for t in trees] == [2 + 4, 2 + 4]
    assert all(n.prompt for t in trees for n in t.nodes())
