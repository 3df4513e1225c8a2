"""µCode's inference: multi-turn best-of-N, the learned verifier picking one of N candidates at every turn.

A scaffold (murphy_lab.scaffolds) so that `murphy_lab.evaluate.evaluate(..., scaffold=VerifierBestOfN(...))` fills
the same Iter-k pass@1 table as every other method (visible tests drive feedback, hidden tests decide):

    turn 1:   y_1^1..y_1^N ~ π(q(1));  ŷ_1 = argmax_i R_φ(x, y_1^i);  run ŷ_1 on the visible tests
    turn j:   y_j^1..y_j^N ~ π(refine(x, ŷ_{j-1}, feedback_{j-1}));  ŷ_j = argmax_i R_φ(x, y_j^i)   until ŷ passes

Iter-k counts attempts, and one attempt here is the *chosen* program of a turn (N generations, N model calls).
Selection rules from the official best_of_n.sh: 'verifier' (lv), 'public+verifier' (pt+lv: candidates passing the
visible tests first, R_φ breaks ties; all N are executed), 'random'. With N = 1 and no verifier it is exactly the
Reflexion loop, i.e. plain Iter-k.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.scaffolds import base  # the scaffold toolkit: base.sample_requests, base.execute, ...
from murphy_lab.scaffolds.base import Episode, Scaffold
from murphy_lab.scaffolds.reflexion import Reflexion

SELECTIONS = ("verifier", "public+verifier", "random")


class VerifierBestOfN(Scaffold):
    """Best-of-N at every turn with a verifier (anything with `.score(prompts, completions) -> list[float]`)."""

    name = "mucode-bon"

    def __init__(
        self,
        verifier: Any = None,
        n: int = 5,
        selection: str = "verifier",
        extract: Callable[[str], str] = P.extract_program,
    ):
        if selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        if selection != "random" and verifier is None and n > 1:
            raise ValueError(f"selection {selection!r} with n > 1 needs a verifier")
        self.verifier, self.n, self.selection, self.extract = verifier, n, selection, extract
        self.name = f"mucode-bon{n}-{selection}"

    def run(
        self, tasks, policy, executor, budget: int, runs=1, seed=None, progress=False, **sample_kw
    ) -> list[Episode]:
        budget, episodes, task_of, fit = self.start(tasks, runs, budget, policy, sample_kw)
        rng = random.Random(seed)
        for round_ in base.rounds(budget, progress, self.name):
            open_ = [i for i, ep in enumerate(episodes) if not ep.done]
            if not open_:
                break
            prompts = [Reflexion.prompt(task_of[i], episodes[i], fit) for i in open_]
            outs = base.sample_requests(
                policy, [(p, self.n) for p in prompts], base.round_seed(seed, round_), **sample_kw
            )
            picks, visible = self._choose(open_, task_of, outs, executor, rng)
            for i, p, o, (k, code), res in zip(open_, prompts, outs, picks, visible):
                ep = episodes[i]
                ep.spend(sum(t for _, t in o), calls=len(o))  # all N generations count as model calls
                text, ntok = o[k]
                base.record_attempt(ep, p, text, code, res, ntok, budget, note=f"pick {k} of {len(o)}")
        return episodes

    def _choose(self, open_, task_of, outs, executor, rng):
        """Per open episode: (index of the chosen candidate, its program) and its visible-test result."""
        codes = [[self.extract(text) for text, _ in o] for o in outs]
        if self.selection == "random":
            picks = [rng.randrange(len(o)) for o in outs]
        else:
            flat = [(P.first_prompt(task_of[i].prompt), text) for i, o in zip(open_, outs) for text, _ in o]
            scores = (
                self.verifier.score([x for x, _ in flat], [y for _, y in flat])
                if self.verifier
                else [0.0] * len(flat)
            )
            per, at = [], 0
            for o in outs:
                per.append(scores[at : at + len(o)])
                at += len(o)
        if self.selection == "public+verifier":  # all N run on the visible tests; passing ones first
            jobs = [task_of[i].job(c, "visible") for i, cs in zip(open_, codes) for c in cs]
            flat_res, results, at = base.execute(executor, jobs), [], 0
            for cs in codes:
                results.append(flat_res[at : at + len(cs)])
                at += len(cs)
            picks = [
                max(range(len(cs)), key=lambda k: (base.visible_pass(rs[k]), s[k]))
                for cs, rs, s in zip(codes, results, per)
            ]
            return [(k, cs[k]) for k, cs in zip(picks, codes)], [rs[k] for k, rs in zip(picks, results)]
        if self.selection == "verifier":
            picks = [max(range(len(s)), key=s.__getitem__) for s in per]  # ŷ = argmax_i R_φ(x, y^i)
        chosen = [(k, cs[k]) for k, cs in zip(picks, codes)]
        visible = base.execute(
            executor, [task_of[i].job(code, "visible") for i, (_, code) in zip(open_, chosen)]
        )
        return chosen, visible
