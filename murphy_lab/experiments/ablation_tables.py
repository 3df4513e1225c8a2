"""The ablation tables in the paper's layout: credit (MaRS vs MeRS and the other rules) and pruning (none / IntraP /
InterP: trajectories kept, optimization and step time, pass@1), each with the paper's numbers and the difference,
and the pruning variants' cost bars. Labels and notes come from `murphy_lab.experiments.paper_tables`; the ablation
notebooks read this module as `A` beside it (`T`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from murphy_lab.experiments import paper
from murphy_lab.experiments.paper_tables import bench_label, common_notes, credit_name, variant_name
from murphy_lab.experiments.plan import pruning_label
from murphy_lab.experiments.table_format import Table, cell, fmt


def ablation_credit_tables(agg: pd.DataFrame) -> list[Table]:
    """MaRS vs MeRS (γ = 0.9 / 1.0): ours (rows variant, columns benchmark Iter-k), the paper's, and the difference."""
    ours = agg[agg["method"] == "murphy"]
    ours = ours.assign(
        col=[
            f"{bench_label(b, d)} Iter-{k}"
            for b, d, k in zip(ours["benchmark"], ours["difficulty"], ours["k"])
        ]
    )
    frame = _pivot(ours, index=["model", "variant"], rename=credit_name)
    pa = paper.ablation_table("credit")
    pframe = _paper_ablation(pa)
    return [
        Table("ablation_credit", "Credit ablation (ours): pass@1 (%)", frame, common_notes(ours)),
        Table(
            "ablation_credit_paper",
            "Credit ablation (paper, Qwen3-1.7B)",
            pframe,
            [
                f"MaRS also beats MeRS by {paper.MARS_OVER_MERS_OLMO_HUMANEVAL_ITER3_PP} pp on OLMo-2-7B HumanEval Iter-3."
            ],
        ),
        _ablation_diff("ablation_credit_vs_paper", ours, pa),
    ]


def _pivot(ours: pd.DataFrame, index: list[str], rename=None) -> pd.DataFrame:
    if ours.empty:
        return pd.DataFrame(columns=index)
    ours = ours.assign(cell=[fmt(m, s) for m, s in zip(ours["mean"], ours["std"])])
    wide = ours.pivot_table(
        index=index, columns="col", values="cell", aggfunc="first", sort=False
    ).reset_index()
    wide.columns.name = None
    if rename is not None and "variant" in wide.columns:
        wide["variant"] = wide["variant"].map(rename)
    return wide


def _paper_ablation(pa: pd.DataFrame) -> pd.DataFrame:
    pa = pa.assign(col=[f"{b} Iter-{k}" for b, k in zip(pa["benchmark"], pa["iter"])], model="Qwen3-1.7B")
    pa = pa.assign(mean=pa["mean"].astype(float), std=pa["std"].astype(float))
    wide = _pivot(pa, index=["model", "variant"], rename=variant_name)
    if pa["kept_traj"].notna().any():
        kept = pa.drop_duplicates("variant").set_index("variant")["kept_traj"]
        wide.insert(2, "kept traj.", [kept.get(v) for v in pa.drop_duplicates("variant")["variant"]])
    return wide


def _ablation_diff(name: str, ours: pd.DataFrame, pa: pd.DataFrame) -> Table:
    p = {(r.variant, r.benchmark, int(r.iter)): (r.mean, r.std) for r in pa.itertuples()}
    rows = []
    for r in ours[ours["model"] == "Qwen3-1.7B"].itertuples():
        cell = p.get(
            (
                r.variant.partition("+")[0] if name.startswith("ablation_credit") else r.pruning,
                bench_label(r.benchmark, r.difficulty),
                int(r.k),
            )
        )
        if cell is not None:
            rows.append(
                dict(
                    variant=variant_name(r.variant),
                    benchmark=bench_label(r.benchmark, r.difficulty),
                    iter=int(r.k),
                    ours=fmt(r.mean, r.std),
                    paper=fmt(*cell),
                    diff_pp=round(r.mean - cell[0], 2),
                )
            )
    frame = pd.DataFrame(rows, columns=["variant", "benchmark", "iter", "ours", "paper", "diff_pp"])
    notes = (
        ["diff_pp = ours − paper, percentage points."]
        if not frame.empty
        else [
            "No cell to compare: the paper's ablations are on Qwen3-1.7B (HumanEval, MBPP), which we did not run."
        ]
    )  # an empty comparison is its title and this note (Table.to_markdown): no header without rows
    return Table(name, "Ours vs paper, matching cells", frame, notes)


def pruning_cost(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per pruning variant: trajectories kept (and total) per tree, optimization and step seconds per training step.

    Reads the trainer's metrics.jsonl keys (docs/training.md): `trajectories/kept`, `trajectories/total`, `trees`,
    `time/optimization_s`, `time/step_s`; only steps that built trees (`generated`) count for trajectories.
    A key that is absent gives NaN. Runs whose backup saw the pruned tree are rows of their own
    (`pruning` = "interp+backup_pruned", `experiments.pruning_label`).
    """
    if metrics.empty:
        return pd.DataFrame(columns=["pruning", "kept_traj", "total_traj", "optimization_s", "step_s"])

    def mean(g: pd.DataFrame, col: str) -> float:
        return float(g[col].mean()) if col in g.columns and g[col].notna().any() else float("nan")

    if "backup_on" in metrics.columns:
        labels = [
            pruning_label(p, b) for p, b in zip(metrics["pruning"], metrics["backup_on"].fillna("full"))
        ]
        metrics = metrics.assign(pruning=labels)
    rows = []
    for prune, g in metrics.groupby("pruning", sort=False):
        gen = g[g["generated"].fillna(True).astype(bool)] if "generated" in g.columns else g
        trees = gen["trees"].where(gen["trees"] > 0) if "trees" in gen.columns else 1.0
        per_tree = gen.assign(
            **{
                c + "/tree": gen[c] / trees
                for c in ("trajectories/kept", "trajectories/total")
                if c in gen.columns
            }
        )
        rows.append(
            dict(
                pruning=prune,
                kept_traj=mean(per_tree, "trajectories/kept/tree"),
                total_traj=mean(per_tree, "trajectories/total/tree"),
                optimization_s=mean(g, "time/optimization_s"),
                step_s=mean(g, "time/step_s"),
            )
        )
    return pd.DataFrame(rows)


def ablation_pruning_tables(agg: pd.DataFrame, metrics: pd.DataFrame) -> list[Table]:
    """None / IntraP / InterP: trajectories kept, optimization and step time (Δ% vs none), pass@1; and the paper's."""
    ours = agg[agg["method"] == "murphy"]
    ours = ours.assign(
        col=[
            f"{bench_label(b, d)} Iter-{k}"
            for b, d, k in zip(ours["benchmark"], ours["difficulty"], ours["k"])
        ]
    )
    label = [v.partition("+")[2] or "none" for v in ours["variant"]]  # "interp", "interp+backup_pruned", ...
    frame = _pivot(ours.assign(variant=label), index=["model", "variant"], rename=variant_name)
    cost = pruning_cost(metrics[metrics["method"] == "murphy"] if "method" in metrics.columns else metrics)
    if not frame.empty and not cost.empty:
        cost = cost.set_index("pruning")
        ref = cost.loc["none"] if "none" in cost.index else None
        inv = {v: k for k, v in {p: variant_name(p) for p in cost.index}.items()}
        for i, col in enumerate(("kept_traj", "optimization_s", "step_s")):
            vals = []
            for v in frame["variant"]:
                x = cost[col].get(inv.get(v), float("nan"))
                s = cell(x)
                if col == "kept_traj" and not math.isnan(x):
                    s = f"{x:.1f} of {cost['total_traj'].get(inv.get(v), float('nan')):.1f}"
                if (
                    ref is not None
                    and col != "kept_traj"
                    and inv.get(v) != "none"
                    and ref[col] > 0
                    and not math.isnan(x)
                ):
                    s += f" ({100 * (x - ref[col]) / ref[col]:+.1f}%)"
                vals.append(s)
            frame.insert(
                2 + i,
                {"kept_traj": "kept traj.", "optimization_s": "optim. s/step", "step_s": "step s"}[col],
                vals,
            )
    pa = paper.ablation_table("pruning")
    pframe = _paper_ablation(pa)
    pframe["optim. s/step"] = [
        cell(paper.PRUNING_TIME[v]["optimization_s"]) for v in pa.drop_duplicates("variant")["variant"]
    ]
    pframe["step s"] = [
        cell(paper.PRUNING_TIME[v]["step_s"]) for v in pa.drop_duplicates("variant")["variant"]
    ]
    notes = common_notes(ours) + [
        "kept traj.: trajectories kept per tree, of all sampled (the paper: 72 -> 36 IntraP, 72 -> 40 InterP).",
        "Times: mean seconds per training step from each run's metrics.jsonl (all seeds); in parentheses the change "
        "against no pruning.",
        "IntraP / InterP back credit up over the full tree (the default: pruning only filters the loss); rows "
        "'backup on pruned' back it up over the kept children only, the paper flowchart's order (docs/notation.md).",
        "The loss's aggregation decides how much the groups pruning leaves weigh: the paper recipes sum per-group "
        "GRPO objectives as the paper states (loss_type group_sum), the toy and smoke profiles take TRL's token "
        "mean (dapo) (docs/training.md, decision 8).",
    ]
    pnotes = [f"{variant_name(v)}: {d['note']}." for v, d in paper.PRUNING_TIME.items()]
    return [
        Table("ablation_pruning", "Pruning ablation (ours)", frame, notes),
        Table("ablation_pruning_paper", "Pruning ablation (paper, Qwen3-1.7B, 8×H100)", pframe, pnotes),
        _ablation_diff("ablation_pruning_vs_paper", ours, pa),
    ]


def plot_pruning_cost(metrics: pd.DataFrame, path: str | Path | None = None):
    """Bars of trajectories kept per tree, mean optimization and step seconds per training step for each pruning
    variant (hatched: credit backup on the pruned tree); saves a PNG (`murphy_lab.viz.table_figures.draw_cost_bars`)."""
    cost = pruning_cost(metrics[metrics["method"] == "murphy"] if "method" in metrics.columns else metrics)
    if cost.empty:
        raise ValueError("metrics is empty: nothing to plot")
    names = [variant_name(p).replace(", ", ",\n") for p in cost["pruning"]]  # two lines: labels never overlap
    from murphy_lab.viz.palette import PRUNING_COLORS  # one colour per pruning kind, defined once

    colors = [
        PRUNING_COLORS["intrap" if p.startswith("intrap") else "interp" if p.startswith("interp") else "none"]
        for p in cost["pruning"]
    ]
    panels = [
        (label, list(cost[col].fillna(0)))
        for col, label in (
            ("kept_traj", "trajectories kept per tree"),
            ("optimization_s", "optimization s / step"),
            ("step_s", "step s"),
        )
    ]
    # matplotlib (and the viz package) only when drawing
    from murphy_lab.viz.table_figures import (
        draw_cost_bars,
    )

    return draw_cost_bars(
        names, panels, colors, [p.endswith("+backup_pruned") for p in cost["pruning"]], path
    )
