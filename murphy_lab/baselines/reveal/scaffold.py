"""Evaluating a ReVeal policy: in ReVeal's tagged rounds with public-test feedback, in its own loop, or in any shared
Iter-k scaffold.

`ReVealScaffold` plugs ReVeal's test-time rounds into `murphy_lab.evaluate` (registered as scaffold "reveal" when this
package is imported): attempt j of the Iter-k table is round j's program, the held program after k attempts is the
latest one, and the hidden tests then decide (evaluate.py). What the model sees after a round:

- "reveal" (`feedback="public"`, ReVeal's column of the tables): the task's visible tests, run and reported exactly
  as the Reflexion loop reports them to every other column, in ReVeal's <tool-feedback> slot; an episode stops when
  the program passes them (Reflexion's rule). The model writes the format it was trained in (generation and
  verification turns); its own tests are not run. So every column sees the same public-test feedback.
- "reveal-own" (`ReVealOwnScaffold`, `feedback="own"`, an extra, labelled row): ReVeal's own test-time loop, the
  tool's report on *its own* tests only (no visible tests, no reference solution: at test time a reference would
  leak the answer, so tests run unvalidated); an episode stops when the program passes every test the model wrote.

Transcripts: attempt 1 stores the round-1 prompt; later attempts store only their completion and feedback (the
prompt of round j is the round-1 prompt followed by every earlier completion and feedback, in order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from murphy_lab.baselines.reveal.chain import run_chains
from murphy_lab.baselines.reveal.format import reveal_extract
from murphy_lab.evaluate import evaluate
from murphy_lab.scaffolds import get_scaffold
from murphy_lab.scaffolds.base import (
    Attempt,
    Episode,
    Scaffold,
    round_seed,
    rounds,
    sample_requests,
)


class ReVealScaffold(Scaffold):
    """ReVeal's test-time loop (see the module docstring). `chat`: send the transcript as chat messages."""

    name = "reveal"
    feedback = "public"  # the visible tests, as every column sees them (module docstring)

    def __init__(self, chat: bool = False, max_tests: int = 10, validate: bool = False):
        self.chat, self.max_tests, self.validate = chat, max_tests, validate

    def run(
        self, tasks, policy, executor, budget: int, runs=1, seed=None, progress=False, **sample_kw
    ) -> list[Episode]:
        tasks = list(tasks)
        budget, episodes, _, _ = self.start(tasks, runs, budget)
        sampler = _PolicySampler(policy, seed, sample_kw)
        bar = rounds(budget, progress, self.name)
        chains = run_chains(
            tasks,
            sampler,
            executor,
            n=runs,
            rounds=budget,
            reward_tests=None,
            validate=self.validate,
            chat=self.chat,
            max_tests=self.max_tests,
            seed_fn=sampler.set_round,
            on_round=lambda r, played: bar.update(1),
            feedback=self.feedback,
        )
        bar.close()
        for ep, chain in zip(episodes, chains):
            for j, t in enumerate(chain.turns):
                ntok = int(t.meta.get("tokens", 0))
                ep.spend(ntok)
                c = t.check
                passed = "self-verified" if self.feedback == "own" else "passed"
                status = passed if c.verdict else ("syntax" if c.compile_error else "failed")
                att = Attempt(
                    prompt=t.prompt if j == 0 else "",
                    completion=t.completion,
                    code=t.code,
                    reward=c.n_passed / c.n_valid if c.n_valid else 0.0,
                    status=status,
                    feedback=c.feedback,
                    tokens=ntok,
                    parent=j - 1 if j else None,
                )
                ep.record(att, held=j)  # held after j+1 attempts: the latest program
            ep.done = True
        return episodes


class ReVealOwnScaffold(ReVealScaffold):
    """ReVeal's own test-time loop: feedback on its own tests only (the extra, labelled row; module docstring)."""

    name = "reveal-own"
    feedback = "own"


class _PolicySampler:
    """`sample(prompts, n)` for run_chains through a Policy; `pending` holds each completion's token count."""

    def __init__(self, policy: Any, seed: int | None, sample_kw: dict):
        self.policy, self.seed, self.kw, self.round, self.pending = policy, seed, sample_kw, 1, []

    def set_round(self, r: int) -> None:
        self.round = r

    def __call__(self, prompts: list, n: int) -> list[list[str]]:
        outs = sample_requests(
            self.policy, [(p, n) for p in prompts], round_seed(self.seed, self.round), **self.kw
        )
        self.pending = [{"tokens": tok} for row in outs for _, tok in row]
        return [[text for text, _ in row] for row in outs]


def evaluate_reveal(
    policy: Any,
    tasks: Sequence[Any],
    executor: Any,
    iters: Sequence[int] = (1, 3, 5),
    runs: int = 3,
    scaffold: str = "reveal",
    seed: int | None = 0,
    transcripts_path: str | None = None,
    progress: bool = True,
    chat: bool = False,
    **sample_kw: Any,
):
    """The Iter-k pass@1 table (murphy_lab.evaluate columns) of a ReVeal policy.

    scaffold="reveal": ReVeal's rounds with the visible tests' feedback (the tables' ReVeal column); "reveal-own":
    its own loop (self-written tests); "reflexion" / "dot" / "lats": the shared scaffold unchanged, with programs read
    from <generation-answer> when the model writes one (`reveal_extract`).
    """
    if scaffold in REVEAL_SCAFFOLDS:
        sc = REVEAL_SCAFFOLDS[scaffold](chat=chat)
    else:
        sc = get_scaffold(scaffold, extract=reveal_extract)
    return evaluate(
        policy,
        tasks,
        executor,
        iters=iters,
        runs=runs,
        scaffold=sc,
        seed=seed,
        transcripts_path=transcripts_path,
        progress=progress,
        **sample_kw,
    )


REVEAL_SCAFFOLDS = {ReVealScaffold.name: ReVealScaffold, ReVealOwnScaffold.name: ReVealOwnScaffold}
