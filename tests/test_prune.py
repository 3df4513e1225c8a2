import itertools
import random

import pytest
from trees import paper_tree

from murphy_lab.prune import delta_var, interp, intrap, unprune, variance
from murphy_lab.tree import Node, RolloutTree


def kept(tree):
    return len(tree.nodes(kept_only=True))


@pytest.mark.parametrize("seed", range(5))
def test_paper_counts_unpruned_72(seed):
    assert kept(paper_tree(seed)) == 72


@pytest.mark.parametrize("seed", range(5))
def test_paper_counts_interp_keeps_40(seed):
    assert kept(interp(paper_tree(seed), b_grp=4)) == 40


@pytest.mark.parametrize("seed", range(5))
def test_paper_counts_intrap_keeps_36(seed):
    assert kept(intrap(paper_tree(seed), b_traj=4)) == 36


def test_interp_always_keeps_turn_one_group():
    t = interp(paper_tree(), b_grp=1)
    assert not any(n.pruned for n in t.root.children)


def test_interp_keeps_highest_variance_groups_by_hand():
    groups = [[0.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.25, 0.75]]
    t = RolloutTree(Node(children=[Node(reward=0.0, children=[Node(reward=r) for r in g]) for g in groups]))
    interp(t, b_grp=2)
    kept_groups = [i for i, v in enumerate(t.root.children) if not any(c.pruned for c in v.children)]
    assert kept_groups == [1, 3]  # variances 0, .25, 0, .0625


def test_interp_ties_keep_earlier_groups():
    t = RolloutTree(Node(children=[Node(children=[Node(reward=0.0), Node(reward=1.0)]) for _ in range(3)]))
    interp(t, b_grp=2)
    assert [any(c.pruned for c in v.children) for v in t.root.children] == [False, False, True]


def test_delta_var_by_hand():
    # Var([0,0,1]) = 2/9; removing a 0 leaves [0,1] (var 1/4); removing the 1 leaves [0,0] (var 0)
    assert delta_var([0.0, 0.0, 1.0]) == pytest.approx([2 / 9 - 1 / 4, 2 / 9 - 1 / 4, 2 / 9])


def test_intrap_keeps_largest_contributors_ties_by_sample_order():
    t = RolloutTree(Node(children=[Node(reward=r) for r in [0.5, 0.0, 0.5, 1.0, 0.0]]))
    intrap(t, b_traj=3)
    assert [n.reward for n in t.root.children if not n.pruned] == [0.0, 1.0, 0.0]


def test_intrap_exact_finds_the_max_variance_subset():
    rewards = [0.1, 0.9, 0.5, 0.45, 0.0, 1.0]
    t = intrap(RolloutTree(Node(children=[Node(reward=r) for r in rewards])), b_traj=3, method="exact")
    got = variance([n.reward for n in t.root.children if not n.pruned])
    best = max(variance(list(c)) for c in itertools.combinations(rewards, 3))
    assert got == pytest.approx(best)


def test_dropped_node_keeps_its_group_below():
    t = intrap(paper_tree(), b_traj=4)
    pruned_parents = [v for v in t.root.children if v.pruned]
    assert pruned_parents and all(len(v.kept_children()) == 4 for v in pruned_parents)


def test_unprune_restores_every_node():
    t = unprune(interp(paper_tree(), b_grp=2))
    assert kept(t) == 72


@pytest.mark.parametrize("b", [0, -1, 1.5, True])
def test_interp_rejects_non_positive_budget(b):
    with pytest.raises(ValueError, match="b_grp"):
        interp(paper_tree(), b_grp=b)


@pytest.mark.parametrize("b", [0, 1, 9])
def test_intrap_rejects_budget_below_two_or_above_group(b):
    with pytest.raises(ValueError, match="b_traj"):
        intrap(paper_tree(), b_traj=b)


def test_pruning_rejects_empty_tree():
    with pytest.raises(ValueError, match="empty"):
        intrap(RolloutTree(Node()), b_traj=2)


def test_intrap_tie_keeps_the_largest_variance_subset():
    # every ΔVar is equal; sample order alone would keep the four 1s, a zero-variance group (all advantages 0)
    t = intrap(RolloutTree(Node(children=[Node(reward=r) for r in [1, 1, 1, 1, 0, 0, 0, 0]])), b_traj=4)
    assert sorted(n.reward for n in t.root.children if not n.pruned) == [0, 0, 1, 1]


@pytest.mark.parametrize("seed", range(30))
def test_intrap_loo_keeps_the_best_subset_its_ranking_allows(seed):
    # brute force: among subsets holding every member whose ΔVar beats the edge, and tied members for the rest
    rng = random.Random(seed)
    rewards = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(rng.randint(3, 8))]
    b = rng.randint(2, len(rewards) - 1)
    t = intrap(RolloutTree(Node(children=[Node(reward=r) for r in rewards])), b_traj=b)
    got = [i for i, n in enumerate(t.root.children) if not n.pruned]
    dv = delta_var(rewards)
    edge = sorted(dv, reverse=True)[b - 1]
    allowed = [
        c
        for c in itertools.combinations(range(len(rewards)), b)
        if all(dv[i] >= edge - 1e-12 for i in c) and all(i in c for i, d in enumerate(dv) if d > edge + 1e-12)
    ]
    assert tuple(got) in allowed
    assert variance([rewards[i] for i in got]) == pytest.approx(
        max(variance([rewards[i] for i in c]) for c in allowed)
    )
