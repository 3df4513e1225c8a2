"""Retrospective credit assignment (MURPHY §3.2): back successes of refinements up to the attempts that led there.

Computed bottom-up, leaves first, so a failed attempt whose feedback enabled a successful refinement is credited:

    leaf:  r~(v) = r(v)
    MaRS:  r~(v) = max( r(v), max_{u in C(v)} r~(u) )                 (max-reward strategy)
    MeRS:  r~(v) = ( r(v) + gamma * mean_{u in C(v)} r~(u) ) / Z(v)    (mean-reward strategy)

The paper states Z = 2 for unsolved (expanded) nodes and Z = 1 for terminal nodes in the two-turn setting; our
default Z(v) = 1 + [v has children] generalises that to any depth and keeps r~ in [0, 1]. Pass `z=` to change it.

`backup_on="full"` (default) backs up over every child, pruned or not: pruning only filters what enters the
gradient, as the paper's text says. `"pruned"` backs up over kept children only, the order of the paper's
flowchart (prune, then back up); a node all of whose children were pruned is then a leaf, so InterP can take the
credit of a failure whose refinements all pass (docs/notation.md, "Backup order", has the example). Both functions
fill `node.credit` on every node (the virtual root included) and return the tree. `CREDIT_RULES` names every rule
(`assign_credit(tree, credit=...)` dispatches by name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from murphy_lab.tree import Node, RolloutTree

ZFn = Callable[[Node, list[Node]], float]


def default_z(node: Node, children: list[Node]) -> float:
    """Z(v) = 1 + [v has children]: 2 for an expanded node, 1 for a terminal one (the paper's two-turn values)."""
    return 1.0 + (1.0 if children else 0.0)


def _children(node: Node, backup_on: str) -> list[Node]:
    if backup_on == "pruned":
        return node.kept_children()
    if backup_on == "full":
        return list(node.children)
    raise ValueError(f"backup_on must be 'pruned' or 'full', got {backup_on!r}")


def _post_order(root: Node) -> list[Node]:
    order = list(root.walk())  # pre-order; reversed, every child comes before its parent
    return order[::-1]


def mars(tree: RolloutTree, backup_on: str = "full") -> RolloutTree:
    """MaRS: credit every node with the best reward reachable through its refinements.

    >>> t = RolloutTree(Node(children=[Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)])]))
    >>> [n.credit for n in mars(t).nodes()]
    [1.0, 1.0, 0.0]
    """
    tree.validate()
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        best_child = max((c.credit for c in kids), default=node.reward)
        node.credit = max(node.reward, best_child)  # MaRS: r~(v) = max(r(v), max_{u in C(v)} r~(u))
    return tree


def mers(tree: RolloutTree, gamma: float = 1.0, z: ZFn = default_z, backup_on: str = "full") -> RolloutTree:
    """MeRS: credit every node with its own reward plus the discounted mean credit of its refinements, over Z(v).

    `gamma` is the paper's γ (0.9 or 1.0 in its ablations); `z(node, children) -> float > 0` is Z(v).
    """
    if not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    tree.validate()
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        if not kids:
            node.credit = node.reward  # leaf: r~(v) = r(v)
            continue
        zv = z(node, kids)
        if not zv > 0:
            raise ValueError(f"z must return a positive normaliser, got {zv!r}")
        mean_child = sum(c.credit for c in kids) / len(kids)
        node.credit = (node.reward + gamma * mean_child) / zv  # MeRS: (r(v) + γ·mean_{u∈C(v)} r~(u)) / Z(v)
    return tree


def no_backup(tree: RolloutTree, gamma: float = 1.0, backup_on: str = "full") -> RolloutTree:
    """No retrospective credit: r~(v) = r(v) on every node (plain GRPO inside each group of the tree)."""
    tree.validate()
    for node in tree.root.walk():
        node.credit = node.reward
    return tree


def _mars(tree: RolloutTree, gamma: float, backup_on: str) -> RolloutTree:
    return mars(tree, backup_on=backup_on)  # γ does not enter MaRS


def _mers(tree: RolloutTree, gamma: float, backup_on: str) -> RolloutTree:
    return mers(tree, gamma=gamma, backup_on=backup_on)


@dataclass(frozen=True)
class CreditRule:
    """A credit rule as every layer names it: the config's `credit` value, the paper's label, whether it reads γ."""

    name: str
    label: str  # the paper's name, for tables and figures
    backup: Callable[[RolloutTree, float, str], RolloutTree]  # (tree, gamma, backup_on) -> the tree, credit filled
    discounted: bool = False  # reads γ: the ablation label and recipe name carry it ("mers_0.9")


# The ONE list of credit rules: MurphyConfig.credit, Experiment.credit, the widgets' toggle and `assign_credit` all
# read it (a new rule added here is selectable everywhere, with its own label).
CREDIT_RULES: dict[str, CreditRule] = {
    "mars": CreditRule("mars", "MaRS", _mars),
    "mers": CreditRule("mers", "MeRS", _mers, discounted=True),
    "none": CreditRule("none", "no backup", no_backup),
}


def credit_rule(name: str) -> CreditRule:
    """The CreditRule called `name` (ValueError naming the known ones otherwise)."""
    if name not in CREDIT_RULES:
        raise ValueError(f"credit rule must be one of {tuple(CREDIT_RULES)}, got {name!r}")
    return CREDIT_RULES[name]


def assign_credit(tree: RolloutTree, credit: str = "mars", gamma: float = 1.0, backup_on: str = "full") -> RolloutTree:
    """Back credit up by the rule called `credit` (`CREDIT_RULES`: 'mars', 'mers', or 'none' = immediate reward)."""
    return credit_rule(credit).backup(tree, gamma, backup_on)
