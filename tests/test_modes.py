"""murphy_lab.modes (the mode table) and murphy_lab.scoring (score_tree, the one prune -> credit -> advantages pipeline)."""

from __future__ import annotations

import re

import pytest
from trees import paper_tree

from murphy_lab.config import MurphyConfig
from murphy_lab.credit import mers
from murphy_lab.grpo import group_advantages
from murphy_lab.modes import MODES, chains, grpo_mt, mode
from murphy_lab.prune import interp, intrap
from murphy_lab.scoring import Knobs, score_tree
from murphy_lab.tree import Node, RolloutTree
from murphy_lab.viz.widgets import compute, slider_budget


def advantages(tree: RolloutTree) -> list:
    return [(n.pruned, n.credit, n.advantage) for n in tree.nodes()]


def chain_tree() -> RolloutTree:
    """Two GRPO-MT chains: 0 -> 1 (solved at turn 2) and 0 -> 0."""
    return RolloutTree(
        Node(
            children=[
                Node(reward=0.0, children=[Node(reward=1.0)]),
                Node(reward=0.0, children=[Node(reward=0.0)]),
            ]
        )
    )


def test_score_tree_is_interp_intrap_credit_then_group_advantages():
    cfg = MurphyConfig(mode="murphy", credit="mers", gamma=0.9, b_grp=4, b_traj=4)
    by_hand = group_advantages(mers(intrap(interp(paper_tree(0), 4), 4), gamma=0.9))
    assert advantages(score_tree(paper_tree(0), cfg)) == advantages(by_hand)


def test_scoring_again_with_other_knobs_equals_scoring_fresh():
    tree = score_tree(paper_tree(1), b_grp=2, b_traj=2)
    assert advantages(score_tree(tree, credit="mars")) == advantages(score_tree(paper_tree(1)))


def test_the_widgets_compute_what_the_trainer_scores():
    cfg = MurphyConfig(mode="murphy", credit="mers", gamma=0.9, b_traj=4, backup_on="pruned")
    shown = compute(paper_tree(2), credit="mers", gamma=0.9, b_traj=4, backup_on="pruned")
    assert advantages(shown) == advantages(score_tree(paper_tree(2), cfg))


def test_a_zero_budget_is_off_only_at_the_slider():
    assert slider_budget(0) is None and slider_budget(3) == 3
    with pytest.raises(ValueError, match="b_grp"):
        score_tree(paper_tree(0), b_grp=0)  # the library's "off" is None


def test_grpo_mt_broadcasts_the_final_reward_of_each_chain():
    tree = score_tree(chain_tree(), mode="grpo_mt")
    assert [n.credit for n in tree.nodes()] == [1.0, 1.0, 0.0, 0.0]
    assert [len(c) for c in chains(tree)] == [2, 2]
    assert advantages(tree) == advantages(grpo_mt(chain_tree()))


def test_single_turn_grpo_trains_on_the_turn1_group_only():
    tree = score_tree(paper_tree(0), mode="grpo")
    assert all(n.pruned == (n.turn > 1) for n in tree.nodes())
    assert all((n.advantage is None) == (n.turn > 1) for n in tree.nodes())


def test_pruning_outside_murphy_is_refused_with_the_knob_named():
    with pytest.raises(ValueError, match="b_traj"):
        score_tree(chain_tree(), mode="grpo_mt", b_traj=2)


def test_unknown_knobs_and_modes_are_named():
    with pytest.raises(ValueError, match="b_group"):
        Knobs.of({"b_group": 4})
    with pytest.raises(ValueError, match="ppo"):
        score_tree(chain_tree(), mode="ppo")


@pytest.mark.parametrize(
    ("name", "g2", "turns", "field"),
    [("grpo", 8, 2, "turns"), ("grpo_mt", 8, 2, "g2"), ("murphy", 1, 2, "g2")],
)
def test_a_mode_names_the_field_its_shape_contradicts(name, g2, turns, field):
    assert [f for f, _ in mode(name).problems(g2, turns)] == [field]


def test_each_mode_accepts_the_shape_it_implies():
    assert not MODES["grpo"].problems(8, 1)
    assert not MODES["grpo_mt"].problems(1, 3)
    assert not MODES["murphy"].problems(8, 2) and not MODES["murphy"].problems(1, 1)


@pytest.mark.parametrize("module", ["murphy_lab.modes", "murphy_lab.credit", "murphy_lab.config"])
def test_importing_the_mode_and_credit_names_loads_no_torch(module):
    """The one list of mode names (modes.MODES) and of credit rules (credit.CREDIT_RULES) import without torch, so
    the config, the experiments' planning and the toy world read them and no copy is needed."""
    import subprocess
    import sys

    code = f"import sys, {module}; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_config_accepts_every_credit_rule_and_names_them_when_refusing():
    from murphy_lab.credit import CREDIT_RULES

    for name in CREDIT_RULES:
        MurphyConfig.for_profile("smoke", credit=name).validate()
    with pytest.raises(ValueError, match=re.escape(f"credit: must be one of {tuple(CREDIT_RULES)}")):
        MurphyConfig.for_profile("smoke", credit="sum").validate()


def test_a_mode_is_its_table_entry_scoring_and_weights_read_no_name(monkeypatch):
    """A new mode is one MODES entry: score_tree runs its rule, the config accepts it, and the trainer's group_sum
    weights come from its loss groups — no caller asks for its name."""
    from murphy_lab import modes
    from murphy_lab.modes import Mode, chain_group
    from murphy_lab.trainer.core import group_token_weights

    # a toy rule: the final attempt of each chain gets its reward as advantage
    def last_turn_only(trees, knobs):
        for tree in trees:
            for chain in chains(tree):
                chain[-1].credit = chain[-1].advantage = chain[-1].reward

    monkeypatch.setitem(modes.MODES, "last", Mode("last", "chains", last_turn_only, chain_group, g2=1))
    tree = score_tree(chain_tree(), mode="last")
    assert [(n.credit, n.advantage) for n in tree.nodes()] == [
        (None, None),
        (1.0, 1.0),
        (None, None),
        (0.0, 0.0),
    ]
    for n in tree.nodes():
        n.meta["completion_ids"] = [0] * 3
    # one group of 2 chains, each a sequence of its one kept row (3 tokens)
    w = group_token_weights([tree], "last")
    assert sorted(w.values()) == [1 / (2 * 3)] * 2
    assert MurphyConfig.for_profile("smoke", mode="last", g2=1).validate().mode == "last"
    with pytest.raises(ValueError, match="b_grp: pruning only applies to mode='murphy'"):
        MurphyConfig.for_profile("smoke", mode="last", g2=1, b_grp=2).validate()


def test_the_loss_groups_of_each_mode():
    tree = score_tree(paper_tree(0), b_traj=4)
    groups = MODES["murphy"].loss_groups(tree)
    # each kept member alone
    assert [len(g) for g in groups] == [len(m) for _, m in tree.groups(kept_only=True)]
    assert all(len(seq) == 1 for g in groups for seq in g)
    chained = score_tree(chain_tree(), mode="grpo_mt")
    # one group: the chains, each one sequence
    assert MODES["grpo_mt"].loss_groups(chained) == [chains(chained)]
