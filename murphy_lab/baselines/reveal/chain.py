"""ReVeal rollouts: chains of rounds (generation turn + verification turn + tool feedback), many chains at once.

    round 1:  one prompt per task (the statement + format instructions), sampled n times  -> n chains per task
    round r:  each open chain's whole transcript so far, sampled once
    after each round: parse (format.py), ONE executor batch for all chains (verify.py), append <tool-feedback>
    a chain stops when its program passes every valid self-written test (the model's own verdict), or at the
    round budget (published: 3 in training, many more at test time)

Used by the trainer (sampling through TRL, oracle tests give rewards) and by the evaluation scaffold (sampling
through a Policy, no oracle, no reference). It is a chain, not a tree: every round has exactly one successor.
`sample(prompts, n) -> list[list[str]]`; if the sampler has a `pending` list after a call (one record per
completion, prompt-major), each record lands in the round's `meta` (token ids for the trainer, counts for eval).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from murphy_lab.baselines.reveal.format import extract_tests, feedback_block, first_prompt, parse_round
from murphy_lab.baselines.reveal.verify import Check, check_rounds
from murphy_lab.executor.types import IOTest


@dataclass
class Turn:
    """One round of a chain: its prompt, the model's turn (cut), the parse, the tool's check, rewards, advantages."""

    prompt: Any
    raw: str  # the completion as sampled
    completion: str  # the model's turn: raw[:cut]
    split: int  # completion[:split] is the generation turn, completion[split:] the verification turn
    code: str
    issues: list[str]
    check: Check
    r_gen: float | None = None  # generation reward (rewards.py)
    r_ver: float | None = None  # verification reward
    adv_gen: float | None = None  # TAPO advantage of the generation turn's tokens
    adv_ver: float | None = None  # TAPO advantage of the verification turn's tokens
    meta: dict = field(default_factory=dict)


@dataclass
class Chain:
    """One ReVeal episode on one task."""

    task_id: str
    index: int  # member of the task's group (training) or run number (evaluation)
    # the transcript as messages (user, assistant, user, ...)
    context: list[dict] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    done: bool = False
    outcome: float | None = None  # R: the final program solves the oracle tests (rewards.py)

    def to_dict(self) -> dict:
        def turn(t: Turn) -> dict:
            c = t.check
            return {
                "completion": t.completion,
                "split": t.split,
                "code": t.code,
                "issues": t.issues,
                "tests": [vars(x) if isinstance(x, IOTest) else x for x in c.tests],
                "valid": c.valid,
                "status": c.status,
                "verdict": c.verdict,
                "oracle": c.oracle,
                "solved": c.solved,
                "feedback": c.feedback,
                "r_gen": t.r_gen,
                "r_ver": t.r_ver,
                "adv_gen": t.adv_gen,
                "adv_ver": t.adv_ver,
            }

        return {
            "task_id": self.task_id,
            "index": self.index,
            "outcome": self.outcome,
            "prompt": self.context[0]["content"] if self.context else "",
            "turns": [turn(t) for t in self.turns],
        }


def is_io(task: Any) -> bool:
    """A stdin/stdout task (its tests are IOTests): the model writes Input:/Output: pairs instead of asserts."""
    return any(
        isinstance(c, IOTest) for c in tuple(task.hidden_tests.cases) + tuple(task.visible_tests.cases)
    )


def is_text(task: Any) -> bool:
    """A text-answer task (the smoke profile): the answer is a string, run as `ANSWER = '<text>'`."""
    return task.metadata.get("answer", "code") == "text"


def program_of(task: Any, code: str) -> str:
    """What the executor runs for a candidate: `task.program(code)` (text answers, a benchmark's header)."""
    return task.program(code)


def render(context: list[dict], chat: bool) -> Any:
    """The prompt of the next round: the messages themselves (chat models) or their concatenated text."""
    return [dict(m) for m in context] if chat else "".join(m["content"] for m in context)


def run_chains(
    tasks: Sequence[Any],
    sample: Callable[[list, int], list[list[str]]],
    executor: Any,
    n: int,
    rounds: int,
    *,
    reward_tests: str | None = "hidden",
    validate: bool = True,
    chat: bool = False,
    max_tests: int = 10,
    stop_on_verdict: bool = True,
    seed_fn: Callable[[int], None] | None = None,
    on_round: Callable[[int, list[Chain]], None] | None = None,
    feedback: str = "own",
) -> list[Chain]:
    """Run n chains per task for up to `rounds` rounds (see the module docstring); chains are task-major.

    Args:
        reward_tests: "hidden" / "visible": run every candidate on those tests too (Check.oracle, the rewards;
            MurphyConfig's field of the same name); None: no reward tests (evaluation).
        validate: check the model's tests against `task.reference` when the task has one (training); False at
            evaluation time (a reference would leak the answer).
        chat: send the transcript as chat messages instead of one plain-text prompt.
        stop_on_verdict: a chain ends when its program passes all its valid tests (ReVeal's stopping rule).
        seed_fn: called with the round number before each sampling call (evaluation seeds).
        on_round: called after each round with (round, the chains that played it).
        feedback: "own": the tool's report on the model's own tests (ReVeal's loop, training); "public": the
            task's visible tests, run and reported as every column's Reflexion loop does (`public_checks`), so a
            chain ends when its program passes them (evaluation beside the other columns; `ReVealScaffold`).
    """
    if feedback not in ("own", "public"):
        raise ValueError(f"feedback must be 'own' or 'public', got {feedback!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if reward_tests not in ("hidden", "visible", None):
        raise ValueError(f"reward_tests must be 'hidden', 'visible' or None, got {reward_tests!r}")
    tasks = list(tasks)
    task_of = [t for t in tasks for _ in range(n)]
    chains = [
        Chain(
            task_id=t.task_id,
            index=i,
            context=[{"role": "user", "content": first_prompt(t.prompt, is_io(t))}],
        )
        for t in tasks
        for i in range(n)
    ]
    for r in range(1, rounds + 1):
        open_ = [i for i, c in enumerate(chains) if not c.done]
        if not open_:
            break
        if seed_fn is not None:
            seed_fn(r)
        if r == 1:  # one prompt per task, n samples each: the task's group shares its first prompt
            prompts = [render(chains[i * n].context, chat) for i in range(len(tasks))]
            texts = [x for row in sample(prompts, n) for x in row]
            per_prompt = [p for p in prompts for _ in range(n)]
        else:
            per_prompt = [render(chains[i].context, chat) for i in open_]
            texts = [row[0] for row in sample(per_prompt, 1)]
        pending = list(getattr(sample, "pending", None) or [])
        if len(texts) != len(open_):
            raise RuntimeError(f"round {r}: {len(texts)} completions for {len(open_)} open chains")
        parsed = [parse_round(x) for x in texts]
        items, issues = [], []
        for i, rd in zip(open_, parsed):
            task = task_of[i]
            code = rd.code if (rd.has_code_tag or not is_text(task)) else rd.text[: rd.split].strip()
            tests, test_issues = extract_tests(rd.tests_text, is_io(task), max_tests)
            ref = program_of(task, task.reference) if validate and task.reference else None
            suite = None if reward_tests is None else getattr(task, f"{reward_tests}_tests")
            items.append((program_of(task, code), tests, ref, suite))
            issues.append(rd.issues + test_issues)
            rd.code = code
        if feedback == "public":
            checks = public_checks([task_of[i] for i in open_], [rd.code for rd in parsed], executor)
        else:
            checks = check_rounds(items, executor, issues)
        for j, (i, rd, chk, prompt) in enumerate(zip(open_, parsed, checks, per_prompt)):
            c = chains[i]
            c.turns.append(
                Turn(
                    prompt=prompt,
                    raw=rd.text,
                    completion=rd.text[: rd.cut],
                    split=rd.split,
                    code=rd.code,
                    issues=issues[j],
                    check=chk,
                    meta=dict(pending[j]) if j < len(pending) else {},
                )
            )
            c.done = (stop_on_verdict and chk.verdict) or r == rounds
            c.context.append({"role": "assistant", "content": rd.text[: rd.cut]})
            block = feedback_block(chk.feedback, None if c.done else r + 1)
            c.context.append({"role": "user", "content": block.lstrip("\n") if chat else block})
        if on_round is not None:
            on_round(r, [chains[i] for i in open_])
    return chains


def public_checks(tasks: Sequence[Any], codes: Sequence[str], executor: Any) -> list[Check]:
    """Each program on its task's visible tests in ONE executor batch, as a `Check` whose tests are those tests
    (all valid: they are the benchmark's) and whose feedback is the executor's, the text the Reflexion loop shows
    every other column; `Check.verdict` is then "passes every visible test", Reflexion's stopping rule."""
    results = executor.run_many([task.job(code, "visible") for task, code in zip(tasks, codes)])
    checks = []
    for task, res in zip(tasks, results):
        cases = list(task.visible_tests.cases)
        status = (
            [o.status for o in res.outcomes] if len(res.outcomes) == len(cases) else [res.status] * len(cases)
        )
        checks.append(
            Check(
                tests=cases,
                valid=[True] * len(cases),
                status=status,
                details=[o.detail for o in res.outcomes],
                feedback=res.feedback,
                compile_error=res.feedback if res.status == "syntax" else "",
            )
        )
    return checks
