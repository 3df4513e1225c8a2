"""What a comparison between methods may claim: paired verdict lines and the budget each method spent.

    lines = paired_verdicts(X.results_frame(runs), k=3)      # MURPHY − GRPO-MT, MURPHY − GRPO at Iter-3
    budget = budget_table(X.metrics_frame(runs))             # sampled / trained sequences, tokens, time per run

A verdict pairs the runs of two methods by training seed (same base, same task order, same held-out tasks:
`murphy_lab.stats`), so it is only as strong as the number of seeds both methods finished. The budget table says
what "equal steps" cost each method: a MURPHY step samples a whole tree, a GRPO step one group.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from murphy_lab.experiments import paper
from murphy_lab.experiments.table import Table
from murphy_lab.experiments.tables import column_name
from murphy_lab.stats import paired_difference, verdict

# the comparisons the main table's notes state; "<method>@samples" is that baseline at MURPHY's sample budget
PAIRS = (("murphy", "grpo_mt"), ("murphy", "grpo_mt@samples"), ("murphy", "grpo"))


MAIN_VARIANTS = ("-", "mars")  # the main configuration: the baselines, and MURPHY with MaRS and no pruning


def per_seed(results: pd.DataFrame, method: str, k: int, benchmark: str | None = None) -> pd.Series:
    """pass@1 (%) at Iter-k by training seed, difficulty "all", for one method in its main configuration
    (`"grpo_mt@samples"`: GRPO-MT at MURPHY's sample budget)."""
    method, _, budget = method.partition("@")
    r = results[(results["method"] == method) & (results["k"] == k) & (results["difficulty"] == "all")]
    if "variant" in r.columns:
        r = r[r["variant"] == "samples"] if budget else r[r["variant"].isin(MAIN_VARIANTS)]
    if benchmark is not None:
        r = r[r["benchmark"] == benchmark]
    return r.groupby("seed")["pass@1"].mean()


def paired_verdicts(results: pd.DataFrame, k: int = 3, pairs: Sequence[tuple[str, str]] = PAIRS,
                    benchmark: str | None = None, confidence: float = 0.95) -> list[str]:
    """One line per (a, b) pair whose methods both ran: a − b at Iter-k over the seeds both finished.

    `results` is `murphy_lab.experiments.results_frame(runs)` (one row per run × benchmark × difficulty × k).
    """
    lines = []
    for a, b in pairs:
        xa, xb = per_seed(results, a, k, benchmark), per_seed(results, b, k, benchmark)
        if xa.empty or xb.empty:
            continue
        seeds = sorted(set(xa.index) & set(xb.index))
        name_a, name_b = column_name(a), column_name(b)
        if len(seeds) < 2:
            lines.append(f"{name_a} − {name_b} at Iter-{k}: {len(seeds)} paired seed(s); a confidence interval "
                         "needs at least 2 — no verdict")
            continue
        d = paired_difference([xa[s] for s in seeds], [xb[s] for s in seeds], confidence)
        lines.append(verdict(name_a, name_b, f"Iter-{k}", d))
    return lines


BUDGET_COLUMNS = ("steps", "sampled sequences", "trained sequences", "completion tokens", "train time (min)")


def budget_table(metrics: pd.DataFrame, methods: Sequence[str] = paper.METHODS) -> Table:
    """Per method: what one training run spent, mean over its seeds (from the trainer's metrics.jsonl).

    sampled sequences = Σ_steps trajectories/total (every completion the policy generated), trained sequences =
    Σ trajectories/kept (those with an advantage after pruning), completion tokens = Σ trajectories/total ×
    completions/mean_length, train time = Σ time/step_s over the rounds that sampled. A method whose trainer
    writes no round statistics (µCode's pipeline) has no row; the notes say so.
    """
    rows, shown = [], []
    if not metrics.empty and "trajectories/total" in metrics.columns:
        # the rounds that sampled (a reused round, or a baseline's own log lines such as µCode's SFT, has none)
        m = metrics.dropna(subset=["trajectories/total"])
        m = m.assign(tokens=m["trajectories/total"] * m["completions/mean_length"])
        if "variant" in m.columns:
            m = m[m["variant"].isin((*MAIN_VARIANTS, "samples"))]
            m = m.assign(method=[f"{x}@samples" if v == "samples" else x for x, v in zip(m["method"], m["variant"])])
        per_run = m.groupby(["method", "seed"]).agg(
            steps=("step", "max"), sampled=("trajectories/total", "sum"), trained=("trajectories/kept", "sum"),
            tokens=("tokens", "sum"), seconds=("time/step_s", "sum"))  # fmt: skip
        cols = [c for x in methods for c in (x, f"{x}@samples")]
        for method in [x for x in cols if x in set(per_run.index.get_level_values(0))]:
            g = per_run.loc[method]
            shown.append(method.partition("@")[0])
            rows.append([column_name(method), len(g), round(g["steps"].mean()),
                         round(g["sampled"].mean()), round(g["trained"].mean()), round(g["tokens"].mean()),
                         round(g["seconds"].mean() / 60, 1)])  # fmt: skip
    frame = pd.DataFrame(rows, columns=["method", "seeds", *BUDGET_COLUMNS])
    ran = set(metrics["method"]) if "method" in metrics.columns else set()
    missing = [paper.METHOD_NAMES.get(x, x) for x in methods if x in ran and x not in shown]
    notes = ["Per training run, mean over its seeds, from metrics.jsonl (docs/training.md lists the keys).",
             "Equal steps are not equal budgets: compare methods at the sampled sequences they used, not only at "
             "the steps.", "Train time is wall time on the machine that ran it, with whatever else it was doing."]
    if missing:
        notes.append(f"No round statistics for {', '.join(missing)} (its pipeline logs no sampled sequences).")
    return Table("main_table_budget", "Training budget per run", frame, notes)


def budget_curves(runs, k: int = 3) -> pd.DataFrame:
    """Held-out Iter-k pass@1 against the sampled sequences spent so far, one row per (run, checkpoint).

    Points per training seed: the base model at 0 sequences (its own run), each intermediate checkpoint
    (`curve.csv`, one sampling run) and the final model (`eval.csv`, the full evaluation), at Σ trajectories/total
    up to that step. Columns: method (a main-table column key, "grpo_mt@samples" for a matched baseline), seed,
    step, sampled, pass@1, final.
    """
    runs = list(runs)
    rows = []
    for run in runs:
        e, res = run.experiment, run.results
        if e.variant not in (*MAIN_VARIANTS, "samples"):
            continue
        col = f"{e.method}@samples" if e.variant == "samples" else e.method
        if "difficulty" in res.columns:
            res = res[res["difficulty"].fillna("all").astype(str) == "all"]
        final = float(res[res["k"] == k]["pass@1"].mean())
        if e.method == "base":
            rows.append(dict(method=col, seed=e.seed, step=0, sampled=0, **{"pass@1": final}, final=True))
            continue
        m = run.metrics
        if m is None or m.empty or "trajectories/total" not in m.columns:
            continue  # a pipeline without round statistics (µCode) has no x axis
        spent = m.dropna(subset=["trajectories/total"]).groupby("step")["trajectories/total"].sum().cumsum()
        points = [] if run.curve is None else [(int(r.step), float(r["pass@1"]), False)
                                              for _, r in run.curve[run.curve["k"] == k].iterrows()]  # fmt: skip
        points.append((int(spent.index.max()), float(final), True))
        for step, value, is_final in points:
            rows.append(dict(method=col, seed=e.seed, step=step, sampled=float(spent.loc[:step].iloc[-1]),
                             **{"pass@1": value}, final=is_final))  # fmt: skip
    return pd.DataFrame(rows, columns=["method", "seed", "step", "sampled", "pass@1", "final"])
