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
# # 12 · One model, several scores: what an MBPP number measures
#
# **Promise:** after this notebook you can say why one model — Qwen2.5-Coder-0.5B-Instruct — is published at 52.4 on
# MBPP, measured at 24.8 by a third party and at 32.4 through this package, read a per-task comparison of
# evaluation protocols, and list what a fair comparison of two numbers must hold fixed.
#
# **What you will learn**
# 1. the published numbers and the protocol behind each (task set, statement text, tests, prompt, weights);
# 2. three protocols on the same 40 MBPP tasks, from committed transcripts of the packaged model: the original
#    release's text and asserts, the sanitized release's, and the published protocol's prompt;
# 3. task by task, why a protocol passes what another fails;
# 4. what to hold fixed before comparing two scores.
#
# Nothing here runs the model: the transcripts were made by `python benchmarks/mbpp_protocols.py` (greedy, on CPU,
# 40 tasks × 3 protocols) and are committed under `docs/data/mbpp_protocols/`. Runs in seconds.

# %% tags=["parameters"]
transcripts = "docs/data/mbpp_protocols"  # the committed transcripts, relative to the repository
show_task = ""  # a task id to print in full in section 3 (empty: the first task whose statement text differs)
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import murphy_lab
from murphy_lab.examples import check_answer
from murphy_lab.viz import palette

folder = Path(murphy_lab.__file__).resolve().parents[1] / transcripts
summary = json.loads((folder / "summary.json").read_text())
protocols = ("original", "sanitized", "published")
rows = {p: {r["task_id"]: r for r in map(json.loads, (folder / f"{p}.jsonl").read_text().splitlines())}
        for p in protocols}  # fmt: skip
tasks = summary["task_ids"]
print(f"{len(tasks)} tasks ({tasks[0]} … {tasks[-1]}), model {summary['model']} ({summary['dtype']}, "
      f"{summary['decoding']}); made by `{summary['command']}`")

# %% [markdown]
# ## 1. The published numbers, and what each one measured
#
# | score | who | tasks | statement text and tests | prompt | weights |
# |---|---|---|---|---|---|
# | **52.4** | Qwen2.5-Coder report (arXiv 2409.12186), EvalPlus "MBPP" | 378 tasks drawn from the sanitized release (EvalPlus's MBPP+ v0.2.0 subset) | the sanitized text; EvalPlus's base tests (the release's asserts, repaired where they were wrong) | ChatML, "Can you complete the following Python function?" + a fenced docstring holding the text and the first assert; the assistant turn pre-filled with a python fence; greedy | bf16, vLLM |
# | **24.8** | a third-party run (as reported; not reproduced here) | the original release's test split, tasks 11–510 (500) | the original text and its three asserts | the third party's | the released checkpoint |
# | **32.4** | this package (docs/real_model.md) | tasks 11–226 of the original test split (216) | the original text and its three asserts | the project's prompt: the text, "Your code should pass this test:" and the first assert, then `### Code:`, as one user message; greedy | Q4_K_M from GGUF (the packaged model) |
#
# Three numbers for one model, each on another task set, another version of the statements and tests, another
# prompt, other weights. Which of these moves the score? The transcripts below hold all but the weights fixed in
# turn, on the same 40 tasks: the first 40 ids of the original test split that the sanitized release kept.
#
# | protocol | statement text | tests (the verdict) | prompt |
# |---|---|---|---|
# | `original` | the original release's | the original release's three asserts | the project's (as in the 32.4 run) |
# | `sanitized` | the sanitized release's | the sanitized release's asserts | the project's |
# | `published` | the sanitized release's | the sanitized release's asserts | the published protocol's (as in the 52.4 run) |
#
# So `original` → `sanitized` changes the text and the tests; `sanitized` → `published` changes only the prompt.

# %% [markdown]
# ## 2. What the model saw, and the scores

# %%
first = tasks[0]
for p in protocols:
    print(f"===== {p}: {first}, the text the model continued =====")
    print(rows[p][first]["conditioned_on"])

# %%
n = len(tasks)
score = pd.DataFrame({p: [sum(rows[p][t]["passed"] for t in tasks)] for p in protocols}, index=["passed"]).T
score["pass@1 (%)"] = 100 * score["passed"] / n
score["± SE"] = (score["pass@1 (%)"] * (100 - score["pass@1 (%)"]) / n) ** 0.5  # binomial standard error
score["answers cut at the limit"] = [sum(rows[p][t]["cut"] for t in tasks) for p in protocols]
score.round(1)

# %% [markdown]
# The same 40 tasks, paired: a task either passes under both protocols of a pair, fails under both, or moves. Only
# the movers say anything about the difference, and their count bounds how sure one can be (a sign test on the
# movers: with m movers split a / b, a difference is noise unless the split is lopsided).

# %%
def sign_test(a: int, b: int) -> float:
    """Two-sided p-value of a split a / b of the movers under "either way equally likely"."""
    m, k = a + b, min(a, b)
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0


pairs = []
for x, y in (("original", "sanitized"), ("sanitized", "published"), ("original", "published")):
    gained = [t for t in tasks if rows[y][t]["passed"] and not rows[x][t]["passed"]]
    lost = [t for t in tasks if rows[x][t]["passed"] and not rows[y][t]["passed"]]
    pairs.append(dict(pair=f"{x} → {y}", both=sum(rows[x][t]["passed"] and rows[y][t]["passed"] for t in tasks),
                      gained=len(gained), lost=len(lost), net=len(gained) - len(lost),
                      **{"sign test p": round(sign_test(len(gained), len(lost)), 3)}))
pd.DataFrame(pairs).set_index("pair")

# %% [markdown]
# ## 3. Task by task: why a protocol passes what another fails
#
# For each task: did the statement text change between the releases, did the tests, and the three verdicts. A task
# whose verdict moves between `original` and `sanitized` moved because its text or its tests changed (the prompt
# template is the same); one that moves between `sanitized` and `published` moved because of the prompt alone.

# %%
def short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


diff = pd.DataFrame([dict(task=t,
                          text_changed=rows["original"][t]["statement"] != rows["sanitized"][t]["statement"],
                          tests_changed=rows["original"][t]["tests"] != rows["sanitized"][t]["tests"],
                          **{p: "pass" if rows[p][t]["passed"] else rows[p][t]["status"] for p in protocols})
                     for t in tasks]).set_index("task")  # fmt: skip
movers = diff[(diff[list(protocols)] == "pass").nunique(axis=1) > 1]
print(f"{len(movers)} of {n} tasks move between protocols; the statement text differs between the releases on "
      f"{int(diff['text_changed'].sum())} of {n}, the tests on {int(diff['tests_changed'].sum())}")
movers

# %%
why = []
for t, d in movers.iterrows():
    o, s, pub = (d[p] == "pass" for p in protocols)
    if o != s:
        same_program = rows["original"][t]["program"] == rows["sanitized"][t]["program"]
        cause = " and ".join(x for x, c in (("text", d["text_changed"]), ("tests", d["tests_changed"])) if c) or (
            "neither: the same program, another verdict" if same_program else
            "neither: the same prompt, another greedy answer (the batch's padding changes bf16 sums)")
        why.append(dict(task=t, pair="original vs sanitized", winner="sanitized" if s else "original", because=cause))
    if s != pub:
        why.append(dict(task=t, pair="sanitized vs published", winner="published" if pub else "sanitized",
                        because="the prompt"))  # fmt: skip
why = pd.DataFrame(why)
why.groupby(["pair", "because", "winner"]).size().rename("tasks").to_frame()

# %% [markdown]
# One task in full: its statements, its tests and each protocol's program with the executor's feedback.

# %%
shown = show_task or next((t for t in movers.index if diff.loc[t, "text_changed"]), movers.index[0] if len(movers)
                                                                                       else tasks[0])  # fmt: skip
print(f"===== {shown} =====")
for release, p in (("original", "original"), ("sanitized", "sanitized")):
    print(f"--- the {release} release: text ---\n{rows[p][shown]['statement']}")
    print(f"--- its tests ---", *rows[p][shown]["tests"], sep="\n")
for p in protocols:
    r = rows[p][shown]
    print(f"--- {p}: {'PASSED' if r['passed'] else r['status']} ---\n{r['program'].strip()}")
    if not r["passed"]:
        print(f"  feedback: {short(r['feedback'], 300)}")

# %%
fig, ax = plt.subplots(figsize=(9, 0.9 + 0.22 * len(movers)))
cells = (movers[list(protocols)] == "pass").astype(float)
ax.imshow(cells.values, cmap=palette.VERDICT_CMAP, vmin=-0.2, vmax=1.2, aspect="auto")
ax.set_xticks(range(3), protocols)
ax.set_yticks(range(len(cells)), [f"{t}{' · text' if movers.loc[t, 'text_changed'] else ''}"
                                  f"{' · tests' if movers.loc[t, 'tests_changed'] else ''}" for t in cells.index],
              fontsize=8)  # fmt: skip
for (i, j), passed in pd.DataFrame(cells.values).stack().items():
    ax.text(j, i, "pass" if passed else movers.iloc[i, 2 + j], ha="center", va="center", fontsize=7)
ax.set_title("The tasks whose verdict moves (green: passed); beside each id, what the releases changed", fontsize=9)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. What a fair comparison holds fixed
#
# Two scores compare only when everything but the thing compared is the same:
#
# 1. **the task set** — the same task ids (378, 500, 216 and 40 tasks are four different samples of different
#    difficulty);
# 2. **the statement text and the tests** — the same release (original, sanitized, EvalPlus-repaired) and the same
#    test cases (base or extended);
# 3. **the prompt** — template, chat format, system message, pre-filled assistant text;
# 4. **the decoding** — greedy or sampled, the length limit, the stop rule, how the program is read from the answer;
# 5. **the harness** — timeouts, comparison rules, what counts as a pass;
# 6. **the weights** — precision and quantization (bf16 against a 4-bit GGUF);
# 7. **the sample size** — and its standard error: on 40 tasks one standard error is 7–8 points, on 500 about 2.
#
# On these 40 tasks the transcripts isolate items 2 and 3 (the table of section 3). Items 1 and 6 stay
# confounded in the published numbers: the 52.4 ran on EvalPlus's 378 tasks with repaired tests and bf16 weights,
# neither of which this CPU run can reproduce.

# %% [markdown]
# ## Summary
#
# On the same 40 tasks, the same model and the same greedy decoding:
# <!-- measured: tests/test_notebook_claims.py finds each number of this block in the executed copy's outputs -->
# - the package's path scores 37.5 % on the original release's text and asserts and 50.0 % on the sanitized
#   release's: 5 tasks gained, 0 lost (sign test p = 0.062) — the statement text and the tests move the number
#   (the releases differ in the text of 16 tasks and the tests of 13);
# - the published protocol's prompt on the sanitized release scores 40.0 %: 0 gained, 4 lost against the package's
#   prompt (p = 0.125). Two of the four misread the task under that prompt (mbpp/58: any two non-zero numbers
#   have "opposite signs"; mbpp/91: a string equal to the substring instead of one containing it), one returns
#   the smallest number below n instead of the closest (mbpp/89), and one kept the model's own wrong example
#   asserts in the program (mbpp/68: EvalPlus's sanitizer would have dropped them; our reader keeps what the
#   fenced block holds);
# - each score carries a standard error of about 7.7–7.9 points: the prompt's effect is not separable from noise
#   here, the release's nearly is.
# <!-- /measured -->
# - So 52.4 against 32.4 is not one model's quality against a pipeline's error: it is two protocols. A score is a
#   statement about a model *and* a task set, a text, a test suite, a prompt, a decoding, a reader, a harness and
#   a set of weights; compare two only when all but one are the same.
#
# ## Exercises
#
# **1.** How many of the 40 tasks change their statement text between the original and the sanitized release?

# %%
answer_1 = None  # a number
if solve_exercises:
    answer_1 = int(diff["text_changed"].sum())

# %%
check_answer("1", answer_1, sum(rows["original"][t]["statement"] != rows["sanitized"][t]["statement"] for t in tasks))

# %% [markdown]
# **2.** With a binomial standard error of sqrt(p(1 − p)/n), how many tasks would an evaluation need for one
# standard error of 2 points at p = 0.4? (Round up.)

# %%
answer_2 = None  # a number of tasks
if solve_exercises:
    answer_2 = 600  # 0.4 · 0.6 / 0.02² = 600

# %%
check_answer("2", answer_2, math.ceil(round(0.4 * 0.6 / 0.02**2, 6)))
