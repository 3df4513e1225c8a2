"""Rollout trees from a real policy: tasks + policy + executor -> one feedback-conditioned tree per task.

A thin layer over `murphy_lab.tree.build_trees` (which grows the trees: one `policy.sample` call and one
`executor.run_many` batch per turn, for all open nodes of all trees) that supplies MURPHY's prompts:

    turn 1:   q(1) = prompts.first_prompt(task.prompt)                     sampled G1 times per task
    turn s>1: q    = prompts.refine_prompt(task.prompt, v.code, v.feedback)  sampled G2 times per failed v

and extracts each candidate's code with `prompts.extract_program`; the executor runs `task.program(code)` (a
benchmark's import header in front, e.g. LiveCodeBench's). Rewards r(v) and feedback f(v) come from the
task's hidden tests (training: the reward is the pass fraction on the task's tests) or its visible tests
(`tests="visible"`, the evaluation setting where feedback must not leak the hidden tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.tree import RolloutTree, build_trees, load_trees, save_trees

__all__ = ["build_task_trees", "load_trees", "save_trees"]


def build_task_trees(
    tasks: Sequence[Any],
    policy: Any,
    executor: Any,
    g1: int = 8,  # = G1 in the paper
    g2: int = 8,  # = G2 in the paper
    turns: int = 2,  # = S in the paper
    tests: str = "hidden",
    *,
    extract: Callable[[str], str] = P.extract_program,
    progress: bool = True,
    path: str | None = None,
    **sample_kw: Any,
) -> list[RolloutTree]:
    """Grow one rollout tree per task (trees carry `task_id`; `tree.meta` holds difficulty, source and `tests`).

    Args:
        tasks: `Task` objects (murphy_lab.tasks).
        policy: a `Policy` (`.sample(prompts, n, **sample_kw)`).
        executor: an object with `.run_many([(program, tests), ...])` (murphy_lab.executor.Executor).
        g1, g2, turns: group sizes and number of turns (paper: 8, 8, 2 -> up to 72 trajectories per tree).
        tests: "hidden" (rewards from the hidden tests; training) or "visible" (evaluation-style feedback).
        extract: completion -> code (default `prompts.extract_program`, the reading training and evaluation share).
        progress: show a tqdm bar over turns.
        path: if given, also write the trees there as JSON lines (`tree.save_trees`).
        **sample_kw: passed to every `policy.sample` call (max_new_tokens, temperature, top_p, seed).
    """
    if tests not in ("hidden", "visible"):
        raise ValueError(f"tests must be 'hidden' or 'visible', got {tests!r}")
    tasks = list(tasks)
    for i, t in enumerate(tasks):
        if not hasattr(t, "prompt") or not hasattr(t, f"{tests}_tests"):
            raise TypeError(f"tasks[{i}] must be a Task (with .prompt and .{tests}_tests), got {type(t).__name__}")
        if not len(getattr(t, f"{tests}_tests")):
            raise ValueError(f"tasks[{i}] ({t.task_id!r}) has no {tests} tests: its rewards would be undefined")
    if not hasattr(policy, "sample"):
        raise TypeError(f"policy must have a .sample(prompts, n) method, got {type(policy).__name__}")

    firsts = [P.first_prompt(t.prompt) for t in tasks]
    statement = dict(zip(firsts, (t.prompt for t in tasks)))  # build_trees hands refine the turn-1 prompt

    fit = P.policy_budget(policy, sample_kw.get("max_new_tokens"))  # quoted code/feedback fit the model's context

    def refine(first: str, code: str, feedback: str) -> str:
        return P.refine_prompt(statement[first], code, feedback, **fit)  # q = [task, v's code, v's feedback]

    bar = _bar(turns, progress, "rollout turns")

    def on_turn(turn: int, new_nodes: list) -> None:
        solved = sum(n.reward >= 1.0 for n in new_nodes)
        bar.set_postfix(turn=turn, candidates=len(new_nodes), solved=solved)
        bar.update(1)

    trees = build_trees(
        firsts,
        [getattr(t, f"{tests}_tests") for t in tasks],
        lambda prompts, n: policy.sample(prompts, n, **sample_kw),
        executor,
        g1=g1,
        g2=g2,
        turns=turns,
        refine=refine,
        extract=extract,
        task_ids=[t.task_id for t in tasks],
        on_turn=on_turn,
        programs=[t.program for t in tasks],
    )
    bar.close()
    for tree, task in zip(trees, tasks):
        tree.meta.update(difficulty=task.difficulty, source=task.source, tests=tests, g1=g1, g2=g2, turns=turns)
    if path is not None:
        save_trees(trees, path)
    return trees


def _bar(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)
