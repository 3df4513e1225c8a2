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
# # 09 · Credit rules side by side: MaRS, MeRS and the multi-turn rules of other trainers
#
# **Promise:** after this notebook you can say, for one real tree, which nodes each credit rule of
# `murphy_lab.credit.CREDIT_RULES` pushes up and which it pushes down — and why MaRS and the others disagree on a
# failed first attempt whose feedback led to a fix.
#
# **What you will learn**
# 1. the rule table: each rule's knobs, label and source;
# 2. the rules on the paper's informative-failure example, by hand;
# 3. one tree grown by the shipped toy-world policy, scored by every rule (one figure);
# 4. which rules compare siblings (GRPO in each group) and which bring their own baseline (MT-GRPO, GiGPO, Kevin).
#
# docs/credit_rules.md has every equation and the toy ablation's results beside each rule. Runs in under a minute.

# %% tags=["parameters"]
toy_size = "toy"  # the toy-world policy: "toy" (shipped, trained) or "smoke" (seconds to build, barely trained)
task_index = 0  # which toy training task grows the tree
g1 = 8  # G1, first attempts
g2 = 4  # G2, refinements per failed attempt
seed = 0
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import matplotlib.pyplot as plt
import pandas as pd
import transformers

from murphy_lab.credit import CREDIT_RULES, turn_credit, treerpo
from murphy_lab.examples import check_answer, informative_failure_tree
from murphy_lab.viz.widgets import compare_rules, draw_rule_comparison

transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar

# %% [markdown]
# ## 1. The rule table
#
# Every rule carries its function, its knobs (name, default, range, the values the credit ablation trains) and its
# label; the config, the widgets' sliders, the ablation's rows and its verdict lines are built from this table.

# %%
pd.DataFrame([dict(rule=name, label=r.label, knobs=", ".join(f"{k.name}={k.default:g} in [{k.low:g}, {k.high:g}]"
                                                           for k in r.knobs) or "-",
                   advantages="its own" if r.advantages else "GRPO in each sibling group", source=r.source)
              for name, r in CREDIT_RULES.items()])

# %% [markdown]
# ## 2. The informative failure, under every rule
#
# A (informative: 3 of its 4 refinements pass), B (uninformative: 0 of 4), C (solved), D (1 of 4, by luck). The
# table gives each first attempt's credit r̃ and advantage Â, with γ = 1 for every rule that reads one; the
# advantage is GRPO over the four first attempts, Â = (r̃ − mean r̃) / (std r̃ + 1e-4), except for the rules that
# bring their own baseline (reward-to-go, MT-GRPO, GiGPO).

# %%
example = informative_failure_tree()
scored = compare_rules(example)
pd.DataFrame({CREDIT_RULES[name].label: [f"{v.credit:.3f} / {v.advantage:+.2f}" for v in t.root.children]
              for name, t in scored.items()}, index=["A (informative)", "B (uninformative)", "C (solved)", "D (lucky)"])

# %% [markdown]
# How to read A's column, rule by rule:
#
# - **MaRS** gives A the credit of its best refinement: r̃(A) = max(0, 1) = 1, as C; so A's advantage is +0.50,
#   level with C.
# - **MeRS** gives A its own reward plus the mean credit of its refinements, divided by the normaliser Z(v):
#   r̃(A) = (r(A) + γ·3/4) / Z(A) = (0 + 0.75) / 2 = 0.375. Z(v) = 1 + [v has children] is 2 for a node that was
#   refined and 1 for a leaf (so C keeps 1): it keeps every credit in [0, 1] whatever the depth (the paper's
#   default; `credit.default_z`). 0.375 is exactly the mean credit of the four first attempts,
#   (0.375 + 0 + 1 + 0.125) / 4, so A's advantage is **+0.00**: MeRS ranks A above B and D but pushes it neither up
#   nor down, while MaRS pushes it up as far as C.
# - **TreeRPO** and **reward-to-go** use the mean of the refinements without the divisor, 0.75 (reward-to-go adds
#   r(A) = 0 and normalises over every node of the tree, not over the first attempts).
# - **turn credit** gives A the share of its refinements' progress smeared back to turn 1 (half of each passing
#   refinement's progress of 1, averaged over the four): 0.375, and for the same reason as MeRS an advantage of
#   +0.00.
# - **no backup** sees only r(A) = 0: A is pushed down with B and D. **MT-GRPO** and **GiGPO** compare A with the
#   other first attempts through their own baselines.
#
# The numbers quoted here are checked against the table:

# %%
first = {name: t.root.children[0] for name, t in scored.items()}  # A under every rule
assert first["mars"].credit == 1.0 and abs(first["mars"].advantage - 0.50) < 0.005
assert abs(first["mers"].credit - (0 + 0.75) / 2) < 1e-12 and abs(first["mers"].advantage) < 1e-9
assert abs(sum(v.credit for v in scored["mers"].root.children) / 4 - 0.375) < 1e-12  # the group's mean credit
assert scored["mers"].root.children[2].credit == 1.0  # C, a leaf: Z = 1
assert first["treerpo"].credit == first["reward_to_go"].credit == 0.75
assert abs(first["turn_credit"].credit - 0.375) < 1e-12 and abs(first["turn_credit"].advantage) < 1e-9
assert first["none"].credit == 0.0 and first["none"].advantage < 0
print("every number quoted above matches the table")

# %% [markdown]
# ## 3. One real tree
#
# The tree below is grown by the shipped toy-world policy (`murphy_lab.toy`): G1 first attempts at a toy task, G2
# refinements of each failure, rewards from the executor. Each row of the figure is one rule, each column one node
# (the turn-1 group, then the refinements C(i) of the i-th first attempt), colored by its advantage.

# %%
from murphy_lab.policy import TransformersPolicy
from murphy_lab.rollout import build_task_trees
from murphy_lab.toy import build_toy_policy, make_tasks
from murphy_lab.toy.execution import get_executor

task = make_tasks("train", task_index + 1, seed=seed)[task_index]
policy = TransformersPolicy(build_toy_policy(size=toy_size, seed=seed), max_new_tokens=48)
with get_executor() as executor:
    (tree,) = build_task_trees([task], policy, executor, g1=g1, g2=g2, turns=2, reward_tests="visible",
                               progress=True, seed=seed)  # a bar over the rollout's two turns
print(f"{len(tree)} trajectories; first attempts: {[v.reward for v in tree.root.children]}")

# %%
fig = draw_rule_comparison(tree)
plt.show()

# %% [markdown]
# Read the figure column by column (each rule that reads γ at its ablation value): a failed first attempt whose
# refinements mostly pass is typically blue under MaRS, MeRS, TreeRPO and GiGPO (they back its refinements' success
# up to it), paler under turn credit (only part of the refinements' progress is smeared back), and red under
# "no backup" (it failed). Reward-to-go and MT-GRPO normalise
# over more than one group, so their refinements' colors depend on the whole tree, not only on their siblings.

# %% [markdown]
# ## Summary
#
# - `CREDIT_RULES` is one table: a rule is its backup function, its knobs and label, and (for MT-GRPO, GiGPO and
#   Kevin's reward-to-go) its own advantage baseline.
# - On the informative failure, MaRS alone gives A the full credit of its best refinement; the mean-based rules give
#   it the share of refinements that passed (MeRS divided by Z(v) = 2, which puts A exactly at its group's mean:
#   advantage 0); turn credit gives it part of their progress.
# - `reproduce/ablation_credit.ipynb` trains the toy policy once per rule on the same trees' budget and compares
#   each with MaRS, paired by seed.

# %% [markdown]
# ## Exercises
#
# **1.** With γ = 1, what credit does turn credit give A on the informative-failure example? (Each passing
# refinement made progress 1 at turn 2; half of it is smeared back to turn 1; A receives the mean over its four
# refinements.)

# %%
answer_1 = None  # a number
if solve_exercises:
    answer_1 = 0.375  # mean(1/2, 1/2, 1/2, 0)

# %%
check_answer("1", answer_1, turn_credit(informative_failure_tree(), gamma=1.0).root.children[0].credit)

# %% [markdown]
# **2.** What credit does TreeRPO give D (one of its four refinements passes)?

# %%
answer_2 = None  # a number
if solve_exercises:
    answer_2 = 0.25  # the mean credit of its four refinements (leaves: their rewards)

# %%
check_answer("2", answer_2, treerpo(informative_failure_tree()).root.children[3].credit)
