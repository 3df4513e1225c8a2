import random

import pytest
from trees import informative_tree, random_tree, three_turn_tree

from murphy_lab.credit import assign_credit, mars, mers
from murphy_lab.prune import interp
from murphy_lab.tree import Node, RolloutTree


def credits(tree):
    return [n.credit for n in tree.nodes()]


def test_mars_credits_the_informative_failure_only():
    t = mars(informative_tree())
    a, b, c = t.root.children
    assert (a.credit, b.credit, c.credit) == (1.0, 0.0, 1.0)


def test_mars_three_turns_by_hand():
    # a1 = max(0.4, 1.0, 0.5) = 1.0; a = max(0.2, 1.0, 0.0) = 1.0; b = 0.6
    assert credits(mars(three_turn_tree())) == [1.0, 1.0, 1.0, 0.5, 0.0, 0.6]


def _best_path_reward(node):
    """Brute force: the best reward on any path from node down to a leaf (node itself included)."""
    paths, stack = [], [(node, [node.reward])]
    while stack:
        n, rs = stack.pop()
        if not n.children:
            paths.append(max(rs))
        for c in n.children:
            stack.append((c, rs + [c.reward]))
    return max(paths)


@pytest.mark.parametrize("seed", range(20))
def test_mars_equals_best_reward_over_root_to_leaf_paths(seed):
    t = mars(random_tree(random.Random(seed)))
    for n in t.nodes():
        assert n.credit == _best_path_reward(n)


def test_mers_gamma_one_by_hand():
    t = mers(informative_tree(), gamma=1.0)
    a, b, c = t.root.children
    assert a.credit == pytest.approx((0.0 + 1.0 * 0.5) / 2)
    assert b.credit == 0.0 and c.credit == 1.0


def test_mers_gamma_point_nine_three_turns_by_hand():
    t = mers(three_turn_tree(), gamma=0.9)
    a = t.root.children[0]
    a1 = a.children[0]
    assert a1.credit == pytest.approx((0.4 + 0.9 * 0.75) / 2)
    assert a.credit == pytest.approx((0.2 + 0.9 * (a1.credit + 0.0) / 2) / 2)


def test_mers_custom_z():
    t = mers(informative_tree(), gamma=1.0, z=lambda node, kids: 1.0)
    assert t.root.children[0].credit == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(10))
def test_mers_default_z_keeps_credit_in_unit_interval(seed):
    t = mers(random_tree(random.Random(seed), depth=4), gamma=1.0)
    assert all(0.0 <= n.credit <= 1.0 for n in t.nodes())


@pytest.mark.parametrize("gamma", [-0.1, 1.1])
def test_mers_rejects_gamma_outside_unit_interval(gamma):
    with pytest.raises(ValueError, match="gamma"):
        mers(informative_tree(), gamma=gamma)


def test_mers_rejects_non_positive_z():
    with pytest.raises(ValueError, match="z"):
        mers(informative_tree(), z=lambda n, k: 0.0)


def test_credit_rejects_empty_tree():
    with pytest.raises(ValueError, match="empty"):
        mars(RolloutTree(Node()))


def test_credit_rejects_reward_outside_unit_interval():
    with pytest.raises(ValueError, match="reward"):
        mars(RolloutTree(Node(children=[Node(reward=2.0), Node()])))


def _pruned_tree():
    # two turn-2 groups; InterP with b_grp=1 keeps only the high-variance one (a's), dropping b's [1.0, 1.0]
    a = Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)])
    b = Node(reward=0.0, children=[Node(reward=1.0), Node(reward=1.0)])
    return interp(RolloutTree(Node(children=[a, b])), b_grp=1)


def test_backup_on_pruned_ignores_dropped_children():
    t = mars(_pruned_tree(), backup_on="pruned")
    assert t.root.children[1].credit == 0.0  # its successful refinements were pruned


def test_backup_on_full_sees_dropped_children():
    t = mars(_pruned_tree(), backup_on="full")
    assert t.root.children[1].credit == 1.0


def test_backup_on_rejects_unknown_value():
    with pytest.raises(ValueError, match="backup_on"):
        mars(informative_tree(), backup_on="everything")


def test_assign_credit_none_is_immediate_reward():
    t = assign_credit(informative_tree(), credit="none")
    assert all(n.credit == n.reward for n in t.nodes())


def test_assign_credit_rejects_unknown_rule():
    with pytest.raises(ValueError, match="credit rule must be one of"):
        assign_credit(informative_tree(), credit="sum")


def _all_pass_group_tree():
    # turn-1 failures whose refinements are [0,0,0,0], [1,0,0,0], [0,1,0,1], [1,1,1,1] (docs/notation.md,
    # "Backup order"); InterP with b_grp = 2 keeps the two groups of non-zero variance, dropping the 4/4 one
    groups = [[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 1], [1, 1, 1, 1]]
    turn1 = [Node(reward=0.0, children=[Node(reward=float(r)) for r in g]) for g in groups]
    return interp(RolloutTree(Node(children=turn1)), b_grp=2)


def test_default_backup_keeps_the_credit_of_a_failure_whose_refinements_all_pass():
    assert [v.credit for v in mars(_all_pass_group_tree()).root.children] == [0.0, 1.0, 1.0, 1.0]


def test_backup_on_pruned_takes_that_credit_away():
    t = mars(_all_pass_group_tree(), backup_on="pruned")
    assert [v.credit for v in t.root.children] == [0.0, 1.0, 1.0, 0.0]
