"""What a comparison between methods may claim: paired verdict lines and the budget each method spent.

    lines = paired_verdicts(X.results_frame(runs), k=3)      # MURPHY − GRPO-MT, MURPHY − GRPO at Iter-3
    budget = budget_table(X.metrics_frame(runs))             # sampled / trained sequences, tokens, time per run

A verdict pairs the runs of two methods by training seed (same base, same task order, same held-out tasks:
`murphy_lab.stats`), so it is only as strong as the number of seeds both methods finished. The budget table says
what "equal steps" cost each method: a MURPHY step samples a whole tree, a GRPO step one group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from murphy_lab.experiments import paper
from murphy_lab.experiments.table import DASH, Table
from murphy_lab.experiments.tables import column_key, column_name
from murphy_lab.stats import paired_difference, verdict

# the comparisons the main table's notes state; "<method>@samples" is that baseline at MURPHY's sample budget
PAIRS = (("murphy", "grpo_mt"), ("murphy", "grpo_mt@samples"), ("murphy", "grpo"), ("murphy", "mucode@samples"))


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
    """Per method: what one training run spent, mean over its seeds (from the run's metrics.jsonl).

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
        metrics = metrics.assign(method=[column_key(m, v) for m, v in zip(metrics["method"], metrics["variant"])])
    per_run = {key: _run_budget(g) for key, g in metrics.groupby(["method", "seed"])} if not metrics.empty else {}
    per_run = {key: b for key, b in per_run.items() if b is not None}
    for col in (c for x in methods for c in (x, column_key(x, "samples"))):
        runs = [b for (method, _), b in per_run.items() if method == col]
        if not runs:
            continue
        shown.append(col.partition("@")[0])
        mean = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
        count = {k: DASH if math.isnan(v) else round(v) for k, v in mean.items()}  # "–": not logged (µCode's steps)
        rows.append([column_name(col), len(runs), count["steps"], count["sampled"], count["trained"], count["tokens"],
                     round(mean["seconds"] / 60, 1)])  # fmt: skip
    frame = pd.DataFrame(rows, columns=["method", "seeds", *BUDGET_COLUMNS])
    ran = set(metrics["method"].str.partition("@")[0]) if "method" in metrics.columns else set()
    missing = [paper.METHOD_NAMES.get(x, x) for x in methods if x in ran and x not in shown]
    notes = ["Per training run, mean over its seeds, from metrics.jsonl (docs/training.md lists the keys).",
             "Equal steps are not equal budgets: compare methods at the sampled sequences they used, not only at "
             "the steps.", "Train time is wall time on the machine that ran it, with whatever else it was doing."]
    if "mucode" in shown:
        notes.append("µCode has rounds, not steps: sampled = its rollout chains' attempts, trained = the rows of "
                     "its last SFT (docs/mucode.md).")
    if missing:
        notes.append(f"No round statistics for {', '.join(missing)} (its pipeline logs no sampled sequences).")
    return Table("main_table_budget", "Training budget per run", frame, notes)


def _run_budget(g: pd.DataFrame) -> dict | None:
    """One run's spend from its metrics lines (an RL trainer's steps, or µCode's stages); None if it logged none."""
    nan = float("nan")
    if "trajectories/total" in g.columns and "step" in g.columns and g["step"].notna().any():
        s = g.dropna(subset=["trajectories/total"])  # the rounds that sampled (a reused round has none)
        if not s.empty:
            return dict(steps=float(s["step"].max()), sampled=float(s["trajectories/total"].sum()),
                        trained=float(s["trajectories/kept"].sum()),
                        tokens=float((s["trajectories/total"] * s["completions/mean_length"]).sum()),
                        seconds=float(s["time/step_s"].sum()))  # fmt: skip
    if "stage" not in g.columns:
        return None
    stage = g["stage"].fillna("").astype(str)
    rollouts, sft = g[stage.str.endswith("/rollouts")], g[stage.str.endswith("/sft")]
    if rollouts.empty or "attempts" not in g.columns:
        return None
    tokens = (rollouts["attempts"] * rollouts["completions/mean_length"]).sum(min_count=len(rollouts)) \
        if "completions/mean_length" in g.columns else nan
    return dict(steps=nan, sampled=float(rollouts["attempts"].sum()),
                trained=float(sft["rows"].iloc[-1]) if not sft.empty and "rows" in sft.columns else nan,
                tokens=float(tokens), seconds=float(g["seconds"].sum()))  # fmt: skip


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
        if e.method == "base":
            rows.append(dict(method=col, seed=e.seed, step=0, sampled=0, **{"pass@1": final}, final=True))
            continue
        m = run.metrics
        if m is None or m.empty:
            continue
        if "step" not in m.columns:  # µCode's stage log: one point, the final model at all it sampled
            spend = _run_budget(m)
            if spend is not None:
                rows.append(dict(method=col, seed=e.seed, step=0, sampled=spend["sampled"], **{"pass@1": final},
                                 final=True))  # fmt: skip
            continue
        if "trajectories/total" not in m.columns:
            continue  # no round statistics: no x axis
        spent = m.dropna(subset=["trajectories/total"]).groupby("step")["trajectories/total"].sum().cumsum()
        points = [] if run.curve is None else [(int(r.step), float(r["pass@1"]), False)
                                              for _, r in run.curve[run.curve["k"] == k].iterrows()]  # fmt: skip
        points.append((int(spent.index.max()), float(final), True))
        for step, value, is_final in points:
            rows.append(dict(method=col, seed=e.seed, step=step, sampled=float(spent.loc[:step].iloc[-1]),
                             **{"pass@1": value}, final=is_final))  # fmt: skip
    return pd.DataFrame(rows, columns=["method", "seed", "step", "sampled", "pass@1", "final"])
