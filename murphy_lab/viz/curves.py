"""Summary plots over trees and runs (matplotlib): rewards and credit per turn, advantages per group, learning curves.

- `plot_turn_histograms(trees)`: histograms of r(v) and r~(v) per turn, over one tree or many;
- `plot_group_advantages(tree)`: Â(u) of every kept group, one column per group, colored by credit;
- `plot_curves(runs, y)`: any metric of metrics.jsonl rows against the step, one line per run;
- `plot_training_curves(rows)`: one run's rewards and solved fractions per step (the run folder's curves.png);
- `plot_eval_table(df)`: an evaluation's Iter-k pass@1 table, one line per difficulty (the eval CLI's table.png);

Every function returns the matplotlib Figure (and draws into `ax` when one is given).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib import colors as mcolors
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from murphy_lab.tree import RolloutTree
from murphy_lab.viz import palette
from murphy_lab.viz.table_figures import draw_pass_at_k


def _as_trees(trees: RolloutTree | Iterable[RolloutTree]) -> list[RolloutTree]:
    out = [trees] if isinstance(trees, RolloutTree) else list(trees)
    if not out or not all(isinstance(t, RolloutTree) for t in out):
        raise TypeError("trees must be a RolloutTree or a non-empty list of RolloutTree")
    return out


def plot_turn_histograms(
    trees: RolloutTree | Iterable[RolloutTree], kept_only: bool = False, bins: int = 21
) -> Figure:
    """Histograms of reward r(v) and credit r~(v) per turn, over one tree or many (credit drawn when present).

    `bins` bars are centred on 0, 1/(bins-1), ..., 1 (the default 21 puts one on every multiple of 0.05).
    """
    ts = _as_trees(trees)
    nodes = [n for t in ts for n in t.nodes(kept_only=kept_only)]
    turns = sorted({n.turn for n in nodes})
    fig, axes = plt.subplots(1, len(turns), figsize=(3.6 * len(turns) + 0.6, 2.9), squeeze=False, sharey=True)
    edges = [i / (bins - 1) - 0.5 / (bins - 1) for i in range(bins + 1)]  # one bin centred on each k/(bins-1)
    for ax, turn in zip(axes[0], turns):
        at = [n for n in nodes if n.turn == turn]
        ax.hist([n.reward for n in at], bins=edges, alpha=0.6, label="reward r", color=palette.REWARD_COLOR)
        credits = [n.credit for n in at if n.credit is not None]
        if credits:
            ax.hist(
                credits,
                bins=edges,
                histtype="step",
                linewidth=2,
                label="credit r̃",
                color=palette.CREDIT_COLOR,
            )
        ax.set_title(f"turn {turn} ({len(at)} nodes)", fontsize=9)
        ax.set_xlabel("value", fontsize=8)
        ax.tick_params(labelsize=8)
    axes[0][0].set_ylabel("nodes", fontsize=8)
    axes[0][-1].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def plot_group_advantages(tree: RolloutTree, ax: plt.Axes | None = None) -> Figure:
    """Advantages Â(u) of every kept group, one column per group, points colored by credit (or reward)."""
    groups = tree.groups(kept_only=True)
    if not any(u.advantage is not None for _, members in groups for u in members):
        raise ValueError("no node has an advantage: call murphy_lab.grpo.group_advantages(tree) first")
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.5, 0.55 * len(groups) + 2.0), 3.0))
    else:
        fig = ax.figure
    cm, norm = plt.get_cmap(palette.VALUE_CMAP), mcolors.Normalize(0.0, 1.0)
    fs = max(1.0, fig.get_size_inches()[0] / 9.0)  # text readable once a wide figure is shrunk to ~9 in
    for gi, (_, members) in enumerate(groups):
        ys = [u.advantage for u in members]
        vals = [u.reward if u.credit is None else u.credit for u in members]
        offs = [
            (k - (len(members) - 1) / 2) * min(0.6 / max(len(members), 1), 0.12) for k in range(len(members))
        ]
        ax.scatter(
            [gi + o for o in offs],
            ys,
            c=[cm(norm(v)) for v in vals],
            s=28,
            edgecolors=palette.INK,
            linewidths=0.4,
            zorder=3,
        )
    ax.axhline(0.0, color=palette.EDGE, lw=0.8)
    ax.set_xticks(
        range(len(groups)),
        [f"t{m[0].turn}·g{i}" for i, (_, m) in enumerate(groups)],
        fontsize=7 * fs,
        rotation=0 if len(groups) <= 12 else 90,
    )
    ax.set_ylabel("advantage Â", fontsize=9 * fs)
    ax.set_xlabel("kept group (turn · index)", fontsize=9 * fs)
    ax.tick_params(labelsize=8 * fs)
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cm), ax=ax, fraction=0.04, pad=0.01)
    cb.set_label("credit r̃ (reward if none)", fontsize=8 * fs)
    cb.ax.tick_params(labelsize=7 * fs)
    ax.set_title("group-relative advantages: (r̃ − mean) / (std + ε) inside each group", fontsize=9 * fs)
    return fig


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """The mean of each value and the `window - 1` before it (fewer at the start); window 1 = the values."""
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def plot_curves(
    runs: Mapping[str, Sequence[Mapping]],
    y: str | Sequence[str],
    x: str = "step",
    smooth: int = 1,
    ax: plt.Axes | None = None,
) -> Figure:
    """Learning curves: `runs` maps a method name to its metrics rows (e.g. the lines of a metrics.jsonl).

    `y` names one metric or several (one panel each); rows missing a metric are skipped. `smooth` is a moving-
    average window. A method's line has its colour of `murphy_lab.viz.palette` (other names: its series colours),
    and the legend lists methods in the palette's order. Returns the Figure.
    """
    ys = [y] if isinstance(y, str) else list(y)
    if not runs:
        raise ValueError("runs is empty: pass {name: [metric rows]}")
    if ax is not None and len(ys) != 1:
        raise ValueError("ax can only be given with a single metric y")
    if ax is None:
        fig, axes = plt.subplots(1, len(ys), figsize=(4.2 * len(ys) + 0.5, 3.0), squeeze=False)
        axes = list(axes[0])
    else:
        fig, axes = ax.figure, [ax]
    for a, metric in zip(axes, ys):
        found = False
        for i, name in enumerate(palette.by_method(runs)):
            pts = [(r[x], r[metric]) for r in runs[name] if x in r and r.get(metric) is not None]
            if not pts:
                continue
            found = True
            px, py = zip(*pts)
            color = palette.method_color(name, default=palette.series_color(i))
            a.plot(px, moving_average(py, smooth), label=name, lw=1.6, color=color)
        if not found:
            raise ValueError(f"no run has metric {metric!r} (with {x!r})")
        a.set_xlabel(x, fontsize=9)
        a.set_ylabel(metric, fontsize=9)
        a.tick_params(labelsize=8)
        a.grid(alpha=0.3)
    axes[-1].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


TRAINING_PANELS = (
    ("mean reward r(v)", (("turn-1 candidates", "reward/turn1_mean"), ("all candidates", "reward/mean"))),
    (
        "solved (r = 1)",
        (("turn-1 candidates", "solved/turn1_frac"), ("trees with a solved node", "solved/tree_frac")),
    ),
)
"""The panels of `plot_training_curves`: (title, ((label, metrics.jsonl key), ...)); docs/training.md defines the keys."""


def plot_training_curves(rows: Sequence[Mapping], title: str = "", smooth: int = 1, path=None) -> Figure:
    """One run's learning curves from its metrics.jsonl rows: the mean reward of turn-1 candidates and of all
    candidates, and the solved fraction of turn-1 candidates and of trees, against the optimizer step (a panel
    each for rewards and solved fractions; keys a run does not log are left out). `smooth` is a moving-average
    window. Saves a PNG when `path` (and closes the figure). Raises ValueError when no row holds any of these
    metrics."""
    panels = [
        (name, [(label, key) for label, key in lines if any(r.get(key) is not None for r in rows)])
        for name, lines in TRAINING_PANELS
    ]
    panels = [(name, lines) for name, lines in panels if lines]
    if not panels:
        keys = [key for _, lines in TRAINING_PANELS for _, key in lines]
        raise ValueError(f"no metrics row holds any of {keys}")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 0.4, 3.2), squeeze=False)
    for ax, (name, lines) in zip(axes[0], panels):
        for i, (label, key) in enumerate(lines):
            pts = [(r["step"], r[key]) for r in rows if "step" in r and r.get(key) is not None]
            px, py = zip(*pts)
            ax.plot(
                px,
                moving_average(py, smooth),
                label=label,
                lw=1.6,
                marker="o" if len(px) <= 40 else None,
                ms=3,
                color=palette.series_color(i),
            )
        ax.set(xlabel="optimizer step", ylim=(-0.02, 1.02))
        steps = sorted({r["step"] for r in rows if "step" in r})
        if len(steps) <= 10:
            ax.set_xticks(steps)  # a short run: every step
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(name, fontsize=10)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def plot_eval_table(df, title: str = "Iter-k pass@1", path=None) -> Figure:
    """pass@1 (%) against Iter-k (attempts) from `murphy_lab.evaluate.evaluate`'s table: one line per difficulty
    ("all" first) with ± std over runs as error bars; saves a PNG when `path`."""
    if df.empty:
        raise ValueError("the table is empty")
    lines = [
        (f"{d} ({int(g['n_tasks'].iloc[0])} tasks)", g["k"].tolist(), g["pass@1"].tolist(), g["std"].tolist())
        for d, g in df.groupby("difficulty", sort=False)
    ]
    return draw_pass_at_k([("pass@1 after k attempts", lines)], path, title=title)


def _std(values) -> float:
    """The population std over seeds, as the tables report it (0 for one seed)."""
    return float(values.std(ddof=0))


def plot_budget_curves(
    points,
    path=None,
    title: str = "Held-out pass@1 against sampled sequences",
    k: int = 3,
    names: Mapping[str, str] | None = None,
) -> Figure:
    """Held-out Iter-k pass@1 against the sequences each method sampled: the mean over seeds per checkpoint, with a
    band of ± one std over seeds. `points` is `murphy_lab.experiments.budget_curves(runs)`; every method's line
    starts at the base model (0 sequences); a method with its final model only (no checkpoints between) is dashed:
    nothing was measured between its two points. With one seed and an `se` column (each evaluation's standard
    error, e.g. binomial), every point gets an error bar of ± se instead of the band. `names` maps method keys to
    legend labels. Saves a PNG when `path`."""
    import numpy as np
    import pandas as pd

    if points.empty:
        raise ValueError(
            "no curve points: the runs have no metrics.jsonl / curve.csv (run with a curve profile)"
        )

    names = dict(names or {})
    seeds = points["seed"].nunique()
    # one seed: each evaluation's own standard error, drawn as an error bar
    bars = seeds == 1 and "se" in points
    spread = ("se", "mean") if bars else ("pass@1", _std)
    base = points[points["method"] == "base"]  # one point per seed, at 0 sequences
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    trained = points[points["method"] != "base"]
    for method in palette.by_method(dict.fromkeys(trained["method"])):  # legend in the palette's method order
        g = trained[trained["method"] == method]
        by = g.groupby("step").agg(x=("sampled", "mean"), y=("pass@1", "mean"), s=spread)
        # the shared start: the base model, 0 sequences sampled (first whatever the steps are called)
        if len(base):
            by.loc[-1] = pd.Series(
                dict(x=0.0, y=base["pass@1"].mean(), s=base["se"].mean() if bars else _std(base["pass@1"]))
            )
            by = by.sort_index()
        s = np.nan_to_num(by["s"].to_numpy())
        label, style = names.get(method, method), palette.method_style(method)
        if g["step"].nunique() == 1:  # the final model only (µCode: rounds, no checkpoints): nothing between
            label, style = f"{label} (final model only)", dict(style, linestyle="--")
        (line,) = ax.plot(by["x"], by["y"], marker="o", ms=3, lw=1.6, label=label, **style)
        if bars:
            ax.errorbar(
                by["x"], by["y"], yerr=s, fmt="none", ecolor=line.get_color(), elinewidth=1, capsize=3
            )
        else:
            ax.fill_between(by["x"], by["y"] - s, by["y"] + s, color=line.get_color(), alpha=0.15, lw=0)
    ax.set_xlabel("sampled sequences per training run", fontsize=9)
    ax.set_ylabel(f"held-out Iter-{k} pass@1 (%)", fontsize=9)
    points_are = "base and final models only" if points["final"].all() else "last point: full evaluation"
    spread_is = (
        "one seed; bars: ± one standard error of each evaluation"
        if bars
        else f"mean and ± std over {seeds} seed(s)"
    )
    ax.set_title(f"{title}\n({spread_is}; {points_are})", fontsize=10)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=130)
    return fig


__all__ = [
    "moving_average",
    "plot_budget_curves",
    "plot_curves",
    "plot_eval_table",
    "plot_group_advantages",
    "plot_training_curves",
    "plot_turn_histograms",
]
