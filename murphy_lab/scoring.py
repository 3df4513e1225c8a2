"""`score_tree`: the ONE prune -> credit -> advantages pipeline, and the GRPO / GRPO-MT rules it applies.

A tree is scored as its mode says (`murphy_lab.modes`): the trainer scores every tree with `score_tree(tree,
config)`, and the widgets and notebooks call the same function with their own knobs, so the three cannot drift
apart. Pruning budgets are off when None (the widgets' sliders map their 0 to None).

In MURPHY's mode the credit rule is looked up in `credit.CREDIT_RULES`: its knobs are checked and filled from the
config's γ and `credit_args`, its backup fills the credit, and its advantages are GRPO inside every kept sibling
group — or, for a rule that brings its own baseline (MT-GRPO per turn index, GiGPO's anchor states, Kevin's
reward-to-go over the whole tree), the rule's `advantages` function, given `grpo.normalize` and the trees of one
task at once (`score_trees`).

GRPO-MT (the paper's natural multi-turn baseline; the paper does not define it exactly, so we do, here): G
independent chains per task, each up to S turns, one refinement per failure — a tree grown with `g1=G, g2=1`. The
chain's *final* reward R_i (reward of its last attempt) is broadcast to every turn of the chain:

    Â_i = ( R_i - mean_j R_j ) / ( std_j R_j + eps )      for every node of chain i     (Bessel std, eps = 1e-4)

so an informative failure and an uninformative one in two chains with the same final outcome get the same credit —
the coarse credit assignment MURPHY's retrospective backup replaces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from murphy_lab.credit import credit_rule
from murphy_lab.grpo import EPS, group_advantages, normalize
from murphy_lab.modes import mode
from murphy_lab.prune import interp, intrap, unprune
from murphy_lab.tree import Node, RolloutTree


# --- the baselines' rules ------------------------------------------------------------------------------------------
def chains(tree: RolloutTree) -> list[list[Node]]:
    """The G chains of a GRPO-MT tree: each turn-1 node followed by its single refinement, and so on."""
    out = []
    for head in tree.root.children:
        chain, node = [head], head
        while node.children:
            if len(node.children) != 1:
                raise ValueError(f"a GRPO-MT chain node has {len(node.children)} children; grow chains with g2=1")
            node = node.children[0]
            chain.append(node)
        out.append(chain)
    return out


def grpo_mt(tree: RolloutTree, eps: float = EPS) -> RolloutTree:
    """Fill credit (the chain's final reward) and advantage (normalised across chains) on every node."""
    tree.validate()
    cs = chains(tree)
    final = [chain[-1].reward for chain in cs]  # R_i: the chain's final reward
    for chain, r_final, adv in zip(cs, final, normalize(final, eps=eps)):
        for node in chain:
            node.credit = r_final  # broadcast to every turn of the chain
            node.advantage = adv  # Â_i, shared by all turns
    return tree


def grpo_single(tree: RolloutTree, eps: float = EPS) -> RolloutTree:
    """Single-turn GRPO: credit = reward, advantages inside the turn-1 group; deeper turns (if any) are ignored."""
    tree.validate()
    for n in tree.nodes():
        n.credit = n.reward
        if n.turn and n.turn > 1:
            n.pruned = True  # single-turn GRPO never trains on refinements
    return group_advantages(tree, eps=eps)


# --- the one pipeline ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Knobs:
    """What `score_tree` reads; MurphyConfig has every one of these fields under the same name."""

    mode: str = "murphy"
    credit: str = "mars"  # a name of credit.CREDIT_RULES ('mars', 'mers', 'none' = credit is the reward, ...)
    gamma: float = 1.0  # γ, the discount of every rule that reads one (MeRS, reward-to-go, turn credit, GiGPO)
    credit_args: Mapping = field(default_factory=dict)  # the rule's other knobs (credit.CREDIT_RULES), e.g. {omega: 0.5}
    b_grp: int | None = None  # InterP budget; None = off
    b_traj: int | None = None  # IntraP budget; None = off
    backup_on: str = "full"  # back credit up over all children ('full') or the kept ones ('pruned')
    prune_method: str = "loo"  # IntraP ranking: leave-one-out ΔVar ('loo') or the max-variance subset ('exact')

    @classmethod
    def of(cls, source: Any = None, **overrides: Any) -> Knobs:
        """Knobs from a MurphyConfig (or any object with these attributes), a mapping, or defaults; then overrides."""
        names = [f.name for f in fields(cls)]
        if source is None:
            base = {}
        elif isinstance(source, Mapping):
            base = dict(source)
        else:
            base = {k: getattr(source, k) for k in names if hasattr(source, k)}
        unknown = sorted(set(base) - set(names)) if isinstance(source, Mapping) else []
        unknown += sorted(set(overrides) - set(names))
        if unknown:
            raise ValueError(f"unknown scoring knob(s) {unknown}; known: {names}")
        return cls(**{**base, **overrides})


def score_tree(tree: RolloutTree, knobs: Any = None, **overrides: Any) -> RolloutTree:
    """Prune, back up credit and fill advantages on `tree` in place, as `knobs.mode` says; return the tree.

    `knobs` is a MurphyConfig, a `Knobs`, a mapping of Knobs fields, or None (MURPHY with MaRS, no pruning);
    `overrides` replace single knobs. Earlier pruning, credit and advantages on the tree are cleared first, so
    scoring a tree again with other knobs gives exactly what scoring it fresh gives. A rule that groups across the
    trees of one task (GiGPO) sees this tree alone; `score_trees` gives it all of them.
    """
    return score_trees([tree], knobs, **overrides)[0]


def score_trees(trees: Sequence[RolloutTree], knobs: Any = None, **overrides: Any) -> list[RolloutTree]:
    """`score_tree` over a batch: the same pipeline, with the trees of one task (same `task_id`) handed together to
    a rule whose advantages compare them (GiGPO's anchor states); every other rule scores each tree alone."""
    k = Knobs.of(knobs, **overrides)
    m = mode(k.mode)
    if not m.prunes and (k.b_grp is not None or k.b_traj is not None):
        raise ValueError(f"b_grp / b_traj: pruning only applies to mode='murphy' (mode is {k.mode!r}); use None")
    rule = credit_rule(k.credit)
    values = rule.knob_values(gamma=k.gamma if rule.discounted else None, **k.credit_args)  # one-line errors
    for tree in trees:
        unprune(tree)
        for n in tree.root.walk():
            n.credit = n.advantage = None
        if m.name == "grpo":
            grpo_single(tree)  # one group, credit = reward
        elif m.name == "grpo_mt":
            grpo_mt(tree)  # chain's final reward broadcast, normalised across the G chains
        else:
            if k.b_grp is not None:
                interp(tree, k.b_grp)  # InterP: keep the b_grp highest-variance groups per turn s >= 2
            if k.b_traj is not None:
                intrap(tree, k.b_traj, method=k.prune_method)  # IntraP: b_traj members per group
            rule.backup(tree, backup_on=k.backup_on, **rule.stage_values("backup", values))  # r~: MaRS, MeRS, ...
            if rule.advantages is None:
                group_advantages(tree)  # Â = (r~ - mean_g) / (std_g + 1e-4) inside every kept group
    if m.name == "murphy" and rule.advantages is not None:
        by_task: dict[str, list[RolloutTree]] = {}
        for tree in trees:
            by_task.setdefault(tree.task_id or str(id(tree)), []).append(tree)  # no task id: alone
        for task_trees in by_task.values():  # the rule's own baseline (MT-GRPO per turn, GiGPO anchors, Kevin)
            rule.advantages(task_trees, normalize, **rule.stage_values("advantages", values))
    return list(trees)


__all__ = ["Knobs", "chains", "grpo_mt", "grpo_single", "score_tree", "score_trees"]
