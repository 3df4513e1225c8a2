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
# # 02 · The executor: rewards, feedback, and programs that cheat
#
# **Promise:** after this notebook you know where MURPHY's reward r(v) and feedback f(v) come from, what the
# feedback text looks like for every way a program can fail, and why a training executor must be robust to
# programs that try to game their tests.
#
# **What you will learn**
# 1. the reward: the fraction of tests passed, r(v) = passed / total;
# 2. the feedback a refinement prompt quotes: failed asserts with their actual output, exceptions, compile errors;
# 3. stdin/stdout tests (LiveCodeBench style);
# 4. programs that cheat — exiting early, an `__eq__` that always says yes, killing the parent, eating memory —
#    and what the sandboxed `murphy_lab.executor.Executor` makes of them;
# 5. batching with `run_many`, and how fast it is.

# %% tags=["parameters"]
timeout = 1.0  # seconds per test
memory_mb = 512  # address-space limit per program process (MB)
workers = 2  # parallel worker processes
n_batch = 40  # programs in the throughput batch of section 5
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd

from murphy_lab.examples import TAX_TESTS, check_answer
from murphy_lab.executor import Executor, ExecutionResult, IOTest, TestSuite
from murphy_lab.viz import palette, snippet

executor = Executor(timeout=timeout, memory_mb=memory_mb, workers=workers)
print("tests:", *TAX_TESTS, sep="\n  ")

# %% [markdown]
# ## 1. The reward: the fraction of tests passed
#
# $$r(v) = \frac{\#\{\text{tests } v \text{ passes}\}}{\#\{\text{tests}\}} \in [0, 1]$$
#
# `Executor.run(program, tests) -> ExecutionResult(reward, passed, total, status, feedback, ...)`. Tests are
# assert strings (or `IOTest`s, or a `TestSuite` with setup code). A program that passes all of them is *solved*
# and becomes a leaf of the rollout tree; any other is refined using its feedback.

# %%
good = "def add_tax(price):\n    return price * 1.2\n"
half = "def add_tax(price):\n    return 12.0 if price == 10 else price * 1.1\n"  # passes one test in three
r_good, r_half = executor.run(good, TAX_TESTS), executor.run(half, TAX_TESTS)
for name, r in (("good", r_good), ("one of three", r_half)):
    print(f"{name:>12}: reward {r.reward:.3f} = {r.passed}/{r.total}, status {r.status!r}")
assert isinstance(r_good, ExecutionResult) and r_good.reward == 1.0 and r_good.solved
assert abs(r_half.reward - 1 / 3) < 1e-12 and r_half.passed == 1

# %% [markdown]
# ## 2. Feedback: what the next turn gets to read
#
# The feedback f(v) is quoted verbatim in the refinement prompt [task, code, feedback]. Each failed assert is shown
# with the value the program actually produced (the Reflexion/DoT format `assert ... # output: ...`); an exception
# shows its trimmed traceback; a program that does not compile shows the compiler's message — and no test at all,
# which is why such a failure is *uninformative*: the expected values stay hidden.

# %%
programs = {
    "wrong value": "def add_tax(price):\n    return price * 1.1\n",
    "exception": "def add_tax(price):\n    return price * rate\n",
    "does not compile": "def add_tax(price)\n    return price * 1.2\n",
}
results = {name: executor.run(p, TAX_TESTS) for name, p in programs.items()}
for name, r in results.items():
    print(f"=== {name}: status {r.status!r}, reward {r.reward:.2f}\n{r.feedback}\n")
assert "# output: 11.0" in results["wrong value"].feedback  # the actual value, next to the expected one
assert "NameError" in results["exception"].feedback
assert results["does not compile"].status == "syntax" and "12.0" not in results["does not compile"].feedback

# %% [markdown]
# ## 3. stdin/stdout tests
#
# Competitive-programming benchmarks (LiveCodeBench, CodeContests) feed input on stdin and compare stdout.
# `IOTest(input, output)` is the second test kind; its feedback follows LiveCodeBench's *Wrong Answer / Input /
# Expected / Got* layout.

# %%
io_tests = [IOTest("1 2\n", "3\n"), IOTest("5 5\n", "10\n")]
off_by_one = "a, b = map(int, input().split())\nprint(a + b + 1)\n"
r = executor.run(off_by_one, io_tests)
print(r.feedback)
assert r.reward == 0.0 and "Expected" in r.feedback
assert executor.run("a, b = map(int, input().split())\nprint(a + b)\n", TestSuite(cases=tuple(io_tests))).solved

# %% [markdown]
# ## 4. Programs that try to cheat
#
# A policy trained to maximise test reward will find any hole in the harness. Some of the programs below pass
# under harnesses the field uses: an exit-code verdict scores `sys.exit(0)` as a pass, and an object whose
# `__eq__` always returns True passes every harness the project tried (even with the expected value on the left,
# Python falls back to the reflected `__eq__`). Others hang, kill or exhaust a naive harness. Here the tests run in
# a test worker that never runs program code; the program runs in a sandboxed process of its own and answers
# the tests' calls with plain data only (its objects stay where they are and equal only themselves); it sends no
# status word, ever: how it ended is the kernel's to say, and `passed` is the test worker's alone.

# %%
cheats = {
    "exit(0) before the tests": "import sys\nsys.exit(0)\n",
    "os._exit(0) inside the call": "import os\ndef add_tax(price):\n    os._exit(0)\n",
    "__eq__ that is always True": "class Yes:\n    def __eq__(self, other):\n        return True\n"
                                  "def add_tax(price):\n    return Yes()\n",
    "redefine AssertionError": "import builtins\nbuiltins.AssertionError = Exception\ndef add_tax(p):\n    return p\n",
    "kill the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add_tax(p):\n    return p\n",
    "infinite loop": "def add_tax(price):\n    while True:\n        pass\n",
    "allocate 10 GB": "def add_tax(price):\n    x = bytearray(10**10)\n    return price\n",
    "open a socket": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\n",
    "write 'passed' on every fd": "import os\nfor fd in range(20):\n    try:\n        os.write(fd, b'passed')\n"
                                  "    except OSError:\n        pass\nos._exit(0)\n",
}
t0 = time.perf_counter()
cheat_results = dict(zip(cheats, executor.run_many([(p, TAX_TESTS) for p in cheats.values()])))
print(f"{len(cheats)} programs in {time.perf_counter() - t0:.1f} s")
table = pd.DataFrame([
    {"program": name, "reward": r.reward, "status": r.status, "feedback": snippet(r.feedback, 70)}
    for name, r in cheat_results.items()
])
table

# %%
assert all(r.reward == 0.0 for r in cheat_results.values())  # no cheat earns any reward
assert cheat_results["infinite loop"].status == "timeout" and cheat_results["allocate 10 GB"].status == "memory"

# %%
fig, ax = plt.subplots(figsize=(6.5, 3))
statuses = table["status"].value_counts()
ax.barh(statuses.index, statuses.values, color=palette.BAR)
ax.set_xlabel("programs")
ax.xaxis.get_major_locator().set_params(integer=True)
ax.set_title(f"how the executor stopped {len(cheats)} cheating programs (reward 0 for all)")
plt.show()

# %% [markdown]
# What the executor does *not* promise: it is a sandbox for a training loop on one's own machine (resource limits,
# separate processes and users where available, private temp dirs, no network), not a security boundary against a
# determined attacker (no VM: a kernel exploit escapes). `docs/executor.md` ("Threat model") lists what holds by
# construction, what by the sandbox, and what does not.
#
# ## 5. Batches: `run_many`
#
# `build_tree` executes a whole turn in one `run_many` call: every (program, tests) job of every tree, spread over
# the worker processes, results in input order.

# %%
jobs = [(good if i % 3 else half, TAX_TESTS) for i in range(n_batch)]
t0 = time.perf_counter()
batch = executor.run_many(jobs)
elapsed = time.perf_counter() - t0
print(f"{n_batch} programs x {len(TAX_TESTS)} tests in {elapsed:.2f} s: {n_batch / elapsed:.0f} programs/s "
      f"with {workers} workers")
assert [r.reward for r in batch] == [1.0 if i % 3 else r_half.reward for i in range(n_batch)]  # same order

# %% [markdown]
# ## Summary
#
# - r(v) = passed / total; a solved candidate (r = 1) is a leaf of the tree, any other is refined.
# - The feedback shows each failed assert with the actual value, exceptions with a trimmed traceback, and compile
#   errors without any test — which makes those failures uninformative for the next turn.
# - Programs that exit early, fake equality, write verdict words, kill their parent, loop or hog memory all get
#   reward 0 here.
# - `run_many` executes a turn's jobs in one batch over parallel workers.
#
# ## Exercises
#
# **1.** Without running it: what reward does `def add_tax(price): return price + 2` get on `TAX_TESTS`?

# %%
answer_1 = None  # your number here
if solve_exercises:
    answer_1 = 1 / 3  # 10 + 2 == 12.0 passes; 5 + 2 != 6.0 and 2.5 + 2 != 3.0

# %%
check_answer("1", answer_1, executor.run("def add_tax(price):\n    return price + 2\n", TAX_TESTS).reward)

# %% [markdown]
# **2.** Write a program of your own that passes every test in `TAX_TESTS` without multiplying by 1.2.

# %%
answer_2 = None  # a program as a string
if solve_exercises:
    answer_2 = "def add_tax(price):\n    return price + price / 5\n"

# %%
check_answer("2", None if answer_2 is None else executor.run(answer_2, TAX_TESTS).reward, 1.0)

# %%
executor.close()
