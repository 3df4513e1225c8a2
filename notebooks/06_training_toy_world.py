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
# # 06 · Training in the toy world: GRPO vs GRPO-MT vs MURPHY
#
# **Promise:** after this notebook you have trained a small language model three ways — single-turn GRPO, the
# multi-turn GRPO-MT baseline and MURPHY — with the project's real trainer (TRL under the hood), read their
# training curves, looked inside a tree MURPHY trained on, and compared Iter-1 and Iter-3 pass@1 on held-out tasks.
#
# **What you will learn**
# 1. the toy world: tasks whose hidden constants only execution feedback reveals (`murphy_lab.toy`);
# 2. one config, three methods: `MurphyConfig(mode="grpo" | "grpo_mt" | "murphy")` and `murphy_lab.train.train`;
# 3. what a run writes (`metrics.jsonl`, `trees/step_N.jsonl`) and how to plot it;
# 4. multi-turn evaluation (Iter-k pass@1, `murphy_lab.evaluate.evaluate`);
# 5. how little one short, single-seed run proves.
#
# With the defaults this takes under a minute on a laptop CPU. The toy policy ships with the package
# (`murphy_lab/toy/policy`, 0.56 MB), so nothing is built first. `policy_size = "smoke"` runs in seconds with a
# barely trained model (rewards near 0: it only checks the plumbing).

# %% tags=["parameters"]
policy_size = "toy"  # toy: the shipped SFT-trained toy policy; smoke: a tiny, barely trained one (built in seconds)
max_steps = 15  # optimizer steps per method
tasks_per_step = 8  # toy tasks per step (each grows one tree)
g1 = 4  # G1 (and G for single-turn GRPO)
g2 = 4  # G2 for MURPHY (GRPO-MT uses 1: one refinement chain per first attempt)
learning_rate = 1e-4  # AdamW learning rate of the toy profile (the paper uses 1e-6 for 1.7B-7B models)
eval_tasks = 40  # held-out test tasks for Iter-k pass@1 (0 skips the evaluation)
seed = 0
runs_dir = ""  # a folder with <method>/metrics.jsonl from earlier runs: plot those instead of training
out_dir = ""  # where new runs are written; empty: a fresh temporary folder
threads = 1  # torch threads
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import torch
import transformers

from murphy_lab.config import MurphyConfig
from murphy_lab.examples import check_answer
from murphy_lab.modes import mode
from murphy_lab.toy import make_tasks
from murphy_lab.tree import load_trees
from murphy_lab.viz import draw_tree, plot_curves

torch.set_num_threads(threads)
transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bars
warnings.filterwarnings("ignore", category=FutureWarning)  # transformers 5 renames, not ours to fix here
warnings.filterwarnings("ignore", message=".*pin_memory.*")

# %% [markdown]
# ## 1. The toy world
#
# Every task asks for `f(x) = x*A + B` (or `- B`); the prompt names the constants, but at least one is hidden as
# `?`. The visible tests are staged locks whose failure messages reveal a hidden constant — but only to an attempt
# that got the earlier stage right; a program that does not compile was cut off before its constants and reveals
# nothing. So the value of a failed first attempt depends on what its feedback reveals: exactly the distinction
# retrospective credit rewards (docs/toy_world.md measures it for the shipped policy).

# %%
for t in make_tasks("train", 3, seed=seed):
    print(f"prompt: {t.prompt.strip()}")
    print("  visible tests (the staged locks):", t.visible_tests.setup.strip().replace("\n", "\n  "), sep="\n  ")
    print("  hidden test:", *t.hidden_tests.cases)

# %% [markdown]
# ## 2. One config, three methods
#
# `MurphyConfig.for_profile("toy", ...)` starts from the toy profile's presets (reward and feedback from the
# visible tests, β = 0.04, lr 1e-4) and sets the method:
#
# | mode | tree | advantages |
# |---|---|---|
# | `grpo` | one group of G1 first attempts (`turns=1`) | plain GRPO on immediate rewards |
# | `grpo_mt` | G1 chains, one refinement per failure (`g2=1`) | chain's final reward broadcast to its turns |
# | `murphy` | G1 first attempts, G2 refinements per failure | MaRS credit, GRPO inside every group |

# %%
methods = {  # a mode implies the shape of what it grows (murphy_lab.modes): GRPO one turn, GRPO-MT G2 = 1
    "GRPO": mode("grpo").fields(),
    "GRPO-MT": mode("grpo_mt").fields(),
    "MURPHY": dict(mode("murphy").fields(), g2=g2, credit="mars"),
}
configs = {
    name: MurphyConfig.for_profile(
        "toy", g1=g1, max_steps=max_steps, per_device_train_batch_size=tasks_per_step * g1, learning_rate=learning_rate,
        seed=seed, save_steps=10**6, task_args={"policy_size": policy_size, "n": max(64, tasks_per_step * max_steps)}, **kw,
    )
    for name, kw in methods.items()
}
for name, cfg in configs.items():
    cfg.validate()
    print(f"{name:>8}: mode={cfg.mode}, g1={cfg.g1}, g2={cfg.g2}, turns={cfg.turns}, credit={cfg.credit}")

# %% [markdown]
# ## 3. Train (or read earlier runs)
#
# `train(config, output_dir)` builds (or loads from the cache) the toy policy, trains it and writes
# `metrics.jsonl` (one line per step) and the step's rollout trees under `trees/`. Each run shows one progress
# line (step, time left, turn-1 reward, share of trees solved, sequences sampled); the curves come in section 4.

# %%
root = Path(runs_dir or out_dir or tempfile.mkdtemp(prefix="murphy_06_"))
if not runs_dir:
    from murphy_lab.train import train

    for name, cfg in configs.items():
        with contextlib.redirect_stdout(io.StringIO()):  # keep the progress bar, drop the per-step log dicts
            train(cfg, root / name)
print("runs in", root)
runs = {name: [json.loads(line) for line in open(root / name / "metrics.jsonl")] for name in methods}
for name, rows in runs.items():
    print(f"{name:>8}: {len(rows)} steps, {sum(r['time/step_s'] for r in rows):.0f} s, "
          f"{sum(r['trajectories/kept'] for r in rows)} trajectories optimized")
assert all(len(rows) >= 1 for rows in runs.values())

# %% [markdown]
# ## 4. Training curves
#
# `murphy_lab.viz.plot_curves` plots any metric of the runs (`docs/training.md` lists every key). The turn-1 reward
# is what a single attempt achieves; `solved/tree_frac` is the share of tasks solved within the tree (any turn);
# `trajectories/kept` is the optimization work per step.

# %%
fig = plot_curves(runs, y=["reward/turn1_mean", "solved/tree_frac", "trajectories/kept"], smooth=3)
plt.show()

# %% [markdown]
# ## 5. Inside one of MURPHY's training trees
#
# The trees of every step are saved as JSON lines and load back with `murphy_lab.tree.load_trees`, credits and
# advantages included.

# %%
tree_files = sorted((root / "MURPHY" / "trees").glob("step_*.jsonl"))
last = load_trees(str(tree_files[-1]))
# the tree with the most distinct credits (ties: the larger one), where backup has something to show
tree = max(last, key=lambda t: (len({round(n.credit, 3) for n in t.nodes()}), len(t)))
print(f"{tree_files[-1].name}: {len(last)} trees; showing {tree.task_id} ({len(tree)} trajectories)")
fig = draw_tree(tree, color_by="credit")
plt.show()
assert all(n.credit is not None for n in tree.nodes())

# %% [markdown]
# ## 6. Multi-turn evaluation: Iter-k pass@1
#
# The Reflexion-style scaffold (docs/evaluation.md): attempt, run the *visible* tests, on failure re-prompt with
# [task, previous code, feedback], up to k attempts; the final code is judged on the *hidden* tests. Iter-k
# pass@1 is the share of tasks solved within k attempts. Held-out tasks come from the test split, whose functions
# never appear in training.

# %%
table = None
if eval_tasks and not runs_dir:
    from murphy_lab.evaluate import evaluate
    from murphy_lab.executor import Executor
    from murphy_lab.policy import TransformersPolicy
    from murphy_lab.toy import build_toy_policy

    test_tasks = make_tasks("test", eval_tasks, seed=seed + 1)
    models = {"base": build_toy_policy(size=policy_size)} | {name: str(root / name / "final") for name in methods}
    rows = []
    with Executor(timeout=2.0, workers=2) as ex:
        for name, path in models.items():
            df = evaluate(TransformersPolicy(path, max_new_tokens=48), test_tasks, ex, iters=(1, 3), runs=1,
                          seed=seed, progress=False)
            for _, r in df[df["difficulty"] == "all"].iterrows():
                rows.append({"model": name, "k": int(r["k"]), "pass@1": r["pass@1"]})
    table = pd.DataFrame(rows).pivot(index="model", columns="k", values="pass@1").loc[list(models)]
    table.columns = [f"Iter-{k}" for k in table.columns]
    table = table.round(1)
table

# %%
if table is not None:
    ax = table.plot.bar(figsize=(7.5, 3), rot=0, color=["#9ecae1", "#3182bd"])
    ax.set_ylabel("pass@1 (%)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # beside the bars, not on them
    ax.set_title(f"{eval_tasks} held-out toy tasks, one run, {max_steps} steps per method")
    plt.show()
    assert (table["Iter-3"] >= table["Iter-1"]).all()  # more attempts never solve fewer tasks

# %% [markdown]
# ## 7. How much does this show?
#
# Very little, on purpose: one seed, a few dozen steps, one small world. The project's measurements
# (`docs/toy_world.md`, `reproduce/`) run every method over several seeds and report mean ± std; an early prototype
# of the toy world found that rankings between multi-turn methods *flip with the training budget*, and that
# multi-turn training beat single-turn GRPO clearly at Iter-2/3. Read the curves above as a demonstration of the
# machinery, not as evidence for or against the paper's claim (MURPHY ≥ GRPO-MT at Iter-3).
#
# ## Summary
#
# - One `MurphyConfig` switches between GRPO, GRPO-MT and MURPHY; `train` writes metrics and trees per step.
# - MURPHY optimizes more trajectories per step (a whole tree) than GRPO-MT (chains) and GRPO (one group).
# - Iter-k pass@1 measures what multi-turn training is for: solving within k attempts using feedback.
#
# ## Exercises
#
# **1.** With G1 = 4, G2 = 4 and S = 2, at most how many trajectories does one MURPHY tree hold? And one GRPO-MT
# tree (G1 chains of up to 2 turns)? Give the pair.

# %%
answer_1 = None  # a pair (murphy, grpo_mt)
if solve_exercises:
    answer_1 = (4 + 4 * 4, 4 + 4 * 1)

# %%
check_answer("1", answer_1, (20, 8))

# %% [markdown]
# **2.** Which metric key of `metrics.jsonl` holds the share of kept trajectories whose advantage is exactly zero
# (no gradient)? Look at `runs["MURPHY"][0].keys()`.

# %%
answer_2 = None  # a metric name
if solve_exercises:
    answer_2 = "advantage/zero_frac"

# %%
assert answer_2 is None or answer_2 in runs["MURPHY"][0], f"{answer_2!r} is not a key of metrics.jsonl"
check_answer("2", answer_2, "advantage/zero_frac")
