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
# # 03 · Retrospective credit: which failures deserve credit?
#
# **Promise:** after this notebook you can compute MURPHY's MaRS and MeRS credits by hand, and you can see why
# MURPHY pushes up a failed attempt whose feedback led to a fix — and not one whose feedback said nothing.
#
# **What you will learn**
# 1. the paper's motivating example: an *informative* and an *uninformative* failure (MURPHY §1);
# 2. MaRS, the max-reward backup, by hand and with `murphy_lab.credit.mars`;
# 3. MeRS, the mean-reward backup with discount γ and normaliser Z, by hand and with `murphy_lab.credit.mers`;
# 4. what the credit does to the group-relative advantages that GRPO trains on;
# 5. how to read a credit-flow figure.
#
# Everything here is pure Python over a hand-made tree: no model, no executor, a second or two on a laptop.

# %% tags=["parameters"]
gamma = 1.0  # γ, the MeRS discount (paper ablations: 0.9 and 1.0)
seed = 0  # seed of the random 72-trajectory tree in the last section
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import matplotlib.pyplot as plt

from murphy_lab.credit import assign_credit, mars, mers
from murphy_lab.examples import check_answer, informative_failure_tree, paper_tree
from murphy_lab.grpo import group_advantages
from murphy_lab.scoring import score_tree
from murphy_lab.viz import draw_credit_flow, draw_tree, palette, plot_turn_histograms

# %% [markdown]
# ## 1. The example: two failures, one informative
#
# The task is `add_tax(price)`: add the shop's sales tax, which the prompt does not state (it is 20%). Four first
# attempts are sampled (G1 = 4) and executed on three tests:
#
# | | first attempt | r(v) | feedback f(v) | its 4 refinements |
# |---|---|---|---|---|
# | **A** | `price * 1.1` (runs, wrong rate) | 0 | `assert add_tax(10) == 12.0  # output: 11.0` — reveals the rate | 3 of 4 pass |
# | **B** | missing colon | 0 | `SyntaxError: expected ':'` — reveals nothing | 0 of 4 pass |
# | **C** | `price * 1.2` | 1 | (solved: a leaf) | — |
# | **D** | bad indentation | 0 | `IndentationError: ...` — reveals nothing | 1 of 4 pass, by luck |
#
# Every failed attempt v is expanded: its refinement prompt [task, v's code, f(v)] is sampled G2 = 4 times,
# and those samples form the group C(v). The figure colors each node by its immediate reward r(v), rings the
# candidates that pass every test, and writes under each group the feedback its prompt quoted.

# %%
tree = informative_failure_tree()
A, B, C, D = tree.root.children
print("A's feedback:\n" + A.feedback)
print("\nB's feedback:\n" + B.feedback)
fig = draw_tree(tree, color_by="reward")
plt.show()

# %% [markdown]
# Judged by immediate reward alone, A, B and D are the same: all three failed every test (r = 0). Yet A's
# feedback is what made three successful refinements possible, while B's and D's said nothing about the rate. Retrospective credit assigns each node a credit r̃(v) that looks at what its
# refinements achieved, computed **bottom-up**, leaves first. A leaf keeps its reward: r̃(v) = r(v).

# %% [markdown]
# ## 2. MaRS: the max-reward strategy (§3.2)
#
# $$\tilde r(v) = \max\Big(r(v),\ \max_{u \in C(v)} \tilde r(u)\Big)$$
#
# A failed attempt is worth as much as the best outcome reachable through its feedback. By hand, for the four
# turn-1 nodes (their children are leaves, so r̃(u) = r(u)):

# %%
by_hand = {
    "A": max(0, max(1, 1, 0, 1)),  # = 1: its refinements pass
    "B": max(0, max(0, 0, 0, 0)),  # = 0: none does
    "C": 1.0,  # a leaf: its own reward
    "D": max(0, max(0, 0, 1, 0)),  # = 1: one lucky refinement is enough for MaRS
}
mars(tree)  # the library: fills node.credit on every node, bottom-up
library = {v.meta["name"]: v.credit for v in tree.root.children}
print("by hand:", by_hand)
print("library:", library)
assert all(abs(by_hand[k] - library[k]) < 1e-12 for k in by_hand)

# %% [markdown]
# Colored by credit, A now looks like the solve C, while B stays dark. Labels read *reward → credit*.

# %%
fig = draw_tree(tree, color_by="credit")
plt.show()

# %% [markdown]
# ### Where did a credit come from?
#
# Under MaRS every credit is the reward of one node: follow, from v, the child whose credit equals r̃(v), until a
# node's own reward equals it. `draw_credit_flow` draws that argmax path. Here is D's: its credit of 1 comes from
# its third refinement — MaRS cannot tell a lucky fix from a reliable one.

# %%
fig = draw_credit_flow(tree, D)
plt.show()

# %% [markdown]
# ## 3. MeRS: the mean-reward strategy (§3.2)
#
# $$\tilde r(v) = \frac{r(v) + \gamma \cdot \frac{1}{|C(v)|}\sum_{u \in C(v)} \tilde r(u)}{Z(v)}$$
#
# The paper uses Z = 2 for an expanded (unsolved) node and Z = 1 for a terminal one; `murphy_lab` writes this as
# Z(v) = 1 + [v has children], which keeps r̃ in [0, 1] at any depth. MeRS averages where MaRS takes the max, so
# a reliable fix (A: 3 of 4) earns more than a lucky one (D: 1 of 4).

# %%
by_hand = {
    "A": (0 + gamma * (1 + 1 + 0 + 1) / 4) / 2,
    "B": (0 + gamma * 0.0) / 2,
    "C": 1.0,  # a leaf: Z = 1 and no children
    "D": (0 + gamma * (0 + 0 + 1 + 0) / 4) / 2,
}
mers(tree, gamma=gamma)
library = {v.meta["name"]: v.credit for v in tree.root.children}
print("by hand:", {k: round(x, 4) for k, x in by_hand.items()})
print("library:", {k: round(x, 4) for k, x in library.items()})
assert all(abs(by_hand[k] - library[k]) < 1e-12 for k in by_hand)
assert library["A"] > library["D"] > library["B"]  # MeRS ranks informative > lucky > uninformative

# %% [markdown]
# ## 4. From credit to advantages
#
# GRPO trains on the group-relative advantage of each member u of a group g (the turn-1 group here):
#
# $$\hat A(u) = \frac{\tilde r(u) - \operatorname{mean}_g \tilde r}{\operatorname{std}_g \tilde r + \varepsilon}$$
#
# Compare the turn-1 advantages with no backup (credit = immediate reward: what single-turn GRPO sees), MaRS and
# MeRS. Without backup, A, B and D get the same negative advantage: the informative failure is discouraged exactly
# as much as the useless ones. (GRPO-MT, which broadcasts a chain's final reward to all its turns, sees A's chain
# and B's chain as different only when their one sampled refinement happens to differ.) `assign_credit(tree, credit)` dispatches by name (`credit.CREDIT_RULES`); `group_advantages` fills `node.advantage`.

# %%
table = {}
for rule in ("none", "mars", "mers"):
    group_advantages(assign_credit(tree, credit=rule, gamma=gamma))
    table[rule] = {v.meta["name"]: round(v.advantage, 2) for v in tree.root.children}
    print(f"{rule:>5}:", table[rule])
assert table["none"]["A"] == table["none"]["B"] == table["none"]["D"]  # without backup: indistinguishable
assert table["mars"]["A"] > 0  # MaRS pushes A up, as much as the solve C
assert table["mers"]["A"] > table["mers"]["D"] > table["mers"]["B"]  # MeRS: informative > lucky > uninformative
assert table["mars"]["B"] < table["none"]["B"] and table["mers"]["B"] < table["none"]["B"]  # B is pushed further down

# %% [markdown]
# In training this step is `murphy_lab.scoring.score_tree(tree, config)`: pruning (notebook 04), then
# `assign_credit`, then `group_advantages`, with the config's `credit`, `gamma`, `b_grp`, `b_traj` and `backup_on`
# (the widgets of notebook 07 call the same function). Without pruning it gives exactly the advantages above:

# %%
scored = score_tree(informative_failure_tree(), credit="mers", gamma=gamma)
assert [round(v.advantage, 2) for v in scored.root.children] == [table["mers"][n] for n in "ABCD"]

# %%
fig, ax = plt.subplots(figsize=(6.5, 3))
names, width = list("ABCD"), 0.26
for k, rule in enumerate(table):
    ax.bar([i + (k - 1) * width for i in range(4)], [table[rule][n] for n in names], width, label=rule)
ax.axhline(0, color=palette.EDGE, lw=0.8)
ax.set_xticks(range(4), [f"{n}\n{d}" for n, d in zip(names, ("informative", "uninformative", "solved", "lucky"))])
ax.set_ylabel("turn-1 advantage Â")
ax.set_title("the same four attempts under three credit rules")
ax.legend(frameon=False, fontsize=8)
plt.show()

# %% [markdown]
# ## 5. On a bigger tree
#
# The paper's setting, G1 = G2 = 8 and S = 2 with every first attempt failing, gives trees of 72 trajectories. On
# such a tree, MaRS lifts most turn-1 credits to 1 (one good refinement in eight is likely), while MeRS spreads
# them out: the histograms below show reward and credit per turn.

# %%
big = mars(paper_tree(seed=seed))
fig = plot_turn_histograms(big)
plt.show()
turn1 = [v for v in big.nodes() if v.turn == 1]
assert all(v.credit >= v.reward for v in turn1)  # MaRS never lowers a credit below the node's own reward

# %% [markdown]
# ## Summary
#
# - Credit flows **bottom-up**: leaves keep their reward, a failed attempt inherits from its refinements.
# - **MaRS** takes the max: an attempt is as good as the best fix its feedback enabled (optimistic; one lucky fix
#   is enough). **MeRS** takes a discounted mean over Z(v): it rewards feedback that *reliably* leads to a fix.
# - Without backup, an informative failure and an uninformative one look alike to GRPO; with backup the first is
#   pushed up and the second down. That is MURPHY's answer to GRPO-MT's coarse credit.
#
# ## Exercises
#
# Each exercise has a cell for your answer (leave `None` until you have one) and a check cell.
#
# **1.** With γ = 0.9, what is the MeRS credit of A? Compute it by hand from the equation in §3.

# %%
answer_1 = None  # your number here
if solve_exercises:
    answer_1 = (0 + 0.9 * 0.75) / 2

# %%
check_answer("1", answer_1, mers(informative_failure_tree(), gamma=0.9).root.children[0].credit)

# %% [markdown]
# **2.** For which γ is the MeRS credit of D exactly 0.1?

# %%
answer_2 = None  # your number here
if solve_exercises:
    answer_2 = 0.8  # (0 + γ · 1/4) / 2 = 0.1  =>  γ = 0.8

# %%
if answer_2 is not None:
    print("D's MeRS credit at your γ:", mers(informative_failure_tree(), gamma=answer_2).root.children[3].credit)
check_answer("2", None if answer_2 is None else mers(informative_failure_tree(), gamma=answer_2).root.children[3].credit, 0.1)

# %% [markdown]
# **3.** In the 72-trajectory tree `paper_tree(seed)`, how many of the 8 turn-1 nodes get MaRS credit 1.0?
# Count them from the figure `draw_tree(mars(paper_tree(seed)), color_by="credit")`, then check.

# %%
answer_3 = None  # your count here
if solve_exercises:
    answer_3 = sum(1 for v in mars(paper_tree(seed=seed)).root.children if v.credit == 1.0)

# %%
check_answer("3", answer_3, sum(1 for v in big.root.children if v.credit == 1.0))
