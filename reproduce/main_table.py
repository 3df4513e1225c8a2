# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Main table: MURPHY against its baselines, pass@1 by Iter-k
#
# Regenerates the paper's main table (arXiv 2511.07833, Table 1): each model is trained with single-turn
# GRPO, GRPO-MT, µCode, ReVeal and MURPHY (MaRS credit), then every model — the base one included — is evaluated in
# the format it was trained in (the Reflexion-style refinement scaffold; ReVeal its own generation/verification
# rounds), and pass@1 after k attempts (Iter-k) is reported as mean ± std over seeds.
#
# What this notebook does, all through `murphy_lab.experiments` (one cached run per model × method × seed) and
# `murphy_lab.experiments.paper_tables` (the paper's layout, the paper's numbers beside ours, the difference):
#
# 1. plan the runs, 2. train and evaluate what is not cached yet, 3. write `main_table.{csv,md,tex}` and
#    `main_table.png` under `results/<profile>/`. The runs' wall times go to `main_table_times.csv` beside them
#    (git-ignored: a rerun changes them, never the tables), and the notebook ends with the table and its verdict.
#
# On the `toy` profile the model and benchmark are the project's own synthetic world, so no cell can be compared with
# the paper's numbers; the table shows the layout and the qualitative effects (multi-turn training helps refinement).

# %% [markdown]
# **Parameters** (papermill: `-p name value`). `profile`: `smoke` (CI, seconds), `toy` (a laptop CPU, minutes;
# `make demo`), `paper` (8×H100). `None` means the profile's default (`murphy_lab.profiles`).

# %% tags=["parameters"]
profile = "toy"  # smoke | toy | toy-full (make demo-full: the powered design) | paper
models = None  # e.g. ["Qwen3-1.7B"]; None: the profile's models
methods = None  # None: the profile's (smoke, paper: all six; toy: base, grpo, grpo_mt, murphy, the others "–")
seeds = None  # training seeds; None: the profile's (smoke: 0; toy and paper: 0, 1, 2)
benchmarks = None  # None: the profile's (toy: the toy world's test split; paper: HumanEval, MBPP, LCB-v6)
output_dir = "results"  # tables and run records go to <output_dir>/<profile>/
cache_dir = "cache"  # checkpoints (large, git-ignored) go to <cache_dir>/<profile>/
train = True  # False: evaluate existing checkpoints only (missing ones are an error that says where it looked)
from_cache_only = False  # True: build the tables from finished runs alone; nothing is trained or evaluated
backend = "real"  # "stand-in": fake train/evaluate that only exercise the pipeline (numbers are NOT measurements)
model_paths = {}  # {"Qwen3-1.7B": "/ckpt/base", "Qwen3-1.7B/murphy/mars/seed0": "/ckpt/murphy-s0"}: a base model per model key, one checkpoint per run label (`python -m murphy_lab.experiments.jobs list` prints them); used as they are
train_overrides = {}  # trainer-config fields on top of the profile's, e.g. {"max_steps": 20} (part of the run keys)
torch_threads = 1

# %%
from IPython.display import Image, Markdown, display

import matplotlib.pyplot as plt

from murphy_lab import experiments as X
from murphy_lab.experiments import paper_tables as T
from murphy_lab import viz

# The paper profile stops here, with the reason, on a machine without CUDA. S.plan / S.run carry these settings;
# S.profile is the resolved profile (its seeds, iters, scaffolds, benchmarks).
S = X.setup(profile, output_dir, cache_dir, train=train, from_cache_only=from_cache_only, backend=backend,
            model_paths=model_paths, train_overrides=train_overrides, torch_threads=torch_threads)
out = S.out  # results/<profile>: run records, tables, figures

# %% [markdown]
# ## 1. Plan and run
# One `Experiment` per (model, method, seed); its folder under `runs/` is named by the hash of its resolved config
# and the code version, so a finished run is never recomputed.

# %%
exps = S.plan(methods=methods, models=models, seeds=seeds, benchmarks=benchmarks)
print(f"{len(exps)} runs:", ", ".join(sorted({f"{e.model}/{e.method}" for e in exps})))
runs = S.run(exps)

# %% [markdown]
# ## 2. The table, the paper's table, and the cells they share

# %%
results = X.results_frame(runs)
agg = T.aggregate(results)
tables = T.main_tables(agg, profile=profile)
# One verdict line per comparison and table cell (model, benchmark; paired by training seed over the seeds both
# methods finished in that cell, 95% t interval) in the main table's notes, at one pre-chosen Iter-k.
verdict_k = 3 if 3 in S.profile.iters else max(S.profile.iters)
verdict_lines = X.paired_verdicts(results, k=verdict_k)
tables[0].notes += verdict_lines
# What each method spent: sampled and trained sequences, completion tokens (equal steps ≠ equal budgets). The wall
# times, which change with the machine and its load on every rerun, go to a separate, git-ignored file.
tables.insert(1, X.budget_table(X.metrics_frame(runs), wall_time=False))
paths = T.write_tables(tables, out, "main_table")
X.budget_table(X.metrics_frame(runs)).frame.to_csv(out / "main_table_times.csv", index=False)
display(Markdown(paths["md"].read_text()), exclude=["text/plain"])  # rendered here; the log gets it at the end

# %% [markdown]
# ## 3. pass@1 against Iter-k
# Each extra attempt lets the scaffold repair with the visible tests' feedback. Multi-turn training (GRPO-MT,
# MURPHY) should bend these curves upward more than single-turn GRPO does.

# %%
if not agg.empty:
    T.plot_pass_at_k(T.main_rows(agg), out / "main_table.png",
                     title=f"Main table: pass@1 against attempts (mean ± std over seeds; profile {profile})")
    display(Image(str(out / "main_table.png")), exclude=["text/plain"])

# %% [markdown]
# ## 4. pass@1 against the sequences sampled
# Equal steps are not equal budgets. Each line follows one method's held-out Iter-3 pass@1 from the base model
# (0 sequences) through its intermediate checkpoints to the final model, at the sequences it had sampled by then
# (mean and band over seeds). Profiles with `curve=True` (`toy-full`) evaluate the intermediate checkpoints; the
# others have only the two end points. A line still rising at its last point has not reached its plateau.

# %%
curves = X.budget_curves(runs, k=verdict_k)
cells = list(dict.fromkeys(zip(agg["model"], agg["benchmark"])))  # the figure's title says what was run, in words
where = T.panel_title(*cells[0]) if len(cells) == 1 else f"{len(cells)} models × benchmarks"
if (curves["method"] != "base").any():
    curves.to_csv(out / "main_table_curves.csv", index=False)
    viz.plot_budget_curves(curves, out / "main_table_curves.png", k=verdict_k, names={
        m: T.column_name(m) for m in curves["method"].unique()}, title=f"Main table: {where} (profile {profile})")
    plt.close("all")
    display(Image(str(out / "main_table_curves.png")), exclude=["text/plain"])

# %%
# Checks: every planned run is there (unless rebuilding from a partial cache), and every number is a percentage.
assert from_cache_only or len(runs) == len(exps), (len(runs), len(exps))
assert agg["mean"].between(0, 100).all()
assert (out / "main_table.md").exists() and (out / "main_table.tex").exists() and (out / "main_table.csv").exists()

# %% [markdown]
# ## The table and the verdict
# Our table (the paper's and the budget are in `main_table.md`); its last notes are the verdict lines, one per
# comparison: the last thing `make demo` prints.

# %%
print(tables[0].to_markdown())

# %% [markdown]
# ## Summary
# - `results/<profile>/main_table.md` holds our table, the paper's, and the matching cells with their difference.
# - µCode and ReVeal train with their own pipelines (`murphy_lab.baselines.mucode`, `.reveal`: each method is one
#   entry of `murphy_lab.methods`) on the same training tasks as every column; µCode is evaluated with the Reflexion
#   scaffold, ReVeal in its tagged rounds with the same public-test feedback (its own loop: scaffold "reveal-own"). The toy demo leaves them out by default (the table's notes say why).
# - Rebuild from the cache alone with `-p from_cache_only True`; evaluate checkpoints trained elsewhere with
#   `-p train False -p model_paths '{"Qwen3-1.7B/murphy/mars/seed0": "/path", ...}'` (one checkpoint per run label:
#   `python -m murphy_lab.experiments.jobs list` prints them).
