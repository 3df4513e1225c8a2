import math
import random

import pytest
from trees import informative_tree, paper_tree, random_tree, three_turn_tree

from murphy_lab.credit import (
    CREDIT_RULES,
    assign_credit,
    credit_rule,
    mars,
    mers,
    mt_grpo,
    mt_grpo_advantages,
    reward_to_go,
    treerpo,
    turn_credit,
)
from murphy_lab.grpo import normalize
from murphy_lab.prune import interp
from murphy_lab.scoring import score_tree, score_trees
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


# --- the multi-turn rules beside MaRS / MeRS (docs/credit_rules.md) -----------------------------------------------
def _chain(*rewards):
    node = None
    for r in reversed(rewards):
        node = Node(reward=r, children=[node] if node else [])
    return RolloutTree(Node(children=[node, Node(reward=0.0)]), task_id="chain")


def test_treerpo_is_the_recursive_mean_over_the_refinements_by_hand():
    a, b, c = treerpo(informative_tree()).root.children
    assert (a.credit, b.credit, c.credit) == (0.5, 0.0, 1.0)
    # three turns: a1 = mean(1.0, 0.5) = 0.75; a = mean(a1, a2) = (0.75 + 0.0) / 2 = 0.375, not the mean of its
    # three leaves (0.5): each refinement weighs as much as its siblings; its own reward 0.2 does not enter
    assert credits(treerpo(three_turn_tree())) == pytest.approx([0.375, 0.75, 1.0, 0.5, 0.0, 0.6])


def test_reward_to_go_by_hand():
    a = reward_to_go(informative_tree(), gamma=0.4).root.children[0]
    assert a.credit == pytest.approx(0.0 + 0.4 * 0.5)  # R = r + γ·mean R(children)
    t = reward_to_go(three_turn_tree(), gamma=0.5)
    a1_credit = 0.4 + 0.5 * 0.75
    assert credits(t) == pytest.approx([0.2 + 0.5 * (a1_credit + 0.0) / 2, a1_credit, 1.0, 0.5, 0.0, 0.6])


def test_reward_to_go_normalises_over_every_turn_of_the_tree_at_once():
    t = score_tree(three_turn_tree(), credit="reward_to_go", gamma=0.5)
    values = [n.credit for n in t.nodes()]
    assert [n.advantage for n in t.nodes()] == pytest.approx(normalize(values))  # one group: all six turns


def test_turn_credit_by_hand():
    a, b, c = turn_credit(informative_tree(), gamma=1.0).root.children
    # δ(a1) = 1 - 0 is split evenly over turns 2 and 1: a1 keeps 1/2, a receives mean(1/2, 0) = 1/4
    assert (a.credit, a.children[0].credit, a.children[1].credit, b.credit, c.credit) == (
        0.25,
        0.5,
        0.0,
        0.0,
        1.0,
    )
    a = turn_credit(informative_tree(), gamma=0.0).root.children[0]
    assert (a.credit, a.children[0].credit) == (0.0, 1.0)  # γ = 0: each turn keeps its own progress
    # three turns, γ = 1: δ = a 0.2, a1 0.2, its leaves 0.6 / 0.1, a2 -0.2; a turn-3 delta is split in thirds
    t = turn_credit(three_turn_tree(), gamma=1.0)
    a1 = 0.2 / 2 + (0.6 / 3 + 0.1 / 3) / 2
    a = 0.2 + ((0.2 / 2 + (0.6 / 3 + 0.1 / 3) / 2) + (-0.2 / 2)) / 2
    assert credits(t) == pytest.approx([a, a1, 0.6 / 3, 0.1 / 3, -0.2 / 2, 0.6])


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9, 1.0])
def test_turn_credit_on_a_chain_telescopes_to_the_final_score(gamma):
    t = turn_credit(_chain(0.2, 0.5, 0.25, 1.0), gamma=gamma)
    chain = list(t.root.children[0].walk())  # 0.2 -> 0.5 -> 0.25 -> 1.0
    # progress deltas: final - r(root) = 1.0
    assert len(chain) == 4 and sum(n.credit for n in chain) == pytest.approx(1.0)


def test_mt_grpo_normalises_turn_reward_and_outcome_per_turn_index_by_hand():
    t = score_tree(informative_tree(), credit="mt_grpo")
    (a, b, c), s = t.root.children, 3**-0.5  # turn 1: rewards [0, 0, 1] -> ±(1/3)/std, std = 1/√3
    a_t = [(0 - 1 / 3) / (s + 1e-4)] * 2 + [(1 - 1 / 3) / (s + 1e-4)]
    a_o = [0.0, -0.5 / (0.5 + 1e-4), 0.5 / (0.5 + 1e-4)]  # outcomes [0.5, 0, 1]: mean 0.5, std 0.5
    assert [a.advantage, b.advantage, c.advantage] == pytest.approx([x + y for x, y in zip(a_t, a_o)])
    # turn 2: rewards = outcomes = [1, 0, 0, 0] (mean 1/4, std 1/2): both terms are [1.5, -0.5, -0.5, -0.5]
    turn2 = [n.advantage for n in t.nodes() if n.turn == 2]
    assert turn2 == pytest.approx([3.0, -1.0, -1.0, -1.0], rel=1e-3)
    lam0 = score_tree(informative_tree(), credit="mt_grpo", credit_args={"lam": 0.0}).root.children
    assert [v.advantage for v in lam0] == pytest.approx(a_t)


def _refinements_score_higher_tree():
    # every refinement (turn 2) passes more tests than any first attempt: feedback helps
    groups = [(0.0, [0.75, 1.0]), (0.25, [0.75, 1.0]), (0.0, [1.0, 1.0])]
    return RolloutTree(
        Node(children=[Node(reward=r, children=[Node(reward=x) for x in kids]) for r, kids in groups])
    )


def test_mt_grpo_per_turn_index_is_unbiased_where_normalising_across_turns_is_not():
    """The bias the verl RFC on per-turn advantages describes: pooled over turns, the turn index decides the sign
    of the turn-reward term Â^T (λ = 0 isolates it)."""
    per_turn, pooled = _refinements_score_higher_tree(), _refinements_score_higher_tree()
    mt_grpo(per_turn), mt_grpo(pooled)
    mt_grpo_advantages([per_turn], normalize, lam=0.0)
    mt_grpo_advantages([pooled], normalize, lam=0.0, per_turn=False)
    for turn in (1, 2):
        assert sum(n.advantage for n in per_turn.nodes() if n.turn == turn) == pytest.approx(0.0, abs=1e-9)
    assert all(n.advantage < 0 for n in pooled.nodes() if n.turn == 1)  # even the best first attempt (0.25)
    assert all(n.advantage > 0 for n in pooled.nodes() if n.turn == 2)  # even the worst refinement (0.75)


def _duplicate_failures_tree(task_id="dup"):
    # a and b failed with the same program and feedback: one anchor state, their refinements one group
    a = Node(reward=0.0, code="x", feedback="f", children=[Node(reward=1.0), Node(reward=0.0)])
    b = Node(reward=0.0, code="x", feedback="f", children=[Node(reward=1.0), Node(reward=1.0)])
    c = Node(reward=0.0, code="y", feedback="g", children=[Node(reward=0.0), Node(reward=0.0)])
    return RolloutTree(Node(children=[a, b, c, Node(reward=1.0, code="z")]), task_id=task_id)


def test_gigpo_pools_refinements_of_identical_failures_by_hand():
    t = score_tree(_duplicate_failures_tree(), credit="gigpo", gamma=1.0, credit_args={"omega": 0.5})
    a, b, c, d = t.root.children
    episode = normalize([0.5, 1.0, 0.0, 1.0])  # returns R = r + mean R(children) of the four episodes
    # anchor: task prompt
    assert [v.advantage for v in (a, b, c, d)] == pytest.approx([1.5 * e for e in episode])
    step = normalize([1.0, 0.0, 1.0, 1.0])  # a's and b's refinements: one anchor group, [0.5, -1.5, 0.5, 0.5]
    assert [u.advantage for u in a.children + b.children] == pytest.approx(
        [
            episode[0] + 0.5 * step[0],
            episode[0] + 0.5 * step[1],
            episode[1] + 0.5 * step[2],
            episode[1] + 0.5 * step[3],
        ]
    )
    assert [u.advantage for u in c.children] == pytest.approx([episode[2]] * 2)  # identical returns: A^S = 0


def test_gigpo_groups_anchor_states_across_trees_of_one_task():
    t1, t2 = _duplicate_failures_tree(), _duplicate_failures_tree()
    t2.root.children[0].children[1].reward = 1.0  # a's refinements in the second tree: [1, 1]
    score_trees([t1, t2], credit="gigpo", gamma=1.0, credit_args={"omega": 1.0})
    alone = score_tree(_duplicate_failures_tree(), credit="gigpo", gamma=1.0)
    # the x/f anchor now holds 8 refinements (7 passing): a failing one is further below its group's mean
    assert t1.root.children[0].children[1].advantage != pytest.approx(
        alone.root.children[0].children[1].advantage
    )
    other = score_trees([_duplicate_failures_tree("p"), _duplicate_failures_tree("q")], credit="gigpo")
    assert [n.advantage for n in other[0].nodes()] == pytest.approx([n.advantage for n in alone.nodes()])


@pytest.mark.parametrize("name", list(CREDIT_RULES))
def test_every_rule_scores_a_pruned_tree_with_finite_advantages_on_kept_nodes_only(name):
    t = score_tree(paper_tree(), credit=name, b_grp=4)
    for n in t.nodes():
        assert (n.advantage is None) == n.pruned
        assert n.pruned or math.isfinite(n.advantage)


def test_every_rule_carries_a_label_a_source_and_knobs_in_range():
    labels = [r.table_label(g) for r in CREDIT_RULES.values() for g in r.ablation_gammas()]
    assert len(set(labels)) == len(labels)
    for r in CREDIT_RULES.values():
        assert r.label and r.source
        for k in r.knobs:
            assert k.low <= k.default <= k.high and all(k.low <= v <= k.high for v in k.ablate)
            assert k.stage in ("backup", "advantages")


def test_knob_values_fill_defaults_and_refuse_unknown_or_out_of_range_knobs():
    assert credit_rule("gigpo").knob_values() == {"gamma": 1.0, "omega": 1.0}
    assert credit_rule("mars").knob_values(gamma=0.3) == {}  # a rule without γ ignores the config's γ
    with pytest.raises(ValueError, match="has no knob 'omega'"):
        credit_rule("mt_grpo").knob_values(omega=1.0)
    with pytest.raises(ValueError, match=r"omega must lie in \[0, 2\], got 3"):
        credit_rule("gigpo").knob_values(omega=3)


def test_the_config_checks_a_rules_own_knobs():
    from murphy_lab.config import MurphyConfig

    MurphyConfig.for_profile("smoke", credit="gigpo", credit_args={"omega": 0.5}).validate()
    with pytest.raises(ValueError, match=r"^credit_args: credit rule 'gigpo': omega must lie in"):
        MurphyConfig.for_profile("smoke", credit="gigpo", credit_args={"omega": 5.0}).validate()


@pytest.mark.slow  # imports the experiments layer (pandas, the methods registry): ~15 s on a loaded machine
def test_the_ablation_pairs_name_the_variants_experiments_are_labelled_with():
    """CREDIT_PAIRS and the table labels are built from `CreditRule.variant`; an Experiment labels its runs with
    `Experiment.variant`: they must agree for every rule at every γ the ablation trains, or a verdict line is lost."""
    from murphy_lab.experiments.paper import CREDIT_NAMES
    from murphy_lab.experiments.plan import Experiment
    from murphy_lab.experiments.verdicts import CREDIT_PAIRS

    for rule in CREDIT_RULES.values():
        for g in rule.ablation_gammas():
            e = Experiment(profile="smoke", model="tiny", method="murphy", credit=rule.name, gamma=g)
            assert e.variant == rule.variant(g) and CREDIT_NAMES[e.variant] == rule.table_label(g)
            assert rule.name == "mars" or ("murphy:mars", f"murphy:{e.variant}") in CREDIT_PAIRS
