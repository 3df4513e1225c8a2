"""A compact Diversity-of-Thoughts (DoT) scaffold: diverse reflections per failure and a memory of reflections.

Lingam et al., "Enhancing Language Model Agents using Diversity of Thoughts" (ICLR 2025), a Reflexion descendant.
Written from the published description:

    attempt 1: from the task prompt
    on a failure: sample `n_reflections` reflections on (code, feedback) in one request; keep the one most unlike
                  the reflections already in memory (lowest maximum word-set Jaccard similarity; with an empty
                  memory, the one least like its siblings) — the "diversity" that keeps the repairs from looping
                  on one idea; add it to the memory bank
    next attempt: the repair prompt [task, code, feedback] with the latest `memory_size` reflections as notes

Held after k attempts: the latest attempt (as in Reflexion). Simplified from the paper: the memory bank is per
episode (the paper's DoT-bank also retrieves reflections from other, similar tasks), and diversity is chosen by
word overlap rather than asked of the model in one structured prompt. Reflections are model calls, not attempts:
with n_reflections = 3 every repair costs 4 calls (`Episode.calls`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.scaffolds import base  # the scaffold toolkit: base.sample_requests, base.execute, ...
from murphy_lab.scaffolds.base import Episode, Scaffold


class DoT(Scaffold):
    """DoT-style repair loop; `n_reflections` reflections per failure, `memory_size` of them quoted per prompt."""

    name = "dot"

    def __init__(
        self, n_reflections: int = 3, memory_size: int = 3, extract: Callable[[str], str] = P.extract_program
    ):
        if isinstance(n_reflections, bool) or not isinstance(n_reflections, int) or n_reflections < 1:
            raise ValueError(f"n_reflections must be an integer >= 1, got {n_reflections!r}")
        if isinstance(memory_size, bool) or not isinstance(memory_size, int) or memory_size < 1:
            raise ValueError(f"memory_size must be an integer >= 1, got {memory_size!r}")
        self.n_reflections, self.memory_size, self.extract = n_reflections, memory_size, extract

    def run(
        self, tasks, policy, executor, budget: int, runs=1, seed=None, progress=False, **sample_kw
    ) -> list[Episode]:
        budget, episodes, task_of, fit = self.start(tasks, runs, budget, policy, sample_kw)
        memory: list[list[str]] = [[] for _ in episodes]  # the memory bank of chosen reflections, per episode
        for round_ in base.rounds(budget, progress, self.name):
            open_ = [i for i, ep in enumerate(episodes) if not ep.done]
            if not open_:
                break
            notes = {i: "" for i in open_}
            retry = [i for i in open_ if episodes[i].attempts]
            if retry:  # diverse reflections on every open failure, one call
                reqs = []
                for i in retry:
                    last = episodes[i].attempts[-1]
                    reqs.append(
                        (P.reflect_prompt(task_of[i].prompt, last.code, last.feedback), self.n_reflections)
                    )
                for i, out in zip(
                    retry, base.sample_requests(policy, reqs, base.round_seed(seed, round_, 1), **sample_kw)
                ):
                    episodes[i].spend(sum(t for _, t in out), calls=len(out))
                    candidates = [P.strip_thinking(text).strip() for text, _ in out]
                    pick = most_novel(candidates, memory[i])
                    if candidates[pick]:
                        memory[i].append(candidates[pick])
                        notes[i] = candidates[pick]
                    episodes[i].extra.append(
                        {"kind": "reflections", "candidates": candidates, "chosen": pick}
                    )
            prompts = [self._prompt(task_of[i], episodes[i], memory[i], fit) for i in open_]
            self.attempt_round(
                policy,
                executor,
                episodes,
                task_of,
                open_,
                prompts,
                base.round_seed(seed, round_),
                budget,
                notes=notes,
                **sample_kw,
            )
        return episodes

    def _prompt(self, task: Any, ep: Episode, memory: list[str], fit: dict) -> str:
        if not ep.attempts:
            return P.first_prompt(task.prompt)
        last = ep.attempts[-1]
        return P.guided_refine_prompt(
            task.prompt, last.code, last.feedback, memory[-self.memory_size :], **fit
        )


def _words(text: str) -> set[str]:
    return set(text.lower().split())


def jaccard(a: str, b: str) -> float:
    """|A ∩ B| / |A ∪ B| over lower-cased word sets (1.0 for two empty texts)."""
    wa, wb = _words(a), _words(b)
    return 1.0 if not wa and not wb else len(wa & wb) / len(wa | wb)


def most_novel(candidates: list[str], memory: list[str]) -> int:
    """Index of the candidate least like the memory (max Jaccard to it), else least like its siblings; empty
    candidates lose; ties go to the earliest."""

    def similarity(j: int) -> float:
        if not candidates[j]:
            return float("inf")
        pool = memory if memory else [c for k, c in enumerate(candidates) if k != j]
        if not pool:
            return 0.0
        sims = [jaccard(candidates[j], m) for m in pool]
        return max(sims) if memory else sum(sims) / len(sims)

    return min(range(len(candidates)), key=lambda j: (similarity(j), j))
