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
# # pass@1 by difficulty: LiveCodeBench-v6 Easy / Medium / Hard at Iter-1, 3, 5
#
# The paper (Qwen3-4B) reports MURPHY's Iter-5 gain over the base model growing with difficulty: +0.96
# (Easy), +4.38 (Medium), +4.20 (Hard) pp. On the `toy` profile the same table is built on the toy world's test split,
# whose difficulty is how many constants the prompt hides (easy: none, medium: one, hard: both — only feedback can
# reveal them). Writes `lcb_difficulty.{csv,md,tex,png}`.

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
benchmark = None  # None: "LCB-v6" on the paper profile, the toy world (easy/medium/hard by hidden constants) otherwise

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
if benchmark is None:
    benchmark = "LCB-v6" if profile == "paper" else S.profile.benchmarks[0]
if models is None and profile == "paper":
    models = ["Qwen3-4B"]  # the paper's LiveCodeBench runs
exps = S.plan(methods=methods, models=models, seeds=seeds, benchmarks=[benchmark])
print(f"{len(exps)} runs on {benchmark}")
runs = S.run(exps)

# %%
results = X.results_frame(runs)
agg = T.aggregate(results)
tables = T.lcb_difficulty_tables(agg, benchmark=benchmark)
# Murphy − Base and Murphy − GRPO-MT in every difficulty at the largest Iter-k (the paper's gains are at Iter-5)
tables[0].notes += X.paired_verdicts(results, k=max(S.profile.iters), pairs=BASE_PAIRS,
                                     benchmark=benchmark, difficulty=None)
paths = T.write_tables(tables, out, "lcb_difficulty")
display(Markdown(paths["md"].read_text()))

# %%
by_difficulty = agg[agg["difficulty"].str.lower() != "all"]
if not by_difficulty.empty:
    T.plot_pass_at_k(by_difficulty, out / "lcb_difficulty.png", title=f"{benchmark} by difficulty ({profile})")
    display(Image(str(out / "lcb_difficulty.png")))

# %%
assert from_cache_only or len(runs) == len(exps), (len(runs), len(exps))
assert agg["mean"].between(0, 100).all()

# %% [markdown]
# ## Summary
# Harder tasks need more turns, so that is where training for refinement should pay most: read the
# "Murphy − Base" column at Iter-5 next to the paper's gains.
