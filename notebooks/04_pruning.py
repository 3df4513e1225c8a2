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
# # 04 · Pruning: which trajectories are worth a gradient?
#
# **Promise:** after this notebook you know what MURPHY's two pruning rules keep and drop, you have reproduced the
# paper's 72 → 40 (InterP) and 72 → 36 (IntraP) trajectory counts, and you have measured how much optimization
# work pruning saves on a small model.
#
# **What you will learn**
# 1. why a tree of 72 trajectories is expensive and partly useless (zero-variance groups give zero advantages);
# 2. InterP: keep the `b_grp` refinement groups with the highest reward variance (§3.3);
# 3. IntraP: inside each group keep the `b_traj` members that contribute most to its variance (§3.3);
# 4. the subtle part: credit backup on the pruned tree vs on the full tree;
# 5. what pruning buys: the time of a loss + backward pass over the kept trajectories.

# %% tags=["parameters"]
seed = 0  # seed of the random 72-trajectory tree
b_grp = 4  # InterP budget b_grp (paper: 4)
b_traj = 4  # IntraP budget b_traj (paper: 4)
time_it = True  # measure a GRPO loss + backward on a tiny local model for each pruning rule
seq_len = 96  # tokens per trajectory in the timing
repeats = 3  # timing repeats (the median is reported)
threads = 1  # torch threads for the timing
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import time

import matplotlib.pyplot as plt

from murphy_lab.examples import check_answer, paper_tree
from murphy_lab.prune import delta_var, interp, intrap, unprune, variance
from murphy_lab.viz import draw_tree, palette
from murphy_lab.viz.widgets import compute, summary

# %% [markdown]
# ## 1. The tree and its cost
#
# With G1 = G2 = 8 candidates per group and S = 2 turns, a task whose eight first attempts all fail grows
# 8 + 8 · 8 = **72 trajectories in 9 groups** (`murphy_lab.examples.paper_tree` makes one with random rewards;
# rewards are pass fractions k/4). Every trajectory is one (prompt, completion) pair in the loss.

# %%
tree = paper_tree(seed=seed)
print(len(tree), "trajectories in", len(tree.groups()), "groups")
assert len(tree) == 72 and len(tree.groups()) == 9
fig = draw_tree(tree, color_by="reward")
plt.show()

# %% [markdown]
# A group whose members all got the same reward has zero variance, so every member's advantage
# (r̃ − mean) / (std + ε) is zero: it costs a forward and backward pass and teaches nothing. Both pruning rules
# rank by **immediate-reward variance** (population variance):
#
# $$\operatorname{Var}(g) = \frac{1}{|g|}\sum_{u\in g}\big(r(u) - \bar r_g\big)^2$$

# %%
for i, (parent, members) in enumerate(tree.groups()):
    rs = [u.reward for u in members]
    print(f"group {i} (turn {members[0].turn}): rewards {rs}  Var = {variance(rs):.3f}")

# %% [markdown]
# ## 2. InterP: keep the most informative feedback contexts (§3.3)
#
# At every turn s ≥ 2, keep the `b_grp` groups with the highest Var(g) and drop the others whole; the turn-1 group
# is always kept. With b_grp = 4: 8 + 4 · 8 = **40** trajectories. By hand: sort the turn-2 groups by variance.

# %%
turn2 = [(p, m) for p, m in tree.groups() if m[0].turn == 2]
ranked = sorted(range(len(turn2)), key=lambda i: -variance([u.reward for u in turn2[i][1]]))  # stable: ties by order
keep_by_hand = {i + 1 for i in ranked[:b_grp]}  # numbered as in the listing above (group 0 is turn 1)
interp(tree, b_grp)  # the library marks dropped nodes with node.pruned = True
keep_library = {i + 1 for i, (_, m) in enumerate(turn2) if not m[0].pruned}
print("kept groups, by hand:", sorted(keep_by_hand), " library:", sorted(keep_library))
assert keep_by_hand == keep_library
print("trajectories kept:", len(tree.nodes(kept_only=True)))
assert len(tree.nodes(kept_only=True)) == 8 + b_grp * 8

# %%
fig = draw_tree(tree, color_by="reward", title=f"InterP, b_grp = {b_grp}: faded groups are dropped whole")
plt.show()

# %% [markdown]
# ## 3. IntraP: keep the members that make a group informative (§3.3)
#
# Inside every group C keep the `b_traj` members with the largest leave-one-out variance contribution
#
# $$\Delta\operatorname{Var}(u; C) = \operatorname{Var}(C) - \operatorname{Var}(C \setminus \{u\})$$
#
# (ties by sample order). With b_traj = 4 every one of the 9 groups keeps 4: **36** trajectories. Note that
# dropping a turn-1 node does not drop its refinement group: those refinements are still (prompt, completion)
# pairs of their own.

# %%
unprune(tree)
members = tree.groups()[1][1]  # the first refinement group
rs = [u.reward for u in members]
dv = delta_var(rs)
keep_by_hand = set(sorted(range(len(rs)), key=lambda i: -dv[i])[:b_traj])
intrap(tree, b_traj)
keep_library = {i for i, u in enumerate(members) if not u.pruned}
print("rewards:", rs)
print("ΔVar:   ", [round(x, 3) for x in dv])
print("kept, by hand:", sorted(keep_by_hand), " library:", sorted(keep_library))
assert keep_by_hand == keep_library
assert len(tree.nodes(kept_only=True)) == 9 * b_traj

# %%
fig = draw_tree(tree, color_by="reward", title=f"IntraP, b_traj = {b_traj}: every group keeps {b_traj} members")
plt.show()

# %% [markdown]
# ## 4. Backup on the pruned tree or on the full tree?
#
# The paper's flowchart prunes *before* the credit backup: with `backup_on="pruned"` MaRS only looks at kept
# children, so a turn-1 node whose whole group was dropped by InterP becomes a leaf and keeps its own reward. The
# paper's text says pruning only filters what enters the gradient: the default `backup_on="full"` backs up over every
# child, pruned or not, and only the loss skips the pruned ones (docs/notation.md, "Backup order", says why).
# `murphy_lab.viz.widgets.compute` runs the library pipeline (interp → intrap → credit → advantages) on a copy.

# %%
pruned = compute(tree, credit="mars", b_grp=b_grp, backup_on="pruned")
full = compute(tree, credit="mars", b_grp=b_grp, backup_on="full")
print("turn-1 MaRS credit, backup on the pruned tree:", [round(v.credit, 2) for v in pruned.root.children])
print("turn-1 MaRS credit, backup on the full tree:  ", [round(v.credit, 2) for v in full.root.children])
lost = sum(1 for a, b in zip(pruned.root.children, full.root.children) if a.credit < b.credit)
print(f"{lost} turn-1 node(s) lose retrospective credit when backup sees only the kept groups")
assert all(a.credit <= b.credit for a, b in zip(pruned.root.children, full.root.children))

# %% [markdown]
# ## 5. What pruning saves
#
# Optimization cost grows with the number of (prompt, completion) pairs the loss sees. Count them for each rule,
# then time one GRPO loss + backward pass over that many sequences of `seq_len` tokens on a tiny local OLMo-2-style
# model (`murphy_lab.policy.tiny`; random weights — only the time matters here).

# %%
rules = {"none": {}, "InterP": {"b_grp": b_grp}, "IntraP": {"b_traj": b_traj}, "both": {"b_grp": b_grp, "b_traj": b_traj}}
counts = {name: summary(compute(tree, credit="mars", **kw))["kept"] for name, kw in rules.items()}
print(counts)
assert counts["none"] == 72 and counts["InterP"] == 8 + 8 * b_grp and counts["IntraP"] == 9 * b_traj

# %%
seconds = {}
if time_it:
    import tempfile

    import torch
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM

    from murphy_lab.grpo import grpo_loss
    from murphy_lab.policy.tiny import build_tiny_model

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(build_tiny_model(tempfile.mkdtemp() + "/tiny", seed=seed))

    def step_time(n: int) -> float:
        ids = torch.randint(4, 100, (n, seq_len))  # (B, T) token ids
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            logits = model(ids).logits[:, :-1]  # (B, T-1, V)
            logps = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
            loss = grpo_loss(logps, torch.randn(n), torch.ones_like(logps), beta=0.0)
            loss.backward()
            model.zero_grad()
            times.append(time.perf_counter() - t0)
        return sorted(times)[len(times) // 2]

    step_time(counts["none"])  # warm-up: the first pass pays for allocation
    seconds = {name: step_time(n) for name, n in tqdm(counts.items(), desc="timing loss + backward", unit="rule")}
    for name in counts:
        saved = 1 - seconds[name] / seconds["none"]
        print(f"{name:>7}: {counts[name]:3d} trajectories, {seconds[name] * 1000:7.1f} ms  ({saved:+.0%} saved)")

# %%
fig, ax1 = plt.subplots(figsize=(6.5, 3))
names = list(counts)
ax1.bar(names, [counts[n] for n in names], color=palette.BAR, label="kept trajectories")
ax1.set_ylabel("kept trajectories")
if seconds:
    ax2 = ax1.twinx()
    ax2.plot(names, [seconds[n] * 1000 for n in names], "o-", color=palette.SECONDARY, label="loss + backward (ms)")
    ax2.set_ylabel("loss + backward (ms)", color=palette.SECONDARY)
    ax2.set_ylim(0, None)
ax1.set_title("what each pruning rule leaves for the optimizer")
plt.show()

# %% [markdown]
# The paper reports, on Qwen3-1.7B, that InterP cut optimization time by 74.1% (a 21.4% shorter training step)
# while staying within 0.8 pp of the unpruned model; IntraP halves the trajectories but hurt multi-turn accuracy.
# The time on a tiny CPU model shows the same direction; the size of the saving depends on hardware and batching.
#
# ## Summary
#
# - Both rules rank by **immediate-reward variance**, because zero-variance groups give zero advantages.
# - **InterP** drops whole refinement groups (feedback contexts) at turns ≥ 2: 72 → 40 with b_grp = 4.
# - **IntraP** keeps the b_traj most variance-contributing members of every group: 72 → 36 with b_traj = 4.
# - With the backup on the pruned tree (`backup_on="pruned"`) InterP can take retrospective credit away from a
#   turn-1 node; the default `backup_on="full"` keeps it.
#
# ## Exercises
#
# **1.** With b_grp = 2 and no IntraP, how many trajectories are kept?

# %%
answer_1 = None  # your count here
if solve_exercises:
    answer_1 = 8 + 2 * 8

# %%
check_answer("1", answer_1, summary(compute(tree, b_grp=2))["kept"])

# %% [markdown]
# **2.** A group has rewards `[0, 0, 0, 1, 1, 0, 0, 0]` and b_traj = 2. Which member indices does IntraP (the
# leave-one-out rule) keep? Is there any variance left in the kept pair? Compare with `method="exact"`.

# %%
answer_2 = None  # a set of indices, e.g. {0, 1}
if solve_exercises:
    dv = delta_var([0, 0, 0, 1, 1, 0, 0, 0])
    answer_2 = set(sorted(range(8), key=lambda i: -dv[i])[:2])

# %%
from murphy_lab.tree import Node, RolloutTree  # noqa: E402

g = RolloutTree(Node(children=[Node(reward=r) for r in [0, 0, 0, 1, 1, 0, 0, 0]]))
check_answer("2", answer_2, {i for i, u in enumerate(intrap(g, 2).root.children) if not u.pruned})

# %% [markdown]
# **3.** How many of the 8 turn-2 groups of `paper_tree(seed)` have zero reward variance (and so give only zero
# advantages)?

# %%
answer_3 = None  # your count here
if solve_exercises:
    answer_3 = sum(1 for _, m in paper_tree(seed=seed).groups() if m[0].turn == 2 and variance([u.reward for u in m]) == 0)

# %%
check_answer("3", answer_3, sum(1 for _, m in tree.groups() if m[0].turn == 2 and variance([u.reward for u in m]) == 0))
