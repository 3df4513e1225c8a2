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
# # 01 · The rollout tree: how MURPHY turns feedback into training data
#
# **Promise:** after this notebook you can read and build MURPHY's feedback-conditioned rollout tree — by hand, with
# a scripted policy and the real sandboxed executor, and with the project's small toy-world language model.
#
# **What you will learn**
# 1. the shape of the tree: a virtual root, the turn-1 group, one refinement group per failed attempt (§3.1);
# 2. the refinement prompt q = [task, previous code, executor feedback];
# 3. `murphy_lab.tree.build_tree`: one sampling call and one execution batch per turn;
# 4. why feedback matters: refinements after informative feedback succeed more often;
# 5. the same tree grown by a real (tiny, self-trained) transformer in the toy world.

# %% tags=["parameters"]
seed = 0  # seed of the scripted policy
g1 = 4  # G1: candidates sampled for the task prompt (paper: 8)
g2 = 4  # G2: refinements sampled per failed candidate (paper: 8)
turns = 2  # S: number of turns (paper: 2)
workers = 2  # executor worker processes
n_trees = 12  # trees grown in section 4
use_toy = True  # section 5: grow trees with the toy-world policy (skipped when False or unavailable)
toy_size = "toy"  # toy: the trained toy policy (ships with the package); smoke: built in seconds, barely trained
toy_tasks = 2  # toy tasks (one tree each)
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import matplotlib.pyplot as plt

from murphy_lab.examples import TAX_PROMPT, TAX_TESTS, ScriptedTaxPolicy, check_answer
from murphy_lab.executor import Executor
from murphy_lab.prompts import extract_code, first_prompt, refine_prompt
from murphy_lab.tree import Node, RolloutTree, build_tree, build_trees
from murphy_lab.viz import draw_tree, palette

# %% [markdown]
# ## 1. The shape, by hand
#
# One tree per task. The virtual **root** stands for the task prompt q(1); its children are the **turn-1 group**
# (G1 samples). Every candidate v is executed: its reward r(v) is the fraction of tests passed and its feedback
# f(v) is what the executor printed. A candidate with r(v) = 1 is a leaf. A failed candidate at turn s < S is
# expanded: its refinement prompt is sampled G2 times, and those samples are its **group** C(v).
#
# So every group is the children of one node, and all members of a group share one prompt — exactly what GRPO's
# group-relative advantage needs. Trees are plain dataclasses, buildable by hand:

# %%
tree = RolloutTree(
    Node(children=[
        Node(reward=0.0, feedback="assert f(2) == 7  # output: 5", children=[Node(reward=1.0), Node(reward=0.0)]),
        Node(reward=1.0),
    ])
)
for parent, members in tree.groups():
    print(f"group under a turn-{parent.turn} node: rewards {[u.reward for u in members]}")
assert len(tree) == 4 and len(tree.groups()) == 2
fig = draw_tree(tree)
plt.show()

# %% [markdown]
# ## 2. The refinement prompt
#
# A failed candidate's children are sampled from q = [task prompt, the candidate's code, its feedback]
# (`murphy_lab.prompts.refine_prompt`, plain text in our own words). Our running task: `add_tax`, whose tax rate
# only the tests know.

# %%
print(first_prompt(TAX_PROMPT))
print("-" * 60)
q = refine_prompt(TAX_PROMPT, "def add_tax(price):\n    return price * 1.1\n", "assert add_tax(10) == 12.0  # output: 11.0")
print(q)
assert "12.0" in q and "price * 1.1" in q

# %% [markdown]
# ## 3. Growing a tree: `build_tree`
#
# `build_tree(prompt, tests, sample, execute, g1=, g2=, turns=)` grows the tree turn by turn with **one** sampling
# call and **one** execution batch per turn, so a real policy batches its generation. It needs:
#
# - `sample(prompts, n) -> list[list[str]]` — here `ScriptedTaxPolicy`, a scripted stand-in for a model: first
#   attempts are right, wrong-but-running (informative) or broken (uninformative); a refinement that sees the
#   expected value in its feedback is usually fixed, a blind one only by luck;
# - `execute`: the sandboxed `murphy_lab.executor.Executor`, which runs every program in a forked, resource-limited
#   child and writes Reflexion-style feedback;
# - `refine(task, code, feedback)`: the refinement prompt of a failed candidate, handed the tree's `task` (here the
#   task statement; `murphy_lab.rollout.task_trees` hands it the `Task`) — `prompts.refine_prompt` itself.

# %%
policy = ScriptedTaxPolicy(seed=seed)
executor = Executor(timeout=2.0, workers=workers)
tree = build_tree(
    first_prompt(TAX_PROMPT), TAX_TESTS, policy, executor, g1=g1, g2=g2, turns=turns, task_id="add_tax",
    task=TAX_PROMPT, refine=refine_prompt, extract=extract_code,  # refine(task, code, feedback): q = [task, v, f(v)]
)
failed = [v for v in tree.root.children if v.reward < 1.0]
print(f"{len(tree)} trajectories: {g1} first attempts, {len(failed)} failed, each refined {g2} times")
print("sampling calls:", policy.calls)
assert policy.calls <= turns  # one call per turn (fewer when every candidate passed early)
if turns == 2:
    assert len(tree) == g1 + g2 * len(failed)

# %%
fig = draw_tree(tree, color_by="reward")
plt.show()

# %% [markdown]
# Look at one failed attempt: its program, the executor's feedback, and the prompt its children were sampled from.

# %%
if failed:
    v = failed[0]
    print("program:\n" + v.code)
    print("status:", v.status, " reward:", round(v.reward, 3))
    print("feedback:\n" + v.feedback)
    print("\nchildren's prompt:\n" + v.children[0].prompt)

# %% [markdown]
# ## 4. Feedback makes refinements succeed
#
# Grow a few trees at once with `build_trees` (still one sampling call and one execution batch per turn) and
# compare how often a refinement passes after a failure that *ran* (its feedback shows the expected value) and
# after one that did not (syntax or name errors reveal nothing).

# %%
policy = ScriptedTaxPolicy(seed=seed + 1)
trees = build_trees(
    [first_prompt(TAX_PROMPT)] * n_trees, [TAX_TESTS] * n_trees, policy, executor, g1=g1, g2=g2, turns=2,
    tasks=[TAX_PROMPT] * n_trees, refine=refine_prompt, extract=extract_code,
)
assert policy.calls == 2  # all trees share each turn's sampling call
ran, broke = [], []
for t in trees:
    for v in t.root.children:
        if v.children:
            (ran if "output:" in v.feedback else broke).extend(u.reward >= 1.0 for u in v.children)
rate = {"after informative feedback": sum(ran) / max(len(ran), 1), "after uninformative feedback": sum(broke) / max(len(broke), 1)}
print({k: round(x, 2) for k, x in rate.items()}, f"({len(ran)} and {len(broke)} refinements)")
fig, ax = plt.subplots(figsize=(5, 2.6))
ax.bar(list(rate), list(rate.values()), color=[palette.PASS_COLOR, palette.FAIL_COLOR])
ax.set_ylabel("refinements that pass")
ax.set_ylim(0, 1)
ax.set_title("the same policy, different feedback")
plt.show()
if ran and broke:
    assert rate["after informative feedback"] > rate["after uninformative feedback"]

# %% [markdown]
# This difference is what MURPHY's retrospective credit (notebook 03) rewards: a first attempt whose feedback makes
# its refinements succeed deserves credit even though it failed.
#
# ## 5. The same tree from a language model: the toy world
#
# `murphy_lab.toy` is a synthetic task family (functions with hidden constants that only feedback can reveal) and
# a small transformer (one token per character, short number or fixed phrase) the project trains itself. `murphy_lab.rollout.build_task_trees` grows trees
# for `Task` objects with the turn-1 and refinement prompts of `murphy_lab.prompts`. The default `toy_size = "toy"`
# is the trained toy policy that ships with the package (nothing is built); `"smoke"` builds a barely trained one in
# seconds (mostly wrong answers: the test suite's setting). The bar counts the rollout's turns.

# %%
toy_trees = []
if use_toy:
    try:
        from murphy_lab.policy import TransformersPolicy
        from murphy_lab.rollout import build_task_trees
        from murphy_lab.toy import build_toy_policy, make_tasks
    except ImportError as err:  # the toy world is optional for this notebook
        print("toy world not available:", err)
    else:
        tasks = make_tasks("train", toy_tasks, seed=seed)
        print(tasks[0].prompt)
        toy_policy = TransformersPolicy(build_toy_policy(size=toy_size, seed=seed), max_new_tokens=48)
        # reward_tests="visible": in the toy world the visible tests are the staged locks whose feedback reveals the hidden
        # constants, and the toy training profile takes reward and feedback from them (murphy_lab.toy.profile)
        toy_trees = build_task_trees(tasks, toy_policy, executor, g1=g1, g2=2, turns=2, reward_tests="visible",
                                     progress=True, seed=seed)
        assert len(toy_trees) == toy_tasks and all(len(t.root.children) == g1 for t in toy_trees)

# %%
if toy_trees:
    fig = draw_tree(toy_trees[0], color_by="reward")
    plt.show()

# %% [markdown]
# ## Summary
#
# - A rollout tree has one group per expanded node: the turn-1 group under the root, and a refinement group C(v)
#   under every failed candidate v at turns s < S. All members of a group share one prompt.
# - The refinement prompt quotes the task, the failed code and the executor's feedback.
# - `build_tree` / `build_trees` grow trees with one sampling call and one execution batch per turn.
# - Refinements after informative feedback succeed more often — the signal MURPHY's credit assignment uses.
#
# ## Exercises
#
# **1.** With G1 = G2 = 8 and S = 2, a task where exactly 5 of the 8 first attempts fail: how many trajectories
# does its tree hold?

# %%
answer_1 = None  # your count here
if solve_exercises:
    answer_1 = 8 + 8 * 5

# %%
wrong, right = "def add_tax(price):\n    return price\n", "def add_tax(price):\n    return price * 1.2\n"


def five_fail(prompts, n):  # a scripted sample function: 5 wrong then 3 right at turn 1, always right later
    return [[wrong] * 5 + [right] * (n - 5) if "Feedback" not in p else [right] * n for p in prompts]


check_answer("1", answer_1, len(build_tree("task", TAX_TESTS, five_fail, executor, g1=8, g2=8, turns=2)))

# %% [markdown]
# **2.** Now every first attempt and every refinement fails, with G1 = 2, G2 = 2 and S = 3 turns. How many
# trajectories does the tree hold?

# %%
answer_2 = None  # your count here
if solve_exercises:
    answer_2 = 2 + 2 * 2 + 4 * 2

# %%
check_answer("2", answer_2, len(build_tree("task", TAX_TESTS, lambda ps, n: [[wrong] * n for _ in ps], executor,
                                           g1=2, g2=2, turns=3)))

# %%
executor.close()
