from types import SimpleNamespace

import pytest
from trees import informative_tree, paper_tree, three_turn_tree

from murphy_lab.tree import Node, RolloutTree, build_tree, build_trees, load_trees, save_trees


def test_node_defaults_make_hand_built_trees_easy():
    n = Node(children=[Node(reward=1.0)])
    assert n.reward == 0.0 and n.credit is None and n.advantage is None and not n.pruned


def test_turns_are_filled_from_depth():
    t = three_turn_tree()
    assert t.root.turn == 0
    assert [n.turn for n in t.nodes()] == [1, 2, 3, 3, 2, 1]


def test_groups_are_children_of_one_parent_breadth_first():
    t = informative_tree()
    groups = t.groups()
    assert [len(m) for _, m in groups] == [3, 2, 2]
    assert groups[0][0] is t.root
    assert all(m == p.children for p, m in groups)


def test_nodes_excludes_the_virtual_root_by_default():
    t = informative_tree()
    assert t.root not in t.nodes()
    assert t.root in t.nodes(include_root=True)
    assert len(t) == 7


def test_paper_tree_has_72_trajectories_in_9_groups():
    t = paper_tree()
    assert len(t.nodes()) == 72 and len(t.groups()) == 9


def test_json_round_trip_keeps_every_field(tmp_path):
    t = three_turn_tree()
    t.root.children[0].feedback = "assert f(2) == 7  # output: 5"
    t.root.children[0].meta = {"sample": 3}
    t.root.children[1].pruned = True
    path = tmp_path / "trees.jsonl"
    save_trees([t, informative_tree()], path)
    back = load_trees(path)
    assert len(back) == 2
    assert back[0].to_json() == t.to_json()
    assert back[0].root.children[0].feedback.startswith("assert")


def test_validate_rejects_an_empty_tree():
    with pytest.raises(ValueError, match="empty"):
        RolloutTree(Node()).validate()


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_validate_rejects_rewards_outside_unit_interval(bad):
    with pytest.raises(ValueError, match="reward"):
        RolloutTree(Node(children=[Node(reward=bad), Node()])).validate()


class CountingSampler:
    """Turn 1: wrong programs; refinements (prompts that quote feedback): correct ones."""

    def __init__(self):
        self.calls = []

    def __call__(self, prompts, n):
        self.calls.append((len(prompts), n))
        return [["good" if "Feedback" in p else "bad" for _ in range(n)] for p in prompts]


def execute(program, tests):
    ok = program == "good"
    return SimpleNamespace(
        reward=1.0 if ok else 0.0, feedback="" if ok else "wrong", status="passed" if ok else "failed"
    )


def test_build_tree_expands_only_failures_with_g2_children():
    t = build_tree("task", ["t"], CountingSampler(), execute, g1=3, g2=2, turns=2)
    assert len(t.root.children) == 3
    assert all(len(v.children) == 2 and v.reward == 0.0 for v in t.root.children)
    assert all(u.reward == 1.0 and u.is_leaf for v in t.root.children for u in v.children)
    assert all(u.prompt != v.prompt and "wrong" in u.prompt for v in t.root.children for u in v.children)


def test_refine_is_handed_the_task_not_the_turn1_prompt():
    seen = []

    def refine(task, code, feedback):
        seen.append(task)
        return f"{task['statement']} Feedback: {feedback}"

    tasks = [{"statement": "A"}, {"statement": "B"}]
    build_trees(
        ["wrapped A", "wrapped B"],
        [[], []],
        CountingSampler(),
        execute,
        g1=2,
        g2=2,
        turns=2,
        refine=refine,
        tasks=tasks,
    )
    assert seen == [tasks[0]] * 2 + [tasks[1]] * 2


def test_refine_is_handed_the_prompt_when_no_tasks_are_given():
    seen = []
    build_tree(
        "q1",
        [],
        CountingSampler(),
        execute,
        g1=2,
        g2=2,
        turns=2,
        refine=lambda task, code, fb: seen.append(task) or "Feedback",
    )
    assert seen == ["q1", "q1"]


def test_tasks_must_match_prompts_in_length():
    with pytest.raises(ValueError, match="tasks"):
        build_trees(["a", "b"], [[], []], CountingSampler(), execute, g1=2, tasks=[{}])


def test_build_trees_makes_one_sample_call_per_turn():
    sampler = CountingSampler()
    build_trees(["a", "b", "c"], [[], [], []], sampler, execute, g1=4, g2=3, turns=3)
    # turn 1: 3 prompts x 4; turn 2: 12 failed nodes x 3; turn 3: nothing left open (all solved)
    assert sampler.calls == [(3, 4), (12, 3)]


def test_build_trees_uses_run_many_once_per_turn():
    class Batch:
        def __init__(self):
            self.batches = []

        def run_many(self, jobs):
            self.batches.append(len(jobs))
            return [execute(*j) for j in jobs]

        def run(self, *a):  # pragma: no cover - must not be used
            raise AssertionError("run() called per program")

    ex = Batch()
    build_trees(["a", "b"], [[], []], CountingSampler(), ex, g1=2, g2=2, turns=2)
    assert ex.batches == [4, 8]


@pytest.mark.parametrize("kw", [{"g1": 1}, {"g2": 0}, {"turns": 0}])
def test_build_tree_rejects_impossible_sizes(kw):
    with pytest.raises(ValueError, match=next(iter(kw))):
        build_tree("task", [], CountingSampler(), execute, **kw)
