"""Where a node's MaRS credit came from: the argmax path v -> argmax_{u in C(v)} r~(u) -> ... down to the node whose
own reward r(u) = r~(v) (MaRS, §3.2), found (`credit_path`) and drawn over the tree (`draw_credit_flow`, on
`murphy_lab.viz.trees.draw_tree`). Reads trees; computes nothing of MURPHY."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from murphy_lab.tree import Node, RolloutTree
from murphy_lab.viz.palette import FLOW
from murphy_lab.viz.trees import draw_tree, tree_layout, value_text


def _resolve(tree: RolloutTree, node: Node | Sequence[int]) -> Node:
    """A Node of the tree, given as the Node itself or as a path of child indices from the root ((0,) = first)."""
    if isinstance(node, Node):
        if not any(n is node for n in tree.root.walk()):
            raise ValueError("node is not part of this tree")
        return node
    if isinstance(node, (tuple, list)) and all(isinstance(i, int) for i in node):
        cur = tree.root
        for depth, i in enumerate(node):
            if not 0 <= i < len(cur.children):
                raise ValueError(
                    f"node path {tuple(node)}: index {i} at depth {depth + 1} is out of range "
                    f"(that node has {len(cur.children)} children)"
                )
            cur = cur.children[i]
        return cur
    raise TypeError(f"node must be a Node or a tuple of child indices, got {type(node).__name__}")


def credit_path(
    tree: RolloutTree, node: Node | Sequence[int], backup_on: str = "full", tol: float = 1e-9
) -> list[Node]:
    """The MaRS argmax path from `node` to the descendant whose own reward is its credit.

    MaRS sets r~(v) = max(r(v), max_{u in C(v)} r~(u)); follow v -> the first child u with r~(u) = r~(v) until
    r(v) = r~(v). Raises ValueError when the credits are not a MaRS backup (e.g. after MeRS).
    """
    v = _resolve(tree, node)
    if any(n.credit is None for n in tree.root.walk()):
        raise ValueError("the tree has no credit: call murphy_lab.credit.mars(tree) first")
    if backup_on not in ("pruned", "full"):
        raise ValueError(f"backup_on must be 'pruned' or 'full', got {backup_on!r}")
    path = [v]
    while True:
        kids = v.kept_children() if backup_on == "pruned" else list(v.children)
        best = max((c.credit for c in kids), default=v.reward)
        if abs(v.credit - max(v.reward, best)) > tol:
            raise ValueError(
                f"credit {v.credit!r} of a turn-{v.turn} node is not max(r(v), max r~(u)): "
                "these credits are not a MaRS backup (call mars(tree) with the same backup_on)"
            )
        if abs(v.reward - v.credit) <= tol:  # the credit is the node's own reward: the source
            return path
        v = next(c for c in kids if abs(c.credit - v.credit) <= tol)
        path.append(v)


def draw_credit_flow(
    tree: RolloutTree, node: Node | Sequence[int], backup_on: str = "full", ax: plt.Axes | None = None, **kw
) -> Figure:
    """Draw the tree colored by credit with the MaRS argmax path from `node` to its credit's source highlighted.

    `node` is a Node of the tree or a path of child indices ((0,) = first turn-1 candidate). Extra keywords go to
    `draw_tree`. Returns the Figure.
    """
    path = credit_path(tree, node, backup_on=backup_on)
    v, src = path[0], path[-1]
    if len(path) == 1:
        how = "its own reward: nothing to back up"
    else:
        how = f"a turn-{src.turn} refinement ({len(path) - 1} step{'s' if len(path) > 2 else ''} below)"
    title = kw.pop("title", f"MaRS credit flow: r̃(v) = {value_text(v.credit)} comes from {how}")
    fig = draw_tree(tree, color_by="credit", ax=ax, highlight=path, title=title, **kw)
    ax = ax or fig.axes[0]
    pos = tree_layout(tree)
    for a, b in zip(path, path[1:]):
        ax.annotate(
            "",
            xy=pos[b],
            xytext=pos[a],
            zorder=6,
            arrowprops=dict(arrowstyle="-|>", color=FLOW, lw=2.4, shrinkA=7, shrinkB=7),
        )
    ax.annotate(
        f"source:\nr = {value_text(src.reward)}",
        pos[src],
        xytext=(0, -36),
        textcoords="offset points",
        fontsize=8,
        ha="center",
        va="top",
        color=FLOW,
        fontweight="bold",
        zorder=7,
    )
    return fig
