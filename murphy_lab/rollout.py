"""Rollout trees from a real policy: tasks + policy + executor -> one feedback-conditioned tree per task.

A thin layer over `murphy_lab.tree.build_trees` (which grows the trees: one `policy.sample` call and one
`executor.run_many` batch per turn, for all open nodes of all trees) that supplies MURPHY's prompts. `task_trees` is
the one task -> tree glue (the trainer and µCode's rollouts call it with their own samplers); `build_task_trees` is
the same for a `Policy`, with a progress bar:

    turn 1:   q(1) = prompts.first_prompt(task.prompt)                     sampled G1 times per task
    turn s>1: q    = prompts.refine_prompt(task.prompt, v.code, v.feedback)  sampled G2 times per failed v

and extracts each candidate's code with `prompts.extract_program`; the executor runs `task.program(code)` (a
benchmark's import header in front, e.g. LiveCodeBench's). Rewards r(v) and feedback f(v) come from the
task's hidden tests (training: the reward is the pass fraction on the task's tests) or its visible tests
(`reward_tests="visible"`, the evaluation setting where feedback must not leak the hidden tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm

from murphy_lab import prompts as P
from murphy_lab.tree import RolloutTree, build_trees, load_trees, save_trees

__all__ = ["build_task_trees", "load_trees", "save_trees", "task_trees"]


def task_trees(
    tasks: Sequence[Any],
    sample: Any,
    executor: Any,
    *,
    g1: int,  # = G1 in the paper
    g2: int,  # = G2 in the paper
    turns: int,  # = S in the paper
    reward_tests: str = "hidden",
    budget: dict | None = None,
    extract: Callable[[str], str] = P.extract_program,
    on_turn: Callable[[int, list], None] | None = None,
) -> list[RolloutTree]:
    """The task -> tree glue every caller shares (this function, the trainer, µCode's rollouts, the notebooks).

    `sample(prompts, n)` is anything `tree.build_trees` takes; `budget` (prompts.policy_budget / token_budget)
    trims the code and feedback a refinement prompt quotes to the model's context.
    """
    if reward_tests not in ("hidden", "visible"):
        raise ValueError(f"reward_tests must be 'hidden' or 'visible', got {reward_tests!r}")
    tasks = list(tasks)
    for i, t in enumerate(tasks):
        suite = f"{reward_tests}_tests"
        if not hasattr(t, "prompt") or not hasattr(t, suite):
            raise TypeError(f"tasks[{i}] must be a Task (with .prompt and .{suite}), got {type(t).__name__}")
        if not len(getattr(t, suite)):
            raise ValueError(
                f"tasks[{i}] ({t.task_id!r}) has no {reward_tests} tests: its rewards would be undefined"
            )
    fit = budget or {}

    def refine(task: Any, code: str, feedback: str) -> str:
        return P.refine_prompt(task.prompt, code, feedback, **fit)  # q = [task, v's code, v's feedback]

    return build_trees(
        [P.first_prompt(t.prompt) for t in tasks],  # q(1)
        [getattr(t, f"{reward_tests}_tests") for t in tasks],
        sample,
        executor,
        g1=g1,
        g2=g2,
        turns=turns,
        refine=refine,
        tasks=tasks,
        extract=extract,
        task_ids=[t.task_id for t in tasks],
        on_turn=on_turn,
        # what runs: a benchmark's import header, text answers as ANSWER = '...'
        programs=[t.program for t in tasks],
    )


def build_task_trees(
    tasks: Sequence[Any],
    policy: Any,
    executor: Any,
    g1: int = 8,  # = G1 in the paper
    g2: int = 8,  # = G2 in the paper
    turns: int = 2,  # = S in the paper
    reward_tests: str = "hidden",
    *,
    extract: Callable[[str], str] = P.extract_program,
    progress: bool = True,
    path: str | None = None,
    **sample_kw: Any,
) -> list[RolloutTree]:
    """Grow one rollout tree per task (trees carry `task_id`; `tree.meta` holds difficulty, source and `reward_tests`).

    Args:
        tasks: `Task` objects (murphy_lab.tasks).
        policy: a `Policy` (`.sample(prompts, n, **sample_kw)`).
        executor: an object with `.run_many([(program, tests), ...])` (murphy_lab.executor.Executor).
        g1, g2, turns: group sizes and number of turns (paper: 8, 8, 2 -> up to 72 trajectories per tree).
        reward_tests: "hidden" (rewards from the hidden tests; training) or "visible" (evaluation-style feedback);
            MurphyConfig's field of the same name.
        extract: completion -> code (default `prompts.extract_program`, the reading training and evaluation share).
        progress: show a tqdm bar over turns.
        path: if given, also write the trees there as JSON lines (`tree.save_trees`).
        **sample_kw: passed to every `policy.sample` call (max_new_tokens, temperature, top_p, seed).
    """
    if not hasattr(policy, "sample"):
        raise TypeError(f"policy must have a .sample(prompts, n) method, got {type(policy).__name__}")
    tasks = list(tasks)
    bar = tqdm(total=turns, desc="rollout turns", disable=not progress, leave=False)

    def on_turn(turn: int, new_nodes: list) -> None:
        solved = sum(n.reward >= 1.0 for n in new_nodes)
        bar.set_postfix(turn=turn, candidates=len(new_nodes), solved=solved)
        bar.update(1)

    trees = task_trees(
        tasks,
        lambda prompts, n: policy.sample(prompts, n, **sample_kw),
        executor,
        g1=g1,
        g2=g2,
        turns=turns,
        reward_tests=reward_tests,
        extract=extract,
        on_turn=on_turn,
        # quoted code/feedback fit the context
        budget=P.policy_budget(policy, sample_kw.get("max_new_tokens")),
    )
    bar.close()
    for tree, task in zip(trees, tasks):
        tree.meta.update(
            difficulty=task.difficulty,
            source=task.source,
            reward_tests=reward_tests,
            g1=g1,
            g2=g2,
            turns=turns,
        )
    if path is not None:
        save_trees(trees, path)
    return trees
