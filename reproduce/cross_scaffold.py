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
# # Across scaffolds: the trained models under Reflexion, LATS and DoT
#
# MURPHY is trained with one refinement prompt (Reflexion-style). The paper reports that its gains hold when the
# same checkpoints are evaluated under other test-time scaffolds (LATS, DoT) — it prints no table, so there is no
# number to compare with. Checkpoints are keyed by the training config only, so this notebook reuses the main table's
# models and only evaluates. Writes `cross_scaffold.{csv,md,tex,png}`.

# %% [markdown]
# **Parameters** (papermill: `-p name value`). `profile`: `smoke` (CI, seconds), `toy` (a laptop CPU, minutes;
# `make demo`), `paper` (8×H100). `None` means the profile's default (`murphy_lab.profiles`).

# %% tags=["parameters"]
profile = "toy"  # smoke | toy | paper
models = None  # e.g. ["Qwen3-1.7B"]; None: the profile's models
methods = ["base", "grpo_mt", "murphy"]
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
scaffolds = None  # None: the profile's (reflexion, lats, dot); the trained models are reused unchanged

# %%
from IPython.display import Image, Markdown, display

from murphy_lab import experiments as X
from murphy_lab.experiments import paper_tables as T
from murphy_lab.experiments.verdicts import BASE_PAIRS

# The paper profile stops here, with the reason, on a machine without CUDA. S.plan / S.run carry these settings.
S = X.setup(profile, output_dir, cache_dir, train=train, from_cache_only=from_cache_only, backend=backend,
            model_paths=model_paths, train_overrides=train_overrides, torch_threads=torch_threads)
out = S.out  # results/<profile>: run records, tables, figures

# %%
if scaffolds is None:
    scaffolds = list(S.profile.scaffolds)
exps = [e for sc in scaffolds for e in S.plan(methods=methods, models=models, seeds=seeds,
                                              benchmarks=benchmarks, scaffold=sc)]
print(f"{len(exps)} runs under", ", ".join(scaffolds))
runs = S.run(exps)

# %%
results = X.results_frame(runs)
agg = T.aggregate(results)
tables = T.cross_scaffold_tables(agg, methods=methods)
# Murphy − Base and Murphy − GRPO-MT under each scaffold, per cell, paired by training seed, at Iter-3
verdict_k = 3 if 3 in S.profile.iters else max(S.profile.iters)
tables[0].notes += X.paired_verdicts(results, k=verdict_k, pairs=BASE_PAIRS)
paths = T.write_tables(tables, out, "cross_scaffold")
display(Markdown(paths["md"].read_text()))

# %%
if not agg.empty:
    shown = T.main_rows(agg).assign(benchmark=lambda d: d["benchmark"] + " · " + d["scaffold"])
    T.plot_pass_at_k(shown, out / "cross_scaffold.png", title=f"Across scaffolds ({profile})")
    display(Image(str(out / "cross_scaffold.png")))

# %%
assert from_cache_only or len(runs) == len(exps), (len(runs), len(exps))
assert agg["mean"].between(0, 100).all()

# %% [markdown]
# ## Summary
# A gain that survives a change of scaffold was learned by the model, not by the prompt format. Compare the
# "Murphy − Base" column across scaffolds.
