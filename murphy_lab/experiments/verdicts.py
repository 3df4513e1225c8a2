"""What a comparison between methods may claim: paired verdict lines and the budget each method spent.

    lines = paired_verdicts(X.results_frame(runs), k=3)      # MURPHY − GRPO-MT, MURPHY − GRPO at Iter-3, per cell
    budget = budget_table(X.metrics_frame(runs))             # sampled / trained sequences, tokens, time per run

A verdict compares two methods inside one table cell (model, scaffold, benchmark, difficulty, Iter-k) and pairs
their runs by training seed (same base, same task order, same held-out tasks: `murphy_lab.paired`), so it is only
as strong as the number of seeds both methods finished in that cell. The budget table says
what "equal steps" cost each method: a MURPHY step samples a whole tree, a GRPO step one group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from murphy_lab.credit import CREDIT_RULES
from murphy_lab.experiments import paper
from murphy_lab.experiments.paper_tables import (
    bench_label,
    column_key,
    column_name,
    credit_name,
    main_rows,
)
from murphy_lab.experiments.plan import credit_label
from murphy_lab.experiments.table_format import DASH, Table
from murphy_lab.methods import get_method
from murphy_lab.paired import paired_difference, verdict

# the comparisons the main table's notes state; "<method>@samples" is that baseline at MURPHY's sample budget
PAIRS = (
    ("murphy", "grpo_mt"),
    ("murphy", "grpo_mt@samples"),
    ("murphy", "grpo"),
    ("murphy", "mucode@samples"),
)


# the ablations' comparisons: "<method>:<variant>" is one configuration of a method (`Experiment.variant`)
def credit_pairs(variants: Sequence[dict]) -> tuple[tuple[str, str], ...]:
    """MaRS against every other variant of a credit ablation (`plan.credit_variants`: a rule, its γ, the knobs it
    sweeps), as `paired_verdicts` pairs."""
    labels = [credit_label(v["credit"], v.get("gamma", 1.0), v.get("credit_args", {})) for v in variants]
    return tuple(("murphy:mars", f"murphy:{label}") for label in dict.fromkeys(labels) if label != "mars")


# every rule of the table against MaRS, at its γ
CREDIT_PAIRS = credit_pairs(
    [{"credit": rule.name, "gamma": g} for rule in CREDIT_RULES.values() for g in rule.ablation_gammas()]
)
PRUNING_PAIRS = tuple(
    (f"murphy:mars+{p}", "murphy:mars")
    for p in ("intrap", "interp", "intrap+backup_pruned", "interp+backup_pruned")
)
# the difficulty and scaffold tables: gain over the base
BASE_PAIRS = (
    ("murphy", "base"),
    ("murphy", "grpo_mt"),
)

MAIN_VARIANTS = ("-", "mars")  # the main configuration: the baselines, and MURPHY with MaRS and no pruning
CELL = ("model", "scaffold", "benchmark", "difficulty", "k")  # one table cell: never pooled with another


def select(results: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of one compared column: "grpo_mt" (its main configuration), "grpo_mt@samples" (at MURPHY's sample
    budget) or "murphy:mers_0.9" (that variant)."""
    method, _, variant = key.partition(":")
    method, _, budget = method.partition("@")
    r = results[results["method"] == method]
    if "variant" not in r.columns:
        return r
    if variant:
        return r[r["variant"] == variant]
    return r[r["variant"] == "samples"] if budget else r[r["variant"].isin(MAIN_VARIANTS)]


def key_name(key: str) -> str:
    """A compared column's name: "murphy" -> "Murphy (MaRS)", "murphy:mers_0.9" -> "MeRS γ=0.9"."""
    method, _, variant = key.partition(":")
    return credit_name(variant) if variant else column_name(method)  # a pruned variant: variant_name's label


def per_seed(results: pd.DataFrame, key: str) -> pd.DataFrame:
    """pass@1 (%) by (cell, training seed) for one compared column; `n_tasks` beside it when the results have it."""
    r = select(results, key)
    cell = [c for c in CELL if c in r.columns]
    agg = {"pass@1": "mean"} | ({"n_tasks": "max"} if "n_tasks" in r.columns else {})
    return r.groupby([*cell, "seed"], dropna=False).agg(agg)


def paired_verdicts(
    results: pd.DataFrame,
    k: int | Sequence[int] | None = 3,
    pairs: Sequence[tuple[str, str]] = PAIRS,
    benchmark: str | None = None,
    confidence: float = 0.95,
    difficulty: str | None = "main",
) -> list[str]:
    """One line per (cell, pair): a − b in one (model, scaffold, benchmark, difficulty, Iter-k) cell, over the
    training seeds both columns finished in that cell (with equal task counts).

    Cells are never pooled: a +4 pp effect on one model and a −3.7 pp effect on another are two lines, not a mean
    of +0.17 pp; and a seed one method lacks in a cell leaves that cell's comparison, not the others'.

    Args:
        results: `murphy_lab.experiments.results_frame(runs)` (one row per run × benchmark × difficulty × k).
        k: the Iter-k of the verdicts (one pre-chosen k by default: each extra k is one more comparison), a list,
            or None for every k in `results`.
        pairs: (a, b) column keys (`select`); a pair whose columns did not both run in a cell gives no line there.
        benchmark: only this benchmark's cells (None: all).
        difficulty: "main" = the main table's rows (difficulty "all"; LiveCodeBench-v6 Hard), None = every
            difficulty present (the difficulty table), or one difficulty.
    Each line names its cell by what varies across the cells of `results` (nothing but Iter-k for one model and
    benchmark: "Murphy (MaRS) − GRPO-MT at Iter-3: ...").
    """
    r = results
    if k is not None:
        r = r[r["k"].isin([k] if isinstance(k, int) else list(k))]
    if benchmark is not None:
        r = r[r["benchmark"] == benchmark]
    if difficulty == "main":
        r = main_rows(r)
    elif difficulty is not None:
        r = r[r["difficulty"].str.lower() == difficulty.lower()]
    if r.empty:
        return []
    varies = {c: r[c].nunique(dropna=False) > 1 for c in CELL if c in r.columns}
    cells = list(
        dict.fromkeys(tuple(row) for row in r[[c for c in CELL if c in r.columns]].itertuples(index=False))
    )
    columns = {key: per_seed(r, key) for pair in pairs for key in pair}
    lines = []
    for cell in cells:  # each cell's comparisons together, in table order
        for a, b in pairs:
            xa, xb = columns[a], columns[b]
            if (
                xa.empty
                or xb.empty
                or cell not in xa.index.droplevel("seed")
                or cell not in xb.index.droplevel("seed")
            ):
                continue
            at = _cell_label(dict(zip(varies, cell)), varies)
            lines.append(_cell_line(key_name(a), key_name(b), at, xa.loc[cell], xb.loc[cell], confidence))
    return lines


def _cell_label(cell: dict, varies: dict) -> str:
    """ "Iter-3", with the cell's model / scaffold / benchmark in parentheses where the results hold several."""
    bench = bench_label(str(cell.get("benchmark", "")), str(cell.get("difficulty", "all")))
    where = [str(cell[c]) for c in ("model", "scaffold") if varies.get(c)]
    where += [bench] if varies.get("benchmark") or varies.get("difficulty") else []
    return f"Iter-{int(cell['k'])}" + (f" ({', '.join(where)})" if where else "")


def _cell_line(
    name_a: str, name_b: str, at: str, ya: pd.DataFrame, yb: pd.DataFrame, confidence: float
) -> str:
    """The verdict over the seeds both columns have in this cell, with the same number of tasks evaluated."""
    seeds = sorted(set(ya.index) & set(yb.index))
    unequal = [
        s
        for s in seeds
        if "n_tasks" in ya.columns
        and "n_tasks" in yb.columns
        and ya.loc[s, "n_tasks"] != yb.loc[s, "n_tasks"]
    ]
    seeds = [s for s in seeds if s not in unequal]
    left_out = f" ({len(unequal)} seed(s) left out: different task counts)" if unequal else ""
    if len(seeds) < 2:
        return (
            f"{name_a} − {name_b} at {at}: {len(seeds)} paired seed(s){left_out}; a confidence interval needs "
            "at least 2 — no verdict"
        )
    d = paired_difference(
        [ya.loc[s, "pass@1"] for s in seeds], [yb.loc[s, "pass@1"] for s in seeds], confidence
    )
    return verdict(name_a, name_b, at, d) + left_out


BUDGET_COLUMNS = ("steps", "sampled sequences", "trained sequences", "completion tokens", "train time (min)")


def budget_table(
    metrics: pd.DataFrame, methods: Sequence[str] = paper.METHODS, wall_time: bool = True
) -> Table:
    """Per method: what one training run spent, mean over its seeds (from the run's metrics.jsonl).

    `wall_time=False` leaves out the train time column: a table that is committed then changes only when the spend
    does (a rerun on another machine, or a busier one, changes every time; the notebooks write it to a separate,
    git-ignored `*_times.csv`).

    RL trainers (one line per step): sampled sequences = Σ_steps trajectories/total (every completion the policy
    generated), trained sequences = Σ trajectories/kept (those with an advantage after pruning), completion tokens
    = Σ trajectories/total × completions/mean_length, train time = Σ time/step_s over the rounds that sampled.
    µCode (one line per stage, `murphy_lab.baselines.mucode.pipeline`): sampled = Σ attempts of its rollout stages,
    trained = the rows of its last SFT stage, tokens from the rollout stages' mean length (when logged), time = Σ
    seconds of all stages; it has no steps. A method with neither kind of line has no row; the notes say so.
    """
    rows, shown = [], []
    if not metrics.empty and "variant" in metrics.columns:
        metrics = metrics[metrics["variant"].isin((*MAIN_VARIANTS, "samples"))]
        metrics = metrics.assign(
            method=[column_key(m, v) for m, v in zip(metrics["method"], metrics["variant"])]
        )
    per_run = (
        {key: _run_budget(g) for key, g in metrics.groupby(["method", "seed"])} if not metrics.empty else {}
    )
    per_run = {key: b for key, b in per_run.items() if b is not None}
    for col in (c for x in methods for c in (x, column_key(x, "samples"))):
        runs = [b for (method, _), b in per_run.items() if method == col]
        if not runs:
            continue
        shown.append(col.partition("@")[0])
        mean = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
        # "–": not logged (µCode's steps)
        count = {k: DASH if math.isnan(v) else round(v) for k, v in mean.items()}
        rows.append(
            [
                column_name(col),
                len(runs),
                count["steps"],
                count["sampled"],
                count["trained"],
                count["tokens"],
                round(mean["seconds"] / 60, 1),
            ]
        )
    frame = pd.DataFrame(rows, columns=["method", "seeds", *BUDGET_COLUMNS])
    if not wall_time:
        frame = frame.drop(columns=[BUDGET_COLUMNS[-1]])
    ran = set(metrics["method"].str.partition("@")[0]) if "method" in metrics.columns else set()
    missing = [paper.METHOD_NAMES.get(x, x) for x in methods if x in ran and x not in shown]
    notes = [
        "Per training run, mean over its seeds, from metrics.jsonl (docs/training.md lists the keys).",
        "Equal steps are not equal budgets: compare methods at the sampled sequences they used, not only at "
        "the steps.",
    ]
    if wall_time:
        notes.append("Train time is wall time on the machine that ran it, with whatever else it was doing.")
    if "mucode" in shown:
        notes.append(
            "µCode has rounds, not steps: sampled = its rollout chains' attempts, trained = the rows of "
            "its last SFT (docs/mucode.md)."
        )
    if missing:
        notes.append(
            f"No round statistics for {', '.join(missing)} (its pipeline logs no sampled sequences)."
        )
    return Table("main_table_budget", "Training budget per run", frame, notes)


def _run_budget(g: pd.DataFrame) -> dict | None:
    """One run's spend from its metrics lines (an RL trainer's steps, or µCode's stages); None if it logged none."""
    nan = float("nan")
    if "trajectories/total" in g.columns and "step" in g.columns and g["step"].notna().any():
        s = g.dropna(subset=["trajectories/total"])  # the rounds that sampled (a reused round has none)
        if not s.empty:
            return dict(
                steps=float(s["step"].max()),
                sampled=float(s["trajectories/total"].sum()),
                trained=float(s["trajectories/kept"].sum()),
                tokens=float((s["trajectories/total"] * s["completions/mean_length"]).sum()),
                seconds=float(s["time/step_s"].sum()),
            )
    if "stage" not in g.columns:
        return None
    stage = g["stage"].fillna("").astype(str)
    rollouts, sft = g[stage.str.endswith("/rollouts")], g[stage.str.endswith("/sft")]
    if rollouts.empty or "attempts" not in g.columns:
        return None
    tokens = (
        (rollouts["attempts"] * rollouts["completions/mean_length"]).sum(min_count=len(rollouts))
        if "completions/mean_length" in g.columns
        else nan
    )
    return dict(
        steps=nan,
        sampled=float(rollouts["attempts"].sum()),
        trained=float(sft["rows"].iloc[-1]) if not sft.empty and "rows" in sft.columns else nan,
        tokens=float(tokens),
        seconds=float(g["seconds"].sum()),
    )


def budget_curves(runs, k: int = 3) -> pd.DataFrame:
    """Held-out Iter-k pass@1 against the sampled sequences spent so far, one row per (run, checkpoint).

    Points per training seed: the base model at 0 sequences (its own run), each intermediate checkpoint
    (`curve.csv`, one sampling run) and the final model (`eval.csv`, the full evaluation), at Σ trajectories/total
    up to that step; µCode (rounds, no steps) has its final model only, at all its rollouts' attempts.
    Columns: method (the main-table column key, `tables.column_key`), seed, step, sampled, pass@1, final.
    """
    rows = []
    for run in runs:
        e, res = run.experiment, run.results
        if e.variant not in (*MAIN_VARIANTS, "samples"):
            continue
        col = column_key(e.method, e.variant)
        if "difficulty" in res.columns:
            res = res[res["difficulty"].fillna("all").astype(str) == "all"]
        final = float(res[res["k"] == k]["pass@1"].mean())
        if not get_method(e.method).trains:  # evaluated untrained (the base): one point at no spend
            rows.append(dict(method=col, seed=e.seed, step=0, sampled=0, **{"pass@1": final}, final=True))
            continue
        m = run.metrics
        if m is None or m.empty:
            continue
        if "step" not in m.columns:  # µCode's stage log: one point, the final model at all it sampled
            spend = _run_budget(m)
            if spend is not None:
                rows.append(
                    dict(
                        method=col,
                        seed=e.seed,
                        step=0,
                        sampled=spend["sampled"],
                        **{"pass@1": final},
                        final=True,
                    )
                )
            continue
        if "trajectories/total" not in m.columns:
            continue  # no round statistics: no x axis
        spent = m.dropna(subset=["trajectories/total"]).groupby("step")["trajectories/total"].sum().cumsum()
        points = (
            []
            if run.curve is None
            else [
                (int(r.step), float(r["pass@1"]), False) for _, r in run.curve[run.curve["k"] == k].iterrows()
            ]
        )
        points.append((int(spent.index.max()), float(final), True))
        for step, value, is_final in points:
            rows.append(
                dict(
                    method=col,
                    seed=e.seed,
                    step=step,
                    sampled=float(spent.loc[:step].iloc[-1]),
                    **{"pass@1": value},
                    final=is_final,
                )
            )
    return pd.DataFrame(rows, columns=["method", "seed", "step", "sampled", "pass@1", "final"])
