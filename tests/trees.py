"""Hand-built trees shared by the core tests (imported as a helper module, not a fixture file).

`paper_tree` (72 trajectories in 9 groups) is the library's `murphy_lab.examples.paper_tree`, re-exported here so
the tests and the notebooks use one generator.
"""

from __future__ import annotations

import random

from murphy_lab.examples import paper_tree
from murphy_lab.tree import Node, RolloutTree

__all__ = ["informative_tree", "paper_tree", "random_tree", "three_turn_tree"]


def informative_tree() -> RolloutTree:
    """Two failed turn-1 attempts; only the first one's refinements succeed (the paper's informative failure).

    root
    ├── a  r=0.0  -> [1.0, 0.0]     informative failure
    ├── b  r=0.0  -> [0.0, 0.0]     uninformative failure
    └── c  r=1.0                    solved leaf
    """
    a = Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)])
    b = Node(reward=0.0, children=[Node(reward=0.0), Node(reward=0.0)])
    c = Node(reward=1.0)
    return RolloutTree(Node(children=[a, b, c]), task_id="informative")


def three_turn_tree() -> RolloutTree:
    """root -> a(0.2) -> a1(0.4) -> [1.0, 0.5]; a2(0.0) leaf; b(0.6) leaf."""
    a1 = Node(reward=0.4, children=[Node(reward=1.0), Node(reward=0.5)])
    a = Node(reward=0.2, children=[a1, Node(reward=0.0)])
    return RolloutTree(Node(children=[a, Node(reward=0.6)]), task_id="three")


def random_tree(
    rng: random.Random, depth: int = 3, width: tuple[int, int] = (2, 4), p_expand: float = 0.7
) -> RolloutTree:
    """A random tree with rewards on a 1/4 grid; solved nodes (1.0) are leaves, as in build_tree."""

    def grow(d: int) -> Node:
        n = Node(reward=rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]))
        if n.reward < 1.0 and d < depth and rng.random() < p_expand:
            n.children = [grow(d + 1) for _ in range(rng.randint(*width))]
        return n

    return RolloutTree(Node(children=[grow(1) for _ in range(rng.randint(*width))]))
