"""The scaffold interface: episodes of up to k attempts on visible tests, the program held after each attempt.

A scaffold repairs a program with the *visible* tests as its only feedback; the *hidden* tests decide success
afterwards (murphy_lab.evaluate). It runs many episodes at once, one per (task, run), so that every phase of a
round is ONE `policy.sample` call over all open episodes and every attempt round ONE `executor.run_many`.

Budget. Iter-k counts *attempts*: programs generated and run on the visible tests. After k attempts an episode
holds one program (`Episode.held_after(k)`): which one is the scaffold's rule (Reflexion: the latest; LATS: the
best on the visible tests). An attempt that passes every visible test ends the episode, so for larger k the same
program is held. Extra model calls (reflections, self-evaluations) are not attempts; they are counted in
`Episode.calls` and `Episode.tokens` (cumulative after each attempt) so tables can put the cost next to pass@1.
One model call = one generated completion (a request with n=4 counts as 4 calls).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from murphy_lab import prompts as P
from murphy_lab.policy.base import count_tokens


@dataclass
class Attempt:
    """One program tried by a scaffold, with its visible-test verdict."""

    prompt: Any
    completion: str
    code: str
    reward: float = 0.0  # fraction of visible tests passed
    status: str = ""
    feedback: str = ""
    tokens: int = 0  # generated tokens of `completion`
    parent: int | None = None  # index of the attempt it repairs (None: from the task prompt)
    note: str = ""  # the reflection that guided it, if any


@dataclass
class Episode:
    """One scaffold run on one task: its attempts, the program held after each, and the cost so far."""

    task_id: str
    run: int = 0
    difficulty: str = "all"
    scaffold: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    held: list[int] = field(default_factory=list)  # held[j]: index of the program held after j+1 attempts
    calls: list[int] = field(default_factory=list)  # model calls used up to and including attempt j+1
    tokens: list[int] = field(default_factory=list)  # generated tokens up to and including attempt j+1
    extra: list[dict] = field(default_factory=list)  # other model outputs: reflections, self-evaluations
    done: bool = False  # a visible pass (or the budget) ended it
    total_calls: int = 0  # running totals (calls/tokens lists are snapshots of these)
    total_tokens: int = 0

    def record(self, attempt: Attempt, held: int) -> int:
        """Append an attempt (its generation already counted in the totals); return its index."""
        self.attempts.append(attempt)
        self.held.append(held)
        self.calls.append(self.total_calls)
        self.tokens.append(self.total_tokens)
        return len(self.attempts) - 1

    def spend(self, tokens: int, calls: int = 1) -> None:
        self.total_calls += calls
        self.total_tokens += tokens

    def held_after(self, k: int) -> int | None:
        """Index of the program held after k attempts (the last one held if the episode stopped earlier)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return self.held[min(k, len(self.held)) - 1] if self.held else None

    def cost_after(self, k: int) -> tuple[int, int]:
        """(model calls, generated tokens) spent by the time the program held after k attempts was fixed."""
        if not self.held:
            return self.total_calls, self.total_tokens
        j = min(k, len(self.held)) - 1
        return self.calls[j], self.tokens[j]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Episode:
        d = dict(d)
        d["attempts"] = [Attempt(**a) for a in d.get("attempts", [])]
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def visible_pass(result: Any) -> bool:
    """All visible tests passed (the scaffold's stopping rule)."""
    total = getattr(result, "total", None)
    return float(result.reward) >= 1.0 and (total is None or total > 0)


class Scaffold:
    """Base class: subclasses implement `run`; shared helpers batch sampling and execution."""

    name = "scaffold"

    def run(
        self,
        tasks: Sequence[Any],
        policy: Any,
        executor: Any,
        budget: int,
        runs: int = 1,
        seed: int | None = None,
        progress: bool = False,
        **sample_kw: Any,
    ) -> list[Episode]:
        """Run `runs` episodes per task with at most `budget` attempts each; return them task-major. (A subclass
        restates the names only: these are the types.)"""
        raise NotImplementedError

    def solve(self, task: Any, policy: Any, executor: Any, k: int, **kw: Any) -> tuple[str, Episode]:
        """One task, one episode: (the program held after k attempts, the transcript)."""
        ep = self.run([task], policy, executor, budget=k, runs=1, **kw)[0]
        i = ep.held_after(k)
        return ("" if i is None else ep.attempts[i].code), ep

    # --- helpers ------------------------------------------------------------------------------------------------
    def attempt_round(
        self,
        policy: Any,
        executor: Any,
        episodes: list[Episode],
        task_of: list[Any],
        open_: list[int],
        prompts: list[Any],
        seed: int | None,
        budget: int,
        notes: dict[int, str] | None = None,
        **sample_kw: Any,
    ) -> None:
        """One attempt for each open episode `i` from `prompts` (same order): one program sampled, extracted with
        `self.extract`, run on the visible tests, recorded (`record_attempt`); all sampling and execution batched."""
        outs = sample_requests(policy, [(p, 1) for p in prompts], seed, **sample_kw)
        codes = [self.extract(o[0][0]) for o in outs]
        results = execute(executor, [task_of[i].job(c, "visible") for i, c in zip(open_, codes)])
        for i, p, o, code, res in zip(open_, prompts, outs, codes, results):
            (text, ntok), ep = o[0], episodes[i]
            ep.spend(ntok)
            record_attempt(ep, p, text, code, res, ntok, budget, (notes or {}).get(i, ""))

    def start(
        self, tasks: Sequence[Any], runs: int, budget: int, policy: Any = None, sample_kw: dict | None = None
    ) -> tuple[int, list[Episode], list[Any], Any]:
        """What every run starts from: the checked budget, one Episode per (task, run), the task behind each
        episode (same order), and, given the policy, the room quoted code and feedback may take in its context
        (`prompts.policy_budget`; None without a policy)."""
        budget = check_budget(budget)
        tasks = list(tasks)
        episodes = self.new_episodes(tasks, runs, self.name)
        fit = None if policy is None else P.policy_budget(policy, (sample_kw or {}).get("max_new_tokens"))
        return budget, episodes, [t for t in tasks for _ in range(runs)], fit

    @staticmethod
    def new_episodes(tasks: Sequence[Any], runs: int, name: str) -> list[Episode]:
        check_tasks(tasks)
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise ValueError(f"runs must be an integer >= 1, got {runs!r}")
        return [
            Episode(task_id=t.task_id, run=r, difficulty=getattr(t, "difficulty", "all"), scaffold=name)
            for t in tasks
            for r in range(runs)
        ]


def check_tasks(tasks: Sequence[Any]) -> None:
    for i, t in enumerate(tasks):
        if not hasattr(t, "prompt") or not hasattr(t, "visible_tests"):
            raise TypeError(
                f"tasks[{i}] must be a Task (with .prompt and .visible_tests), got {type(t).__name__}"
            )
        if not len(t.visible_tests):
            raise ValueError(
                f"tasks[{i}] ({t.task_id!r}) has no visible tests: a refinement scaffold needs them for feedback"
            )


def check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget (the number of attempts k) must be an integer >= 1, got {budget!r}")
    return budget


def sample_requests(policy: Any, requests: list[tuple[Any, int]], seed: int | None = None, **kw: Any):
    """Serve requests [(prompt, m), ...] with ONE `policy.sample` call; return [[(text, tokens), ...] per request].

    Identical prompts are merged when every merged prompt then asks for the same n (e.g. the turn-1 prompt of
    `runs` episodes of one task: one prompt, n = runs); else, if every request asks for the same m, the call is
    `sample(prompts, n=m)`; else the requests are flattened to n = 1 with repeated prompts.
    """
    if not requests:
        return []
    if seed is not None:
        kw["seed"] = seed
    keys = [_key(p) for p, _ in requests]
    totals: dict[str, int] = {}
    for key, (_, m) in zip(keys, requests):
        totals[key] = totals.get(key, 0) + m
    if len(set(totals.values())) == 1 and len(totals) < len(requests):
        firsts = {}
        for key, (p, _) in zip(keys, requests):
            firsts.setdefault(key, p)
        n = next(iter(totals.values()))
        texts = policy.sample(list(firsts.values()), n, **kw)
        counts = _token_counts(policy, texts)
        pools = {key: list(zip(t, c)) for key, t, c in zip(firsts, texts, counts)}
        out = []
        for key, (_, m) in zip(keys, requests):
            out.append(pools[key][:m])
            pools[key] = pools[key][m:]
        return out
    ms = {m for _, m in requests}
    if len(ms) == 1:
        m = ms.pop()
        texts = policy.sample([p for p, _ in requests], m, **kw)
        counts = _token_counts(policy, texts)
        return [list(zip(t, c)) for t, c in zip(texts, counts)]
    flat = [p for p, m in requests for _ in range(m)]
    texts = policy.sample(flat, 1, **kw)
    counts = _token_counts(policy, texts)
    pairs = [(t[0], c[0]) for t, c in zip(texts, counts)]
    out, i = [], 0
    for _, m in requests:
        out.append(pairs[i : i + m])
        i += m
    return out


def _key(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)


def _token_counts(policy: Any, texts: list[list[str]]) -> list[list[int]]:
    """Exact generated-token counts when the backend reports them, else `count_tokens` on the text."""
    last = getattr(policy, "last_token_counts", None)
    if last and len(last) == len(texts) and all(len(a) == len(b) for a, b in zip(last, texts)):
        return [list(map(int, row)) for row in last]
    return [[count_tokens(policy, t) for t in row] for row in texts]


def execute(executor: Any, jobs: list[tuple[str, Any]]) -> list[Any]:
    """ONE executor batch (`run_many`), checked for length; build each job with `task.job(code, tests)`."""
    if not jobs:
        return []
    run_many = executor.run_many if hasattr(executor, "run_many") else (lambda js: [executor(*j) for j in js])
    results = run_many(jobs)
    if len(results) != len(jobs):
        raise ValueError(f"executor returned {len(results)} results for {len(jobs)} jobs")
    return results


def round_seed(seed: int | None, round_: int, phase: int = 0) -> int | None:
    """A distinct, reproducible seed for each (round, phase) of a run (None stays None)."""
    return None if seed is None else seed * 1_000_003 + round_ * 101 + phase


def make_attempt(
    prompt: Any, text: str, code: str, res: Any, ntok: int, parent: int | None, note: str = ""
) -> Attempt:
    """An `Attempt` from a completion, its program and its visible-test result."""
    return Attempt(
        prompt=prompt,
        completion=text,
        code=code,
        reward=float(res.reward),
        status=getattr(res, "status", ""),
        feedback=getattr(res, "feedback", ""),
        tokens=ntok,
        parent=parent,
        note=note,
    )


def record_attempt(
    ep: Episode, prompt: Any, text: str, code: str, res: Any, ntok: int, budget: int, note: str = ""
) -> int:
    """Append an attempt that refines the episode's latest one; the episode then holds it, and is done once it
    passes the visible tests or has made `budget` attempts. Returns the attempt's index."""
    prev = len(ep.attempts) - 1 if ep.attempts else None
    j = ep.record(make_attempt(prompt, text, code, res, ntok, prev, note), held=len(ep.attempts))
    ep.done = visible_pass(res) or j + 1 >= budget
    return j


# a progress bar appears once its work has lasted this long (a toy evaluation never shows one; a real model's does)
PROGRESS_DELAY_S = 5.0


def rounds(budget: int, progress: bool, desc: str):
    """range(budget) with a tqdm bar when `progress` (shown after `PROGRESS_DELAY_S`)."""
    from tqdm.auto import tqdm

    return tqdm(
        range(budget), desc=f"{desc} attempts", disable=not progress, leave=False, delay=PROGRESS_DELAY_S
    )
