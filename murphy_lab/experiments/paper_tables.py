"""Tables in the paper's layout: our mean ± std over seeds, the paper's numbers beside them, and the difference.

Input is the long results frame of `murphy_lab.experiments.results_frame` (one row per run × benchmark ×
difficulty × Iter-k). `aggregate` reduces seeds; the `*_tables` builders (the ablations' in
`murphy_lab.experiments.ablation_tables`) return `Table`s (a formatted frame plus
notes, `murphy_lab.experiments.table_format`) that `write_tables` saves as CSV, Markdown and LaTeX; `plot_pass_at_k`
draws pass@1 against Iter-k.

Conventions: pass@1 in percent; "±" is the population std over training seeds (np.std, ddof=0); with a single
seed it is the std over evaluation runs reported by `evaluate` (the table's notes say which). "–" marks a cell with
no number, and a note says why (a method the profile leaves out, or a row the paper does not report).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from murphy_lab.experiments import paper
from murphy_lab.experiments.table_format import DASH, Table, fmt, write_tables
from murphy_lab.profiles import not_run_note

__all__ = ["DASH", "Table", "fmt", "write_tables"]  # re-exported: the notebooks read everything through T
KEYS = (
    "model",
    "method",
    "variant",
    "credit",
    "gamma",
    "pruning",
    "scaffold",
    "benchmark",
    "difficulty",
    "k",
)
_DIFFICULTY_ORDER = {"all": 0, "easy": 1, "medium": 2, "hard": 3}
MAIN_DIFFICULTY = {"LCB-v6": "hard"}  # the main table reports LiveCodeBench-v6 on its Hard split only


def aggregate(results: pd.DataFrame, keys: Sequence[str] = KEYS) -> pd.DataFrame:
    """Mean ± std over seeds of pass@1 for every combination of `keys`.

    Returns columns `keys` + mean, std, n_seeds, std_over ("seeds", or "runs" when one seed: then std is the
    evaluation's own std over sampling runs), backend (stand-in if any run was one).
    """
    if results.empty:
        return pd.DataFrame(columns=[*keys, "mean", "std", "n_seeds", "std_over", "backend"])
    missing = [k for k in (*keys, "seed", "pass@1") if k not in results.columns]
    if missing:
        raise ValueError(f"results has no column(s) {missing}")
    rows = []
    for key, g in results.groupby(list(keys), sort=False, dropna=False):
        per_seed = g.groupby("seed")["pass@1"].mean()  # (n_seeds,)
        n = len(per_seed)
        if n > 1:
            std, over = float(np.std(per_seed.values)), "seeds"
        else:
            std = float(g["std"].mean()) if "std" in g.columns else float("nan")
            over = "runs"
        backend = "stand-in" if "backend" in g.columns and (g["backend"] == "stand-in").any() else "real"
        rows.append(
            dict(
                zip(keys, key),
                mean=float(per_seed.mean()),
                std=std,
                n_seeds=n,
                std_over=over,
                backend=backend,
            )
        )
    return pd.DataFrame(rows)


def _ordered(agg: pd.DataFrame) -> pd.DataFrame:
    """Rows in table order: model, scaffold, benchmark as first seen, then difficulty (easy < medium < hard), then k."""
    first = {c: {v: i for i, v in enumerate(dict.fromkeys(agg[c]))} for c in ("model", "benchmark")}
    scaffolds = (
        {v: i for i, v in enumerate(dict.fromkeys(agg["scaffold"]))} if "scaffold" in agg.columns else {}
    )
    order = pd.DataFrame(
        {
            "m": agg["model"].map(first["model"]),
            "b": agg["benchmark"].map(first["benchmark"]),
            "s": agg["scaffold"].map(scaffolds) if scaffolds else 0,
            "d": [_DIFFICULTY_ORDER.get(str(d).lower(), 9) for d in agg["difficulty"]],
            "k": agg["k"],
        },
        index=agg.index,
    )
    return agg.loc[order.sort_values(["m", "s", "b", "d", "k"], kind="stable").index]


def common_notes(agg: pd.DataFrame) -> list[str]:
    notes = []
    if not agg.empty and (agg["backend"] == "stand-in").any():
        notes.append(
            "STAND-IN NUMBERS: produced by fake train/evaluate functions to exercise the pipeline; "
            "not a measurement."
        )
    if not agg.empty:
        seeds = sorted(set(agg["n_seeds"]))
        if seeds == [1]:
            notes.append("One training seed: ± is the std over evaluation runs.")
        else:
            notes.append(f"mean ± std (population) over {'/'.join(map(str, seeds))} training seeds.")
    return notes


def bench_label(benchmark: str, difficulty: str) -> str:
    """The paper's benchmark row name: "LCB-v6" + difficulty "hard" -> "LCB-v6 Hard"; "all" adds nothing."""
    return benchmark if difficulty in ("all", "", "nan") else f"{benchmark} {str(difficulty).capitalize()}"


MODEL_WORDS = {"toy": "Toy policy", "tiny": "Tiny random model"}
BENCHMARK_WORDS = {"toy": "held-out toy-world tasks"}
"""What a figure's title calls a model or benchmark key that is not a public name (the paper's keep theirs)."""


def panel_title(model: str, benchmark: str) -> str:
    """A figure panel's title in words: "Toy policy (...) on held-out toy-world tasks", "Qwen3-4B on LCB-v6 Hard"."""
    # "toy Hard", "toy · reflexion": the benchmark, then what splits it
    head, _, rest = benchmark.partition(" ")
    rest = rest.strip(" ·")
    bench = (
        f"{BENCHMARK_WORDS[head]}, {rest}"
        if head in BENCHMARK_WORDS and rest
        else BENCHMARK_WORDS.get(benchmark, benchmark)
    )
    return f"{MODEL_WORDS.get(model, model)} on {bench}"


def main_rows(agg: pd.DataFrame) -> pd.DataFrame:
    """The difficulty rows the main table shows: "all", except LiveCodeBench-v6 (Hard, as in the paper)."""
    if agg.empty:
        return agg
    keep = []
    for bench, g in agg.groupby("benchmark", sort=False):
        want = MAIN_DIFFICULTY.get(bench, "all")
        hit = g[g["difficulty"].str.lower() == want]
        keep.append(hit if not hit.empty else g[g["difficulty"].str.lower() == "all"])
    return pd.concat(keep)


def main_tables(
    agg: pd.DataFrame, methods: Sequence[str] = paper.METHODS, profile: str | None = None
) -> list[Table]:
    """The main table (ours), the paper's main table, and the cell-by-cell comparison where model/benchmark match.

    `agg` is `aggregate(results)` restricted to the main configuration (MaRS, no pruning, one scaffold); only the
    rows `main_rows` selects are shown (difficulty "all", LiveCodeBench-v6 Hard).
    Rows: model × benchmark × Iter-k; columns: `methods`. A method that did not run shows "–" with a note: the
    profile's reason (`profiles.Profile.not_run`, when `profile` is given) or how to include it.
    """
    ours = _ordered(main_rows(agg))
    ours = ours.assign(bench=[bench_label(b, d) for b, d in zip(ours["benchmark"], ours["difficulty"])])
    # a column per method, and one more per baseline that also ran at MURPHY's sample budget (variant "samples")
    ours = ours.assign(col=[column_key(m, v) for m, v in zip(ours["method"], ours["variant"])])
    cells = {(r.model, r.bench, int(r.k), r.col): (r.mean, r.std) for r in ours.itertuples()}
    rows = list(dict.fromkeys((m, b, k) for m, b, k, _ in cells))
    cols = [c for m in methods for c in (m, column_key(m, "samples")) if c == m or c in set(ours["col"])]
    names = [column_name(c) for c in cols]
    frame = pd.DataFrame(
        [
            [m, b, k] + [fmt(*cells.get((m, b, k, col), (float("nan"), None))) for col in cols]
            for m, b, k in rows
        ],
        columns=["model", "benchmark", "Iter-k"] + names,
    )
    ran = set(agg["method"])
    notes = common_notes(agg) + [
        f"{paper.METHOD_NAMES[m]}: {not_run_note(profile, m)}."
        if not_run_note(profile, m)
        else f"{paper.METHOD_NAMES[m]}: not run here (add {m!r} to the notebook's `methods`)."
        for m in methods
        if m not in ran
    ]
    if "mucode" in ran:
        notes.append(
            "µCode: the plain Iter-k pass@1 of its trained generator under the same scaffold, without its "
            "verifier's best-of-N (the paper does not say which it reports; docs/evaluation.md)."
        )
    if "reveal" in ran:
        notes.append(
            "ReVeal: evaluated in its tagged rounds with the same public-test feedback as every other column "
            "(scaffold 'reveal'); its own loop, with feedback on its own tests only, is scaffold "
            "'reveal-own' (docs/reveal.md), not a column of this table."
        )
    if not agg.empty and agg["benchmark"].astype(str).str.startswith("LCB").any():
        notes.append(
            "LiveCodeBench runs as lcb_runner runs it (docs/evaluation.md's rule table); stated differences: "
            "1 GB of memory per program, a fresh process per "
            "test, and our prompt is not lcb_runner's."
        )
    if any(c.endswith("@samples") for c in cols):
        notes.append(
            "(sample-matched): the baseline trained with as many sampled sequences per task as MURPHY's run "
            "(more chains per task, same steps and tasks); the budget table gives each row's spend."
        )

    pt = paper.main_table()
    pt = pt[pt["method"].isin(methods)]
    pcells = {(r.model, r.benchmark, int(r.iter), r.method): (r.mean, r.std) for r in pt.itertuples()}
    prows = list(dict.fromkeys((r.model, r.benchmark, int(r.iter)) for r in pt.itertuples()))
    pframe = pd.DataFrame(
        [
            [m, b, k] + [fmt(*pcells.get((m, b, k, meth), (float("nan"), None))) for meth in methods]
            for m, b, k in prows
        ],
        columns=["model", "benchmark", "Iter-k"] + [paper.METHOD_NAMES[m] for m in methods],
    )
    pnotes = [
        "Transcribed from the paper (arXiv 2511.07833); pass@1 %, mean ± std as printed. The paper does not "
        "say over what: its untrained Base column has a ± too (so at least there it is over evaluation runs), "
        "and its numbers fit a sample std (n − 1) of 3 values (docs/evaluation.md)."
    ]
    if "grpo" in methods:
        pnotes.append("The paper's main table has no single-turn GRPO column.")
    pnotes.append("ReVeal is reported only on LiveCodeBench-v6 Hard.")

    comp = []
    for (m, b, k, meth), (mean, std) in cells.items():
        p = pcells.get((m, b, k, meth))  # a sample-matched column has no paper cell
        if p is not None and not math.isnan(p[0]):
            comp.append(
                dict(
                    model=m,
                    benchmark=b,
                    iter=k,
                    method=paper.METHOD_NAMES[meth],
                    ours=fmt(mean, std),
                    paper=fmt(*p),
                    diff_pp=round(mean - p[0], 2),
                )
            )
    cframe = pd.DataFrame(comp, columns=["model", "benchmark", "iter", "method", "ours", "paper", "diff_pp"])
    cnotes = ["diff_pp = ours − paper, percentage points."] if not cframe.empty else []
    if not cframe.empty:
        cnotes += [
            "Compare the means: our ± is the population std over training seeds, the paper's an unstated "
            "std (most likely the sample std over 3 evaluation runs).",
            "Ours: MBPP = full MBPP's test split (500 tasks), LCB-v6 = the problems added in release v6, "
            "evaluation at temperature 1.0: choices where the paper names no split or setting "
            "(docs/evaluation.md, 'What the paper does not state').",
        ]
    if cframe.empty:
        ours_models = ", ".join(sorted(set(agg["model"]))) or "none"
        cnotes.append(
            f"No cell to compare: the paper reports no (model, benchmark) we ran (ours: {ours_models}). "
            "Toy-world numbers show the layout and the qualitative effects, not the paper's values."
        )
    return [
        Table("main_table", "Main table (ours): pass@1 (%) by Iter-k", frame, notes),
        Table("main_table_paper", "Main table (paper, arXiv 2511.07833)", pframe, pnotes),
        Table("main_table_vs_paper", "Ours vs paper, matching cells", cframe, cnotes),
    ]


def column_key(method: str, variant: str) -> str:
    """A run's main-table column: its method, or "<method>@samples" for a baseline at MURPHY's sample budget."""
    return f"{method}@samples" if variant == "samples" else method


def column_name(col: str) -> str:
    """A main-table column's header: "grpo_mt" -> "GRPO-MT", "grpo_mt@samples" -> "GRPO-MT (sample-matched)"."""
    method, _, budget = col.partition("@")
    return paper.METHOD_NAMES.get(method, method) + (" (sample-matched)" if budget == "samples" else "")


def credit_name(v: str) -> str:
    """A credit-ablation row's label from the rule table ("none" -> "no backup", not the pruning axis's "none")."""
    return paper.credit_name(v) or variant_name(v)


def variant_name(v: str) -> str:
    """ "mars" -> "MaRS", "mars+interp" -> "MaRS + InterP", "interp+backup_pruned" -> "InterP, backup on pruned"."""
    v, backup = (
        (v[: -len("+backup_pruned")], ", backup on pruned") if v.endswith("+backup_pruned") else (v, "")
    )
    base, _, prune = v.partition("+")
    name = paper.VARIANT_NAMES.get(base, base)
    return (f"{name} + {paper.VARIANT_NAMES.get(prune, prune)}" if prune else name) + backup


def lcb_difficulty_tables(agg: pd.DataFrame, benchmark: str = "LCB-v6") -> list[Table]:
    """pass@1 by difficulty × Iter-k for each method, MURPHY's gain over base; the paper's Iter-5 gains beside."""
    ours = agg[agg["benchmark"] == benchmark]
    cells = {(r.model, r.difficulty, int(r.k), r.method): (r.mean, r.std) for r in ours.itertuples()}
    methods = [m for m in paper.METHODS if m in set(ours["method"])]
    rows = []
    order = _DIFFICULTY_ORDER  # all, easy, medium, hard
    for m, d, k in sorted(
        {c[:3] for c in cells}, key=lambda t: (t[0], order.get(str(t[1]).lower(), 9), t[1], t[2])
    ):
        row = dict(model=m, difficulty=str(d).capitalize(), **{"Iter-k": k})
        row.update(
            {
                paper.METHOD_NAMES[meth]: fmt(*cells.get((m, d, k, meth), (float("nan"), None)))
                for meth in methods
            }
        )
        if (m, d, k, "base") in cells and (m, d, k, "murphy") in cells:
            gain = cells[(m, d, k, "murphy")][0] - cells[(m, d, k, "base")][0]
            row["Murphy − Base (pp)"] = f"{gain:+.2f}"
            if benchmark == "LCB-v6":  # the paper's gains are LiveCodeBench's; other difficulty scales differ
                p = paper.LCB_ITER5_GAIN_PP.get(str(d).capitalize()) if k == 5 else None
                row["paper gain (pp)"] = f"{p:+.2f}" if p is not None else DASH
        rows.append(row)
    frame = pd.DataFrame(rows)
    notes = common_notes(ours)
    if benchmark != "LCB-v6":
        notes.append(
            f"{benchmark}'s difficulty levels are not LiveCodeBench's; the paper's LCB-v6 gains are listed "
            "separately below, for the direction of the effect only."
        )
    if set(ours["difficulty"]) <= {"all"}:
        notes.append(f"{benchmark} results carry no difficulty split; one row per Iter-k.")
    prow = [
        dict(difficulty=d, **{"Iter-k": 5, "Murphy − Base (pp)": f"{g:+.2f}"})
        for d, g in paper.LCB_ITER5_GAIN_PP.items()
    ]
    pa = paper.main_table().query("benchmark == 'LCB-v6 Hard'")
    pframe = pd.DataFrame(prow)
    pnotes = [
        "Qwen3-4B on LiveCodeBench-v6; the paper prints only the Iter-5 gains per difficulty. Hard, absolute: "
        + "; ".join(
            f"Iter-{int(k)} Base {fmt(*g[g.method == 'base'][['mean', 'std']].values[0])}, "
            f"Murphy {fmt(*g[g.method == 'murphy'][['mean', 'std']].values[0])}"
            for k, g in pa.groupby("iter")
        )
    ]
    return [
        Table("lcb_difficulty", f"{benchmark} by difficulty (ours): pass@1 (%)", frame, notes),
        Table("lcb_difficulty_paper", "LiveCodeBench-v6 by difficulty (paper)", pframe, pnotes),
    ]


def cross_scaffold_tables(
    agg: pd.DataFrame, methods: Sequence[str] = ("base", "grpo_mt", "murphy")
) -> list[Table]:
    """Trained models under each refinement scaffold: rows scaffold × benchmark × Iter-k, columns methods."""
    cells = {
        (r.model, r.scaffold, bench_label(r.benchmark, r.difficulty), int(r.k), r.method): (r.mean, r.std)
        for r in _ordered(main_rows(agg)).itertuples()
    }
    present = [m for m in methods if m in set(agg["method"])]
    rows = []
    for key in dict.fromkeys(c[:4] for c in cells):
        row = dict(zip(("model", "scaffold", "benchmark", "Iter-k"), key))
        row.update({paper.METHOD_NAMES[m]: fmt(*cells.get((*key, m), (float("nan"), None))) for m in present})
        if (*key, "base") in cells and (*key, "murphy") in cells:
            row["Murphy − Base (pp)"] = f"{cells[(*key, 'murphy')][0] - cells[(*key, 'base')][0]:+.2f}"
        rows.append(row)
    return [
        Table(
            "cross_scaffold",
            "Across refinement scaffolds (ours): pass@1 (%)",
            pd.DataFrame(rows),
            common_notes(agg) + [paper.CROSS_SCAFFOLD_NOTE],
        )
    ]


def plot_pass_at_k(agg: pd.DataFrame, path: str | Path | None = None, title: str = "pass@1 vs Iter-k"):
    """pass@1 (%) of every method (or variant) with its ± std over seeds: one row of panels per model × benchmark, one
    panel per Iter-k, each on its own fitted axis (`murphy_lab.viz.table_figures.draw_by_k`); saves a PNG."""
    agg = _ordered(agg)
    rows = []
    for model, bench in dict.fromkeys(
        (r.model, bench_label(r.benchmark, r.difficulty)) for r in agg.itertuples()
    ):
        in_panel = np.array([bench_label(b, d) == bench for b, d in zip(agg["benchmark"], agg["difficulty"])])
        sub = agg[(agg["model"] == model).to_numpy() & in_panel]
        by_k = []
        # an ablation: name the variants
        one_method = sub["method"].nunique() == 1 and sub["variant"].nunique() > 1
        for k, g in sub.groupby("k", sort=True):
            points = [
                (
                    credit_name(r.variant)
                    if one_method
                    else paper.METHOD_NAMES.get(r.method, r.method)
                    + ("" if r.variant in ("-", "mars") else f" [{credit_name(r.variant)}]"),
                    float(r.mean),
                    0.0 if pd.isna(r.std) else float(r.std),
                )
                for r in g.itertuples()
            ]
            by_k.append((int(k), points))
        rows.append((panel_title(model, bench), by_k))
    if not rows:
        raise ValueError("agg is empty: nothing to plot")
    stand_in = bool((agg["backend"] == "stand-in").any()) if "backend" in agg.columns else False
    from murphy_lab.viz.table_figures import draw_by_k  # matplotlib (and the viz package) only when drawing

    return draw_by_k(rows, path, title, stand_in)
