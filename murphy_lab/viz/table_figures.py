"""Figures of the reproduce tables: pass@1 per method at each Iter-k (`draw_by_k`), pass@1 against Iter-k as lines
(`draw_pass_at_k`: an evaluation's table), and the pruning variants' cost bars.

They draw what the experiments' tables selected and labelled (`plot_pass_at_k` in `murphy_lab.experiments.paper_tables`,
`plot_pruning_cost` in `murphy_lab.experiments.ablation_tables` pick the rows and names, then call these); nothing here knows the paper's methods or variants.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from murphy_lab.viz import palette

Line = tuple[str, Sequence[int], Sequence[float], Sequence[float]]  # (label, k values, means, stds)


def _pyplot(path):
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path, plt):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def draw_pass_at_k(
    panels: Sequence[tuple[str, Sequence[Line]]],
    path: str | Path | None = None,
    title: str = "pass@1 vs Iter-k",
    stand_in: bool = False,
):
    """One panel per (panel title, lines): pass@1 (%) against Iter-k with ± std error bars; saves a PNG.

    A line labelled with a method's name has that method's colour and place in the legend (`viz.palette`); the
    y-axis is fitted to the data (every error bar inside, a few points of margin) so that differences of a few
    points stay visible, within 0–100."""
    plt = _pyplot(path)
    if not panels:
        raise ValueError("nothing to plot: no panels")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (name, lines) in zip(axes[0], panels):
        lo, hi, ks = 100.0, 0.0, set()
        order = {label: i for i, label in enumerate(palette.by_method([line[0] for line in lines]))}
        lines = sorted(lines, key=lambda line: order[line[0]])
        for (label, k, mean, std), style in zip(lines, _styles([line[0] for line in lines])):
            ax.errorbar(k, mean, yerr=std, marker="o", capsize=3, label=label, **style)
            lo, hi = (
                min([lo, *(m - s for m, s in zip(mean, std))]),
                max([hi, *(m + s for m, s in zip(mean, std))]),
            )
            ks |= set(k)
        ax.set(title=name, xlabel="Iter-k (attempts)", ylabel="pass@1 (%)", xticks=sorted(ks))
        pad = max(2.0, 0.08 * (hi - lo))
        ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad))  # a percentage: never below 0 or above 100
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title + ("  [STAND-IN NUMBERS, not a measurement]" if stand_in else ""), fontsize=10)
    return _save(fig, path, plt)


Point = tuple[str, float, float]  # (label, mean, std)


def _styles(labels: Sequence[str]) -> list[dict]:
    """A method's colour (dashed when sample-matched) per label; where several labels are one method's variants (an
    ablation), or name no method, each its own series colour."""
    keys = [palette.method_key(label) for label in labels]
    variants = len(set(keys)) < len(keys)
    return [
        dict(color=palette.series_color(i)) if variants or key is None else palette.method_style(label)
        for i, (label, key) in enumerate(zip(labels, keys))
    ]


def draw_by_k(
    rows: Sequence[tuple[str, Sequence[tuple[int, Sequence[Point]]]]],
    path: str | Path | None = None,
    title: str = "pass@1 by Iter-k",
    stand_in: bool = False,
):
    """A grid of panels, one row per (row title, [(k, points)]) and one column per Iter-k: each method (or variant)
    a point with its ± std error bar, in the palette's colour and order, on a y-axis fitted to that panel's points,
    so that a spread of a few points and its error bars stay visible next to Iter-k values far apart; saves a PNG."""
    import textwrap

    plt = _pyplot(path)
    if not rows or not any(by_k for _, by_k in rows):
        raise ValueError("nothing to plot: no rows")
    ncols = max(len(by_k) for _, by_k in rows)
    n_points = max(len(points) for _, by_k in rows for _, points in by_k)
    fig, axes = plt.subplots(
        len(rows), ncols, figsize=(max(3.0, 0.75 * n_points + 1.4) * ncols, 3.3 * len(rows)), squeeze=False
    )
    for r, (row_title, by_k) in enumerate(rows):
        for c in range(ncols):
            ax = axes[r][c]
            if c >= len(by_k):
                ax.set_visible(False)
                continue
            k, points = by_k[c]
            order = palette.by_method([p[0] for p in points])
            points = sorted(points, key=lambda p: order.index(p[0]))  # noqa: B023 (used right here)
            for x, ((label, mean, std), style) in enumerate(zip(points, _styles([p[0] for p in points]))):
                ax.errorbar(
                    [x],
                    [mean],
                    yerr=[std],
                    marker="o",
                    ms=6,
                    capsize=4,
                    ls="none",
                    label=label,
                    color=style["color"],
                )
            lo = min(m - s for _, m, s in points)
            hi = max(m + s for _, m, s in points)
            pad = max(1.0, 0.15 * (hi - lo))
            ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad))  # a percentage: never below 0 or above 100
            ax.set_xlim(-0.6, len(points) - 0.4)
            ax.set_xticks(
                range(len(points)),
                [textwrap.fill(p[0], 10, break_on_hyphens=False) for p in points],
                fontsize=7.5,
            )
            ax.set_title(textwrap.fill(f"{row_title}: Iter-{k}", 44, break_on_hyphens=False), fontsize=8.5)
            ax.grid(axis="y", alpha=0.3)
            if c == 0:
                ax.set_ylabel("pass@1 (%)")
    fig.suptitle(title + ("  [STAND-IN NUMBERS, not a measurement]" if stand_in else ""), fontsize=10)
    return _save(fig, path, plt)


def draw_cost_bars(
    names: Sequence[str],
    panels: Sequence[tuple[str, Sequence[float]]],
    colors: Sequence[str],
    hatched: Sequence[bool],
    path: str | Path | None = None,
):
    """One bar panel per (title, values), a bar per name (hatched where `hatched`); saves a PNG."""
    plt = _pyplot(path)
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 3.2), squeeze=False)
    for ax, (label, values) in zip(axes[0], panels):
        ax.bar(names, values, color=colors)
        for bar, hatch in zip(ax.patches, hatched):
            bar.set_hatch("//" if hatch else None)
        ax.tick_params(axis="x", labelsize=7)
        ax.set(title=label)
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path, plt)


__all__ = ["draw_by_k", "draw_cost_bars", "draw_pass_at_k"]
