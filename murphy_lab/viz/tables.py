"""Figures of the reproduce tables: pass@1 against Iter-k per method, and the pruning variants' cost bars.

They draw what `murphy_lab.experiments.tables` selected and labelled (`plot_pass_at_k`, `plot_pruning_cost` there
pick the rows and names, then call these); nothing here knows the paper's methods or variants.
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


def draw_pass_at_k(panels: Sequence[tuple[str, Sequence[Line]]], path: str | Path | None = None,
                   title: str = "pass@1 vs Iter-k", stand_in: bool = False):  # fmt: skip
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
        for i, (label, k, mean, std) in enumerate(sorted(lines, key=lambda line: order[line[0]])):
            style = palette.method_style(label) if palette.method_key(label) else dict(color=palette.series_color(i))
            ax.errorbar(k, mean, yerr=std, marker="o", capsize=3, label=label, **style)
            lo, hi = min([lo, *(m - s for m, s in zip(mean, std))]), max([hi, *(m + s for m, s in zip(mean, std))])
            ks |= set(k)
        ax.set(title=name, xlabel="Iter-k (attempts)", ylabel="pass@1 (%)", xticks=sorted(ks))
        pad = max(2.0, 0.08 * (hi - lo))
        ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad))  # a percentage: never below 0 or above 100
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle(title + ("  [STAND-IN NUMBERS, not a measurement]" if stand_in else ""), fontsize=10)
    return _save(fig, path, plt)


def draw_cost_bars(names: Sequence[str], panels: Sequence[tuple[str, Sequence[float]]], colors: Sequence[str],
                   hatched: Sequence[bool], path: str | Path | None = None):  # fmt: skip
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


__all__ = ["draw_cost_bars", "draw_pass_at_k"]
