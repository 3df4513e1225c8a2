"""GRPO, GRPO-MT and MURPHY as data that carries its behaviour: what each mode grows per task, the G2 / S it
implies, how it scores a batch of trees, and the groups of sequences its objective averages over.

    mode      grows          G2 / S             scoring rule (`Mode.score`)                        loss groups
    grpo      one group      S = 1              credit = reward, GRPO in the turn-1 group          the kept sibling
                                                (`grpo_single`)                                    groups, a node
    grpo_mt   G chains       G2 = 1, any S      the chain's final reward, normalised across the    the G chains, a
                                                G chains (`grpo_mt`)                               chain
    murphy    the tree       G2 >= 2 if S > 1   InterP / IntraP, the credit rule's backup, GRPO    the kept sibling
                                                in every kept group or the rule's own baseline     groups, a node
                                                (`tree_credit`)

`MODES` is the one table of modes: `MurphyConfig.validate` checks a config against its mode (`Mode.problems`,
`Mode.prunes`), a method names its mode (`murphy_lab.methods.Method.mode`) and takes its fields (`Mode.fields`),
`murphy_lab.scoring.score_trees` scores trees with `Mode.score`, and the trainer weighs every token by
`Mode.loss_groups` (`trainer.core.group_token_weights`). Nothing outside this table asks a mode's name. A new mode
is one entry here, its rule and groups beside it. Importing it loads no torch (`murphy_lab.grpo` imports torch only
inside its loss functions), so the config and the planning read the table freely.

GRPO-MT (the paper's natural multi-turn baseline; the paper does not define it exactly, so we do, here): G
independent chains per task, each up to S turns, one refinement per failure — a tree grown with `g1=G, g2=1`. The
chain's *final* reward R_i (reward of its last attempt) is broadcast to every turn of the chain:

    Â_i = ( R_i - mean_j R_j ) / ( std_j R_j + eps )      for every node of chain i     (Bessel std, eps = 1e-4)

so an informative failure and an uninformative one in two chains with the same final outcome get the same credit —
the coarse credit assignment MURPHY's retrospective backup replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from murphy_lab.credit import credit_rule
from murphy_lab.grpo import EPS, group_advantages, normalize
from murphy_lab.prune import interp, intrap
from murphy_lab.suggest import registered
from murphy_lab.tree import Node, RolloutTree

# (one round's trees, scoring.Knobs) -> credit, advantages
Score = Callable[[Sequence[RolloutTree], Any], None]
# tree -> groups g, each a list of sequences o (node lists)
Groups = Callable[[RolloutTree], list[list[list[Node]]]]


# --- the scoring rules -------------------------------------------------------------------------------------------
def chains(tree: RolloutTree) -> list[list[Node]]:
    """The G chains of a GRPO-MT tree: each turn-1 node followed by its single refinement, and so on."""
    out = []
    for head in tree.root.children:
        chain, node = [head], head
        while node.children:
            if len(node.children) != 1:
                raise ValueError(
                    f"a GRPO-MT chain node has {len(node.children)} children; grow chains with g2=1"
                )
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


def single_turn(trees: Sequence[RolloutTree], knobs: Any) -> None:
    """GRPO's scoring rule: `grpo_single` on every tree (one group, credit = reward; the knobs do not apply)."""
    for tree in trees:
        grpo_single(tree)


def final_reward(trees: Sequence[RolloutTree], knobs: Any) -> None:
    """GRPO-MT's scoring rule: `grpo_mt` on every tree (the chain's final reward, normalised across the G chains)."""
    for tree in trees:
        grpo_mt(tree)


def tree_credit(trees: Sequence[RolloutTree], knobs: Any) -> None:
    """MURPHY's scoring rule: prune -> the credit rule's backup -> advantages, with the knobs of `scoring.Knobs`.

    Advantages are GRPO inside every kept sibling group — or, for a rule that brings its own baseline (MT-GRPO per
    turn index, GiGPO's anchor states, Kevin's reward-to-go over the whole tree), the rule's `advantages` function,
    given `grpo.normalize` and the trees of one task (same `task_id`) at once.
    """
    k, rule = knobs, credit_rule(knobs.credit)
    values = rule.knob_values(gamma=k.gamma if rule.discounted else None, **k.credit_args)  # one-line errors
    for tree in trees:
        if k.b_grp is not None:
            interp(tree, k.b_grp)  # InterP: keep the b_grp highest-variance groups per turn s >= 2
        if k.b_traj is not None:
            intrap(tree, k.b_traj, method=k.prune_method)  # IntraP: b_traj members per group
        rule.backup(tree, backup_on=k.backup_on, **rule.stage_values("backup", values))  # r~: MaRS, MeRS, ...
        if rule.advantages is None:
            group_advantages(tree)  # Â = (r~ - mean_g) / (std_g + 1e-4) inside every kept group
    if rule.advantages is not None:
        by_task: dict[str, list[RolloutTree]] = {}
        for tree in trees:
            by_task.setdefault(tree.task_id or str(id(tree)), []).append(tree)  # no task id: alone
        # the rule's own baseline (MT-GRPO per turn, GiGPO anchors, Kevin)
        for task_trees in by_task.values():
            rule.advantages(task_trees, normalize, **rule.stage_values("advantages", values))


# --- the loss groups ----------------------------------------------------------------------------------------------
def sibling_groups(tree: RolloutTree) -> list[list[list[Node]]]:
    """Every kept response group; each member with an advantage is one sequence (GRPO's and MURPHY's groups)."""
    groups = [[[m] for m in members if m.advantage is not None] for _, members in tree.groups(kept_only=True)]
    return [g for g in groups if g]


def chain_group(tree: RolloutTree) -> list[list[list[Node]]]:
    """One group, the tree's G chains; a chain's kept turns with an advantage are one sequence (GRPO-MT: the
    advantage belongs to the chain, so its turns' completions count as one)."""
    kept = [[n for n in chain if not n.pruned and n.advantage is not None] for chain in chains(tree)]
    kept = [chain for chain in kept if chain]
    return [kept] if kept else []


# --- the table ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mode:
    """What a method grows per task, which G2 / S it implies (None: any value the config gives), how its trees are
    scored and which groups of sequences its objective sums."""

    name: str
    why: str  # why the mode fixes G2 / S (quoted in the config's errors)
    score: Score  # fills credit and advantage on a batch of trees (after `scoring.score_trees` cleared them)
    loss_groups: Groups  # the objective's groups of one tree: w(token) = 1 / (|g| · |o|) (trainer.core)
    turns: int | None = None  # S fixed by the mode
    g2: int | None = None  # G2 fixed by the mode
    min_g2: int = 1  # the smallest G2 when refinements are grown (S > 1)
    prunes: bool = False  # InterP / IntraP apply

    def fields(self) -> dict[str, Any]:
        """The config fields this mode implies: `MurphyConfig(**mode("grpo_mt").fields())` grows G chains."""
        out: dict[str, Any] = {"mode": self.name}
        if self.turns is not None:
            out["turns"] = self.turns
        if self.g2 is not None:
            out["g2"] = self.g2
        return out

    def problems(self, g2: int, turns: int) -> list[tuple[str, str]]:
        """(field, message) for every way `g2` / `turns` contradict this mode (empty when they fit)."""
        out = []
        if self.turns is not None and turns != self.turns:
            out.append(("turns", f"must be {self.turns} for mode={self.name!r} ({self.why})"))
        if self.g2 is not None and g2 != self.g2:
            out.append(("g2", f"must be {self.g2} for mode={self.name!r} ({self.why})"))
        if turns > 1 and g2 < self.min_g2:
            out.append(("g2", f"must be >= {self.min_g2} for mode={self.name!r} ({self.why})"))
        return out


MODES: dict[str, Mode] = {
    "murphy": Mode(
        "murphy", "a refinement group needs two members", tree_credit, sibling_groups, min_g2=2, prunes=True
    ),
    "grpo_mt": Mode("grpo_mt", "one refinement per failure: G chains", final_reward, chain_group, g2=1),
    "grpo": Mode("grpo", "single-turn GRPO", single_turn, sibling_groups, turns=1),
}


def mode(name: str | Mode) -> Mode:
    """The Mode called `name` (a Mode is returned as it is; ValueError naming the known ones otherwise)."""
    return registered(name, MODES, Mode, f"mode must be one of {tuple(MODES)}, got {name!r}")


def pruning_modes() -> str:
    """The modes that prune, for error messages: "mode='murphy'"."""
    return " or ".join(f"mode={m.name!r}" for m in MODES.values() if m.prunes)


__all__ = [
    "MODES",
    "Mode",
    "chain_group",
    "chains",
    "final_reward",
    "grpo_mt",
    "grpo_single",
    "mode",
    "pruning_modes",
    "sibling_groups",
    "single_turn",
    "tree_credit",
]
