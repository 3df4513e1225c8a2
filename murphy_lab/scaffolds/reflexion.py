"""Reflexion-style self-repair: the scaffold of the paper's Iter-k evaluation (and of MURPHY's training prompts).

Shinn et al., "Reflexion: Language Agents with Verbal Reinforcement Learning" (NeurIPS 2023), as used by MURPHY
(docs/evaluation.md): attempt, run the *visible* tests, on failure re-prompt with q = [task, previous code, feedback]
(`prompts.refine_prompt`), up to k attempts. Simplified from the published method: no separate verbal reflection
and no self-written tests — the executor feedback itself is the reflection, exactly the prompt MURPHY trains on.

    attempt 1:  code_1 = extract(policy(first_prompt(task)))
    attempt j:  code_j = extract(policy(refine_prompt(task, code_{j-1}, feedback_{j-1})))   while code_{j-1} fails
    held after k attempts: code_min(k, stop), where `stop` is the first attempt passing every visible test

Batched: round j is ONE `policy.sample` over all open episodes (round 1: one prompt per task with n = runs) and
ONE `executor.run_many`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.scaffolds import base  # the scaffold toolkit: base.sample_requests, base.execute, ...
from murphy_lab.scaffolds.base import Episode, Scaffold


class Reflexion(Scaffold):
    """Reflexion-style loop; `extract` maps a completion to a program (default `prompts.extract_program`, the
    reading training uses too)."""

    name = "reflexion"

    def __init__(self, extract: Callable[[str], str] = P.extract_program):
        self.extract = extract

    def run(
        self, tasks, policy, executor, budget: int, runs=1, seed=None, progress=False, **sample_kw
    ) -> list[Episode]:
        budget, episodes, task_of, fit = self.start(tasks, runs, budget, policy, sample_kw)
        for round_ in base.rounds(budget, progress, self.name):
            open_ = [i for i, ep in enumerate(episodes) if not ep.done]
            if not open_:
                break
            prompts = [self.prompt(task_of[i], episodes[i], fit) for i in open_]
            self.attempt_round(
                policy,
                executor,
                episodes,
                task_of,
                open_,
                prompts,
                base.round_seed(seed, round_),
                budget,
                **sample_kw,
            )
        return episodes

    @staticmethod
    def prompt(task: Any, ep: Episode, fit: dict | None = None) -> str:
        """q(1), else the refinement prompt; `fit` = `prompts.policy_budget(policy)` keeps it within the context."""
        if not ep.attempts:
            return P.first_prompt(task.prompt)  # q(1)
        last = ep.attempts[-1]
        # q = [task, code, feedback]
        return P.refine_prompt(task.prompt, last.code, last.feedback, **(fit or {}))
