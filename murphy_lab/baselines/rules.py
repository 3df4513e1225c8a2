"""Credit and advantage rules of the GRPO baselines, in the tree's vocabulary.

GRPO (single turn): one group of G candidates per task (a tree grown with `turns=1`); credit = immediate reward;
advantages group-relative inside that one group.

GRPO-MT (the paper's natural multi-turn baseline; the paper does not define it exactly, so we do, here):
G independent chains per task, each up to S turns, one refinement per failure — a tree grown with `g1=G, g2=1`.
The chain's *final* reward R_i (reward of its last attempt) is broadcast to every turn of the chain, and advantages
are normalised across the task's G chains:

    Â_i = ( R_i - mean_j R_j ) / ( std_j R_j + eps )      for every node of chain i     (Bessel std, eps = 1e-4)

so an informative failure and an uninformative one in two chains with the same final outcome get the same credit —
the coarse credit assignment MURPHY's retrospective backup replaces.
"""

from __future__ import annotations

from murphy_lab.grpo import EPS, group_advantages, normalize
from murphy_lab.tree import Node, RolloutTree


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
