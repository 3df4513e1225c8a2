"""`score_tree`: the ONE entrance to scoring — clear a tree, then score it as its mode says (`Mode.score`).

The trainer scores every round's trees with `score_trees(trees, config)`, and the widgets and notebooks call
`score_tree` with their own knobs, so the three cannot drift apart. What a mode does — GRPO's turn-1 group,
GRPO-MT's chains (`modes.grpo_mt`, its definition), MURPHY's prune -> credit rule backup -> advantages
(`modes.tree_credit`) — is its entry in `murphy_lab.modes.MODES`; this module holds the knobs every rule reads and
checks them once. Pruning budgets are off when None (the widgets' sliders map their 0 to None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from murphy_lab.credit import credit_rule
from murphy_lab.modes import mode, pruning_modes
from murphy_lab.prune import unprune
from murphy_lab.tree import RolloutTree


# --- the one pipeline ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Knobs:
    """What `score_tree` reads; MurphyConfig has every one of these fields under the same name."""

    mode: str = "murphy"
    credit: str = "mars"  # a name of credit.CREDIT_RULES ('mars', 'mers', 'none' = credit is the reward, ...)
    # γ, the discount of every rule that reads one (MeRS, reward-to-go, turn credit, GiGPO)
    gamma: float = 1.0
    # the rule's other knobs (credit.CREDIT_RULES), e.g. {omega: 0.5}
    credit_args: Mapping = field(default_factory=dict)
    b_grp: int | None = None  # InterP budget; None = off
    b_traj: int | None = None  # IntraP budget; None = off
    backup_on: str = "full"  # back credit up over all children ('full') or the kept ones ('pruned')
    # IntraP ranking: leave-one-out ΔVar ('loo') or the max-variance subset ('exact')
    prune_method: str = "loo"

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
        raise ValueError(
            f"b_grp / b_traj: pruning only applies to {pruning_modes()} (mode is {k.mode!r}); use None"
        )
    rule = credit_rule(k.credit)
    # one-line errors, in every mode
    rule.knob_values(gamma=k.gamma if rule.discounted else None, **k.credit_args)
    for tree in trees:
        unprune(tree)
        for n in tree.root.walk():
            n.credit = n.advantage = None
    m.score(trees, k)  # the mode's rule: grpo_single, grpo_mt, or prune -> credit -> advantages (modes.py)
    return list(trees)


__all__ = ["Knobs", "score_tree", "score_trees"]
