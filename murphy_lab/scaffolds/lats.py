"""A compact LATS: Monte-Carlo tree search over program repairs, guided by visible tests and reflections.

Zhou et al., "Language Agent Tree Search Unifies Reasoning, Acting, and Planning in Language Models" (ICML 2024).
Written from the published description, for programming tasks:

    repeat until a visible pass or the attempt budget k is spent:
      select     descend from the root by UCT,  argmax_c  Q(c)/N(c) + c_uct · sqrt( ln N(parent) / N(c) ),
                 to a node that has not been expanded yet (the root first)
      reflect    a failed node gets a short verbal reflection on its feedback (one model call, once per node)
      expand     sample `width` candidate programs from the node's repair prompt (task, code, feedback, notes =
                 its reflection + the latest reflections of the search); each candidate is one attempt
      evaluate   value(v) = (1 - λ) · visible pass rate + λ · self-evaluation score (λ = 0 unless self_eval)
      backprop   every ancestor gets N += 1 and Q += value per new child

Held after k attempts: the first candidate that passed every visible test, else the best visible pass rate so far
(ties: the latest). Simplified from the paper: no rollout ("simulation") to a terminal state — the executor's verdict
on the expanded candidate is the value —, no generated tests (the task's visible tests play that role), and the
reflection is made lazily, only for the nodes that are expanded. Reflections and self-evaluations are model calls
that are not attempts: `Episode.calls` / `Episode.tokens` count them for budget-matched comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.scaffolds import base  # the scaffold toolkit: base.sample_requests, base.execute, ...
from murphy_lab.scaffolds.base import Episode, Scaffold


@dataclass
class _Node:
    attempt: int | None  # index in Episode.attempts; None for the root (the task prompt)
    parent: int | None
    children: list[int] = field(default_factory=list)
    visits: int = 0  # N(v)
    value_sum: float = 0.0  # Q(v): sum of backed-up values
    value: float = 0.0  # value(v) of the node itself
    reflection: str | None = None


class LATS(Scaffold):
    """LATS-style search. `width` = candidates per expansion; `c_uct` = exploration weight (paper: 1);
    `self_eval` adds the model's 0-10 self-score with weight `lam`; `reflect` turns reflections on;
    `max_notes` = reflections quoted in a repair prompt."""

    name = "lats"

    def __init__(
        self,
        width: int = 2,
        c_uct: float = 1.0,
        self_eval: bool = False,
        lam: float = 0.5,
        reflect: bool = True,
        max_notes: int = 2,
        extract: Callable[[str], str] = P.extract_program,
    ):
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be an integer >= 1, got {width!r}")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must lie in [0, 1], got {lam!r}")
        self.width, self.c_uct, self.self_eval, self.lam = width, c_uct, self_eval, lam
        self.reflect, self.max_notes, self.extract = reflect, max_notes, extract

    def run(
        self, tasks, policy, executor, budget: int, runs=1, seed=None, progress=False, **sample_kw
    ) -> list[Episode]:
        budget, episodes, task_of, fit = self.start(tasks, runs, budget, policy, sample_kw)
        trees = [[_Node(attempt=None, parent=None)] for _ in episodes]
        # at most `budget` expansions (>= 1 attempt each)
        for round_ in base.rounds(budget, progress, self.name):
            open_ = [i for i, ep in enumerate(episodes) if not ep.done]
            if not open_:
                break
            chosen = {i: self._select(trees[i]) for i in open_}  # 1. selection (UCT)
            if self.reflect:  # 2. reflection on the selected failed nodes, one call
                need = [i for i in open_ if chosen[i] != 0 and trees[i][chosen[i]].reflection is None]
                reqs = []
                for i in need:
                    a = episodes[i].attempts[trees[i][chosen[i]].attempt]
                    reqs.append((P.reflect_prompt(task_of[i].prompt, a.code, a.feedback), 1))
                for i, out in zip(
                    need, base.sample_requests(policy, reqs, base.round_seed(seed, round_, 1), **sample_kw)
                ):
                    text, ntok = out[0]
                    trees[i][chosen[i]].reflection = P.strip_thinking(text).strip()
                    episodes[i].spend(ntok)
                    episodes[i].extra.append(
                        {"kind": "reflection", "attempt": trees[i][chosen[i]].attempt, "text": text}
                    )
            # 3. expansion: `width` candidates (fewer when the budget runs out), one call
            sizes = {i: min(self.width, budget - len(episodes[i].attempts)) for i in open_}
            prompts = {i: self._prompt(task_of[i], episodes[i], trees[i], chosen[i], fit) for i in open_}
            outs = base.sample_requests(
                policy, [(prompts[i], sizes[i]) for i in open_], base.round_seed(seed, round_), **sample_kw
            )
            jobs, owners, codes = [], [], []
            for i, out in zip(open_, outs):
                for text, ntok in out:
                    codes.append(self.extract(text))
                    jobs.append(task_of[i].job(codes[-1], "visible"))
                    owners.append((i, text, ntok))
            results = base.execute(executor, jobs)  # 4. one execution batch for every new candidate
            new: dict[int, list[int]] = {i: [] for i in open_}
            for (i, text, ntok), code, res in zip(owners, codes, results):
                ep, tree, parent = episodes[i], trees[i], chosen[i]
                ep.spend(ntok)
                note = tree[parent].reflection or ""
                a = len(ep.attempts)
                attempt = base.make_attempt(prompts[i], text, code, res, ntok, tree[parent].attempt, note)
                ep.record(attempt, held=self._held(ep.attempts + [attempt]))
                tree.append(_Node(attempt=a, parent=parent, value=float(res.reward)))
                tree[parent].children.append(len(tree) - 1)
                new[i].append(len(tree) - 1)
                if base.visible_pass(res):
                    ep.done = True
            if self.self_eval:  # 5. optional self-evaluation of the new failed candidates, one call
                self._self_evaluate(
                    policy, episodes, trees, task_of, new, base.round_seed(seed, round_, 2), sample_kw
                )
            for i in open_:  # 6. backpropagation
                tree = trees[i]
                for v in new[i]:
                    node = tree[v]
                    node.visits, node.value_sum = 1, node.value
                    u = node.parent
                    while u is not None:
                        tree[u].visits += 1  # N(u) += 1
                        tree[u].value_sum += node.value  # Q(u) += value(v)
                        u = tree[u].parent
                if len(episodes[i].attempts) >= budget:
                    episodes[i].done = True
        return episodes

    def _select(self, tree: list[_Node]) -> int:
        """Descend from the root by UCT to a node that has not been expanded yet."""
        v = 0
        while tree[v].children:
            v = max(tree[v].children, key=lambda c, p=v: self._uct(tree, p, c))  # ties: the earliest child
        return v

    def _uct(self, tree: list[_Node], parent: int, child: int) -> float:
        node, n_parent = tree[child], max(tree[parent].visits, 1)
        n = max(node.visits, 1)
        # Q/N + c·sqrt(ln N(parent)/N)
        return node.value_sum / n + self.c_uct * math.sqrt(math.log(n_parent) / n)

    def _prompt(self, task: Any, ep: Episode, tree: list[_Node], v: int, fit: dict) -> str:
        if v == 0:
            return P.first_prompt(task.prompt)
        a = ep.attempts[tree[v].attempt]
        own = [tree[v].reflection] if tree[v].reflection else []
        others = [n.reflection for n in tree if n.reflection and n is not tree[v]]
        notes = (own + others[::-1])[: self.max_notes]  # its own reflection first, then the latest others
        return P.guided_refine_prompt(task.prompt, a.code, a.feedback, notes, **fit)

    @staticmethod
    def _held(attempts: list) -> int:
        for j, a in enumerate(attempts):
            if a.reward >= 1.0:
                return j  # the first visible pass
        return max(range(len(attempts)), key=lambda j: (attempts[j].reward, j))  # best so far, ties: latest

    def _self_evaluate(self, policy, episodes, trees, task_of, new, seed, sample_kw) -> None:
        targets = [(i, v) for i, vs in new.items() for v in vs if trees[i][v].value < 1.0]
        reqs = [
            (P.self_eval_prompt(task_of[i].prompt, episodes[i].attempts[trees[i][v].attempt].code), 1)
            for i, v in targets
        ]
        for (i, v), out in zip(targets, base.sample_requests(policy, reqs, seed, **sample_kw)):
            text, ntok = out[0]
            episodes[i].spend(ntok)
            score = P.parse_score(text)
            node = trees[i][v]
            episodes[i].extra.append(
                {"kind": "self_eval", "attempt": node.attempt, "text": text, "score": score}
            )
            if score is not None:
                # value = (1-λ)·pass rate + λ·self-score
                node.value = (1 - self.lam) * node.value + self.lam * score
