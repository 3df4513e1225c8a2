"""Figures of one rollout tree and its credit flow (networkx + matplotlib). Reads trees; computes nothing of MURPHY.

- `draw_tree(tree, color_by="reward" | "credit" | "advantage")`: the tree in layers by turn (virtual root at the top,
  every response group C(v) contiguous under its parent), nodes colored by r(v), r~(v) or Â(v) with a colorbar,
  pruned nodes faded, candidates that pass every test ringed, labels "r -> r~", and each group's edge bundle
  annotated with the feedback f(v) its prompt quoted.
(`murphy_lab.viz.credit_flow` draws where a node's MaRS credit came from over `draw_tree`.)
(`murphy_lab.viz.curves` has the summary plots: histograms per turn, advantages per group, learning curves.)

Every function returns the matplotlib Figure (and draws into `ax` when one is given), so the same calls make static
figures for papermill and printed notes, and the widgets in `murphy_lab.viz.widgets` redraw them live.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable

import matplotlib.pyplot as plt
import networkx as nx
from matplotlib import colors as mcolors
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch

from murphy_lab.tree import SOLVED, Node, RolloutTree
from murphy_lab.viz import palette
from murphy_lab.viz.palette import FLOW, MISSING, PASS_RING

COLOR_BY = ("reward", "credit", "advantage")
_CBAR_LABEL = {"reward": "reward r(v)", "credit": "credit r̃(v)", "advantage": "advantage Â(v)"}


# ---------------------------------------------------------------------------------------------------------------
# Layout and graph
# ---------------------------------------------------------------------------------------------------------------
def tree_layout(tree: RolloutTree, group_gap: float = 0.8) -> dict[Node, tuple[float, float]]:
    """Layered positions: y = -turn, leaves one slot apart in pre-order, a parent centred over its group.

    Consecutive groups at the same turn are separated by `group_gap` extra slots, so every group C(v) is a
    contiguous run of slots under its parent.
    """
    pos: dict[Node, tuple[float, float]] = {}
    cursor = 0.0

    def place(node: Node) -> float:
        nonlocal cursor
        if not node.children:
            x = cursor
            cursor += 1.0
        else:
            xs = [place(c) for c in node.children]
            x = sum(xs) / len(xs)
            if node is not tree.root:
                cursor += group_gap  # a gap after every group closes
        pos[node] = (x, -float(node.turn or 0))
        return x

    # recursion depth = number of turns (2-5 in practice), so plain recursion is fine
    place(tree.root)
    return pos


def to_networkx(tree: RolloutTree) -> nx.DiGraph:
    """The tree as a networkx DiGraph: node ids are pre-order indices (0 = virtual root), attributes from Node."""
    g = nx.DiGraph()
    index = {id(n): i for i, n in enumerate(tree.root.walk())}
    for n in tree.root.walk():
        i = index[id(n)]
        g.add_node(
            i, node=n, turn=n.turn, reward=n.reward, credit=n.credit, advantage=n.advantage, pruned=n.pruned
        )
        for c in n.children:
            g.add_edge(i, index[id(c)])
    return g


def _value(node: Node, color_by: str) -> float | None:
    return getattr(node, color_by)


def value_text(x: float | None) -> str:
    """A reward or credit as a label shows it: "1", "0.35", "–" for none."""
    if x is None:
        return "–"
    return f"{x:.2f}".rstrip("0").rstrip(".") if abs(x - round(x)) > 1e-9 else f"{x:.0f}"


def node_label(node: Node, color_by: str = "reward") -> str:
    """The default node label: "r→r̃" (reward → credit) when credit is set, "Â" when coloring by advantage; a node
    with a name (`node.meta["name"]`, e.g. the attempts A–D of `examples.informative_failure_tree`) is labelled
    "A: 0→1"."""
    name = node.meta.get("name") if node.meta else None
    if color_by == "advantage":
        value = "" if node.advantage is None else f"{node.advantage:+.1f}"
    else:
        value = (
            value_text(node.reward)
            if node.credit is None
            else f"{value_text(node.reward)}→{value_text(node.credit)}"
        )
    return f"{name}: {value}" if name and value else (name or value)


def snippet(text: str, width: int = 30) -> str:
    """The telling line of a feedback text, shortened to `width` characters.

    The first failed assert when there is one ("assert f(2) == 7  # output: 5"), else the last exception line
    ("SyntaxError: expected ':'"), else the first line that is not a header such as "Tests failed:".
    """
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    asserts = [ln for ln in lines if ln.startswith("assert")]
    errors = [ln for ln in lines if re.match(r"[A-Z]\w*(Error|Exception|Exit|Interrupt)\b", ln)]
    body = [ln for ln in lines if not ln.endswith(":")] or lines
    line = asserts[0] if asserts else errors[-1] if errors else body[0] if body else ""
    return textwrap.shorten(line, width=width, placeholder="…") if line else ""


def _norm_and_cmap(values: list[float], color_by: str, cmap: str | None):
    if color_by == "advantage":
        m = max([abs(v) for v in values] + [1e-6])
        return mcolors.TwoSlopeNorm(vmin=-m, vcenter=0.0, vmax=m), plt.get_cmap(
            cmap or palette.ADVANTAGE_CMAP
        )
    return mcolors.Normalize(vmin=0.0, vmax=1.0), plt.get_cmap(cmap or palette.VALUE_CMAP)


# ---------------------------------------------------------------------------------------------------------------
# draw_tree
# ---------------------------------------------------------------------------------------------------------------
def _rings(ax, pos: dict, nodes: list[Node], *, size: float, color, width: float, zorder: int) -> None:
    """An empty ring of marker area `size` around each of `nodes` (a solved attempt, a highlighted path)."""
    xs, ys = zip(*(pos[n] for n in nodes))
    ax.scatter(xs, ys, s=size, facecolors="none", edgecolors=color, linewidths=width, zorder=zorder)


def draw_tree(
    tree: RolloutTree,
    color_by: str = "reward",
    ax: plt.Axes | None = None,
    labels: bool | str = "auto",
    feedback: bool = True,
    cmap: str | None = None,
    title: str | None = None,
    label_fn: Callable[[Node], str] | None = None,
    highlight: Iterable[Node] = (),
    colorbar: bool = True,
    legend: bool = True,
    snippet_chars: int = 44,
    node_size: float | None = None,
) -> Figure:
    """Draw a rollout tree in layers by turn, nodes colored by `color_by` ("reward", "credit" or "advantage").

    Pruned nodes (`node.pruned`) are faded, candidates with r(v) = 1 get a red ring, the virtual root is a grey
    square. `labels` = True / False / "auto" (label when the widest turn has at most 40 nodes; labels turn
    vertical when slots are narrow); the default label is "r→r̃" (`node_label`), or pass `label_fn(node) -> str`.
    With `feedback`, the edge bundle of every group C(v) is annotated with a snippet of f(v), the feedback the
    group's prompt quoted. Nodes in `highlight` get a thick orange outline. Returns the Figure.
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, got {color_by!r}")
    if not isinstance(tree, RolloutTree):
        raise TypeError(f"tree must be a RolloutTree, got {type(tree).__name__}")
    nodes = tree.nodes()
    if not nodes:
        raise ValueError(f"tree {tree.task_id!r} is empty: its root has no children")
    if color_by == "credit" and all(n.credit is None for n in nodes):
        raise ValueError("color_by='credit' but no node has credit: call murphy_lab.credit.mars/mers first")
    if color_by == "advantage" and all(n.advantage is None for n in nodes):
        raise ValueError(
            "color_by='advantage' but no node has one: call murphy_lab.grpo.group_advantages first"
        )

    pos = tree_layout(tree)
    xs = [p[0] for p in pos.values()]
    n_slots = max(xs) - min(xs) + 1
    depth = max(tree.depth, 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(max(6.0, 0.32 * n_slots + 2.0), 24.0), 1.9 * depth + 1.6))
    else:
        fig = ax.figure
    fig_w = fig.get_size_inches()[0] * ax.get_position().width
    slot_pt = fig_w * 72 / max(n_slots, 1)  # points per slot
    size = node_size or float(min(420.0, max(10.0, 0.5 * slot_pt**2)))  # area (pt^2): diameter ≈ 0.7 slot
    widest = max(sum(1 for n in nodes if n.turn == t) for t in range(1, tree.depth + 1))
    # "auto": every node's label where the widest layer fits them, else inner nodes'
    show_labels = bool(labels)
    leaf_labels = (widest <= 40) if labels == "auto" else bool(labels)
    # A wide figure is shown shrunk to a notebook's column (about 9 in): scale its text so that it stays readable
    # there (a 72-trajectory tree is drawn 16-24 in wide).
    fs = max(1.0, fig.get_size_inches()[0] / 9.0)
    radius = size**0.5 / 2  # node radius in points (scatter sizes are areas in points^2)

    g = to_networkx(tree)
    ids = {id(d["node"]): i for i, d in g.nodes(data=True)}
    npos = {ids[id(n)]: p for n, p in pos.items()}

    # group boxes: a light band behind every response group C(v)
    for _parent, members in tree.groups():
        x0, x1 = pos[members[0]][0], pos[members[-1]][0]
        y = pos[members[0]][1]
        ax.add_patch(
            FancyBboxPatch(
                (x0 - 0.42, y - 0.2),
                x1 - x0 + 0.84,
                0.4,
                boxstyle="round,pad=0.02,rounding_size=0.15",
                facecolor=palette.PANEL,
                edgecolor=palette.PANEL_EDGE,
                linewidth=0.6,
                zorder=0,
            )
        )

    # edges: solid to kept children, dashed and faint to pruned ones
    kept_e = [(u, v) for u, v in g.edges if not g.nodes[v]["pruned"]]
    pruned_e = [(u, v) for u, v in g.edges if g.nodes[v]["pruned"]]
    nx.draw_networkx_edges(g, npos, edgelist=kept_e, ax=ax, arrows=False, edge_color=palette.EDGE, width=0.8)
    nx.draw_networkx_edges(
        g,
        npos,
        edgelist=pruned_e,
        ax=ax,
        arrows=False,
        edge_color=palette.FAINT,
        width=0.6,
        style="dashed",
        alpha=0.6,
    )

    values = [v for n in nodes if (v := _value(n, color_by)) is not None]
    norm, cm = _norm_and_cmap(values, color_by, cmap)

    def face(n: Node):
        v = _value(n, color_by)
        return MISSING if v is None else cm(norm(v))

    for pruned, alpha in ((False, 1.0), (True, 0.22)):
        group = [n for n in nodes if n.pruned == pruned]
        if group:
            nx.draw_networkx_nodes(
                g,
                npos,
                nodelist=[ids[id(n)] for n in group],
                node_color=[face(n) for n in group],
                node_size=size,
                alpha=alpha,
                edgecolors=palette.INK,
                linewidths=0.6,
                ax=ax,
            )
    # the virtual root: the task prompt q(1)
    nx.draw_networkx_nodes(
        g,
        npos,
        nodelist=[0],
        node_shape="s",
        node_color=MISSING,
        node_size=size * 1.2,
        edgecolors=palette.INK,
        linewidths=0.8,
        ax=ax,
    )
    ax.annotate(
        "task prompt q(1)",
        pos[tree.root],
        xytext=(0, radius + 4),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=8 * fs,
        color=palette.INK,
    )
    passing = [n for n in nodes if n.reward >= SOLVED]
    if passing:
        rings = [mcolors.to_rgba(PASS_RING, 0.3 if n.pruned else 1.0) for n in passing]
        _rings(ax, pos, passing, size=size * 2.1, color=rings, width=1.6, zorder=3)
    hl = list(highlight)
    if hl:
        _rings(ax, pos, hl, size=size * 2.8, color=FLOW, width=2.6, zorder=4)

    if show_labels:
        fn = label_fn or (lambda n: node_label(n, color_by))
        texts = {n: fn(n) for n in nodes}
        # room to the right: inner, named
        beside = {n for n in nodes if n.children or (n.meta or {}).get("name")}
        longest = max((len(t) for n, t in texts.items() if n not in beside), default=1)
        vertical = longest * 7 * fs * 0.6 > 0.95 * slot_pt  # estimated label width vs slot width
        for n, t in texts.items():
            if not t or not (leaf_labels or n.children):
                continue
            style = dict(
                textcoords="offset points",
                fontsize=7 * fs,
                alpha=0.45 if n.pruned else 1.0,
                color=palette.TEXT,
            )
            gap = 1.7 * radius + 1  # clear of the pass ring (1.45 r) and the highlight ring (1.67 r)
            if n in beside:  # edges leave downwards (or a named attempt): put the label beside the node
                ax.annotate(t, pos[n], xytext=(gap, 2), ha="left", va="bottom", **style)
            else:
                ax.annotate(
                    t,
                    pos[n],
                    xytext=(0, -gap),
                    ha="center",
                    va="top",
                    rotation=90 if vertical else 0,
                    **style,
                )

    if feedback:
        for parent, members in tree.groups():
            if parent is tree.root or not parent.feedback:
                continue
            width_slots = pos[members[-1]][0] - pos[members[0]][0] + 1.2
            # monospace characters that fit under the group
            fits = int(width_slots * slot_pt / (6.5 * fs * 0.66))
            if fits < 12:
                continue  # too narrow to say anything legible: widen the figure or zoom into a subtree
            text = snippet(parent.feedback, min(snippet_chars, 2 * fits))
            if len(text) > fits:  # wrap onto two lines rather than shrink the font
                lines = textwrap.wrap(text, width=max(fits, (len(text) + 1) // 2))
                text = "\n".join(lines[:1] + [textwrap.shorten(" ".join(lines[1:]), fits, placeholder="…")])
            x, y = pos[parent]
            ax.text(
                x,
                y - 0.5,
                text,
                ha="center",
                va="center",
                fontsize=6.5 * fs,
                family="monospace",
                color=palette.INK,
                bbox=dict(
                    boxstyle="round,pad=0.15",
                    facecolor=palette.BOX,
                    edgecolor=palette.BOX_EDGE,
                    alpha=0.9,
                    linewidth=0.5,
                ),
                zorder=5,
            )

    if colorbar:
        sm = plt.cm.ScalarMappable(norm=norm, cmap=cm)
        cb = fig.colorbar(sm, ax=ax, fraction=0.025 if fig_w > 10 else 0.04, pad=0.01)
        cb.set_label(_CBAR_LABEL[color_by], fontsize=9 * fs)
        cb.ax.tick_params(labelsize=8 * fs)
    if legend:
        handles = [
            Line2D(
                [],
                [],
                marker="o",
                ls="",
                markerfacecolor="none",
                markeredgecolor=PASS_RING,
                markersize=10,
                markeredgewidth=1.6,
                label="passes all tests (r = 1)",
            ),
            Line2D(
                [],
                [],
                marker="o",
                ls="",
                markerfacecolor=MISSING,
                markeredgecolor=palette.INK,
                alpha=0.3,
                markersize=8,
                label="pruned",
            ),
        ]
        if show_labels and color_by != "advantage" and any(n.credit is not None for n in nodes):
            handles.append(Line2D([], [], ls="", label="label: reward → credit"))
        ax.legend(handles=handles, loc="upper left", fontsize=7.5 * fs, frameon=False, handletextpad=0.3)

    turns = range(0, tree.depth + 1)
    ax.set_yticks([-t for t in turns], ["root"] + [f"turn {t}" for t in turns if t > 0], fontsize=8 * fs)
    ax.tick_params(left=False, bottom=False, labelbottom=False)
    ax.set_xlim(min(xs) - 1.0, max(xs) + 1.0)
    ax.set_ylim(-depth - 0.75, 0.55)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    kept = len(tree.nodes(kept_only=True))
    if title is None:
        name = f"{tree.task_id}: " if tree.task_id else ""
        title = f"{name}colored by {color_by}  ·  {len(nodes)} trajectories in {len(tree.groups())} groups"
        if kept < len(nodes):
            title += f", {kept} kept"
    ax.set_title(title, fontsize=10 * fs)
    return fig


__all__ = [
    "COLOR_BY",
    "draw_tree",
    "node_label",
    "snippet",
    "to_networkx",
    "tree_layout",
]
