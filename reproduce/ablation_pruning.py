# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Pruning ablation: none, IntraP, InterP
#
# The tree of a task has G1 + G1·G2 trajectories (72 with G = 8). IntraP keeps the `b_traj` members of every group
# that contribute most to its reward variance (72 → 36); InterP keeps the `b_grp` turn-2 groups of highest reward
# variance (72 → 40). The paper (Qwen3-1.7B) reports InterP cutting optimization time by 74.1% (step time by
# 21.4%) at little cost in pass@1. This notebook trains MURPHY (MaRS) with each pruning and each order of pruning
# and credit backup (`backups`: over the full tree, the default, or over the pruned tree, the paper flowchart's
# order; docs/notation.md, "Backup order"), reads trajectories kept, optimization time and step time from the
# trainer's `metrics.jsonl`, and writes `ablation_pruning.{csv,md,tex,png}`.

# %% [markdown]
# **Parameters** (papermill: `-p name value`). `profile`: `smoke` (CI, seconds), `toy` (a laptop CPU, minutes;
# `make demo`), `paper` (8×H100). `None` means the profile's default (`murphy_lab.profiles`).

# %% tags=["parameters"]
profile = "toy"  # smoke | toy | paper
models = None  # e.g. ["Qwen3-1.7B"]; None: the profile's models
methods = ["murphy"]
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
prunings = ["none", "intrap", "interp"]  # no pruning, IntraP (b_traj per group), InterP (b_grp groups per turn)
backups = ["full", "pruned"]  # credit backup over the full tree (default) / the pruned tree, for each pruning

# %%
from IPython.display import Image, Markdown, display

from murphy_lab import experiments as X
from murphy_lab.experiments import ablation_tables as A
from murphy_lab.experiments import paper_tables as T
from murphy_lab.experiments.verdicts import PRUNING_PAIRS

# The paper profile stops here, with the reason, on a machine without CUDA. S.plan / S.run carry these settings.
S = X.setup(profile, output_dir, cache_dir, train=train, from_cache_only=from_cache_only, backend=backend,
            model_paths=model_paths, train_overrides=train_overrides, torch_threads=torch_threads)
out = S.out  # results/<profile>: run records, tables, figures

# %%
variants = X.pruning_variants(prunings, backups)
if models is None and profile == "paper":
    models = ["Qwen3-1.7B"]
exps = S.plan(methods=methods, models=models, seeds=seeds, benchmarks=benchmarks, variants=variants)
print(f"{len(exps)} runs:", ", ".join(sorted({e.variant for e in exps})))
runs = S.run(exps)

# %%
results = X.results_frame(runs)
agg = T.aggregate(results)
metrics = X.metrics_frame(runs)
tables = A.ablation_pruning_tables(T.main_rows(agg), metrics)
# each pruning rule − no pruning, per cell (model, benchmark, Iter-k), paired by training seed
tables[0].notes += X.paired_verdicts(results, k=None, pairs=PRUNING_PAIRS)
paths = T.write_tables(tables, out, "ablation_pruning")
display(Markdown(paths["md"].read_text()))

# %%
if not metrics.empty:
    A.plot_pruning_cost(metrics, out / "ablation_pruning_cost.png")
    display(Image(str(out / "ablation_pruning_cost.png")))
if not agg.empty:
    T.plot_pass_at_k(T.main_rows(agg), out / "ablation_pruning.png", title=f"Pruning ablation ({profile})")
    display(Image(str(out / "ablation_pruning.png")))

# %%
assert from_cache_only or len(runs) == len(exps), (len(runs), len(exps))
assert agg["mean"].between(0, 100).all()

# %% [markdown]
# ## Summary
# Pruning shrinks the loss's batch (fewer trajectories to score and back-propagate) but not the rollout, so the
# optimization time drops much more than the step time: the paper's −74.1% vs −21.4%. On a CPU with a tiny model the
# split between generation and optimization differs, so compare the *direction* of the effect, not its size.
