"""The SFT corpus: a noisy expert's first attempts and feedback-conditioned repairs, with controlled error rates.

The expert plays the toy world the way a careful human would, but makes mistakes at fixed rates, so that the
base model trained on it has room to improve both at turn 1 and at repair:

- turn 1: copy the constants the prompt gives (each miscopied with prob `p_miscopy`), guess the hidden ones
  uniformly, and break the syntax with prob `p_broken`; a broken attempt is cut off before its constants (as a
  truncated generation is), so it carries nothing right into the repair and its feedback reveals nothing;
- repair (turns 2 and 3): keep the previous attempt's constants, except that a constant the feedback reveals is
  copied from the feedback and a constant the prompt gives is copied from the prompt (each copy wrong with prob
  `r_miscopy`); the repair of a broken attempt starts over (copy what the prompt gives, guess the rest); the repair
  itself breaks with prob `r_broken`.

Corpus chains run turn 1 -> turn 2 -> turn 3 on training-split tasks; every turn of a chain is one example
(prompt, completion), and each feedback text in a refinement prompt is the REAL feedback of executing that
attempt on its task's visible tests (one `run_many` batch per turn, identical jobs executed once), so the corpus
can never drift from the executor's format.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, replace

from murphy_lab.prompts import first_prompt, refine_prompt
from murphy_lab.toy.world import A_VALUES, B_VALUES, FAMILIES, Spec, program, revealed, sample_specs, to_task


@dataclass
class NoiseConfig:
    """Error rates of the noisy expert (the base model inherits roughly these)."""

    p_broken: float = 0.2  # turn 1: the attempt has a syntax error (uninformative feedback)
    p_miscopy: float = 0.15  # turn 1: a constant given in the prompt is copied wrong (per constant)
    r_broken: float = 0.05  # repair: the new attempt has a syntax error
    r_miscopy: float = 0.1  # repair: a constant it should copy (from feedback or prompt) is copied wrong
    p_hide_a: float = 0.5  # how often the corpus tasks hide A (as in make_tasks)
    p_hide_b: float = 0.5  # how often the corpus tasks hide B
    min_hidden: int = 1  # every corpus task hides at least this many constants (as in make_tasks)


@dataclass
class Attempt:
    """One attempt of the expert: its constants and whether (and how) its syntax is broken."""

    spec: Spec
    a: int
    b: int
    broken: int = -1  # index into BREAKS, -1 when the syntax is fine

    @property
    def code(self) -> str:
        if self.broken >= 0:
            return BREAKS[self.broken].format(op=FAMILIES[self.spec.family])
        return program(self.spec.family, self.a, self.b)


# Broken attempts: the program cut off or garbled before its constants, so that neither the code nor the
# executor's SyntaxError feedback (which quotes the offending line) holds a constant. Each fails to compile.
BREAKS = (
    "def f(x):\n    return x*\n",
    "def f(x):\n    return x*({op}\n",
    "def f(x):\n    return x*{op}\n",
    "def f(x)\n    return x\n",
    "def f(x:\n",
)


def _other(rng: random.Random, values: tuple[int, ...], right: int) -> int:
    return rng.choice([v for v in values if v != right])


def _copy(rng: random.Random, values: tuple[int, ...], right: int, p_wrong: float) -> int:
    return _other(rng, values, right) if rng.random() < p_wrong else right


def first_attempt(spec: Spec, rng: random.Random, noise: NoiseConfig) -> Attempt:
    """The expert's turn-1 attempt: copy what the prompt gives (noisily), guess what it hides."""
    a = rng.choice(A_VALUES) if spec.hide_a else _copy(rng, A_VALUES, spec.a, noise.p_miscopy)
    b = rng.choice(B_VALUES) if spec.hide_b else _copy(rng, B_VALUES, spec.b, noise.p_miscopy)
    broken = rng.randrange(len(BREAKS)) if rng.random() < noise.p_broken else -1
    return Attempt(spec, a, b, broken)


def repair(prev: Attempt, reveals: set[str], rng: random.Random, noise: NoiseConfig) -> Attempt:
    """The expert's repair of `prev` given which constants its feedback revealed."""
    spec = prev.spec
    if prev.broken >= 0:  # nothing to keep: start over, with the repair's error rates
        return first_attempt(spec, rng, replace(noise, p_broken=noise.r_broken, p_miscopy=noise.r_miscopy))
    a, b = prev.a, prev.b
    if "a" in reveals or not spec.hide_a:  # copy A from the feedback or the prompt
        a = _copy(rng, A_VALUES, spec.a, noise.r_miscopy)
    if "b" in reveals or not spec.hide_b:
        b = _copy(rng, B_VALUES, spec.b, noise.r_miscopy)
    broken = rng.randrange(len(BREAKS)) if rng.random() < noise.r_broken else -1
    return Attempt(spec, a, b, broken)


def build_corpus(
    n_chains: int,
    executor,
    seed: int = 0,
    noise: NoiseConfig | None = None,
    turns: int = 3,
    progress: bool = False,
) -> list[dict]:
    """SFT examples {"prompt", "completion", "turn", "spec"} from `n_chains` expert chains of up to `turns` turns.

    `executor` needs `.run_many([(program, tests), ...])` (the project's Executor); feedback is its real output.
    """
    noise = noise or NoiseConfig()
    rng = random.Random(f"toy-corpus-{seed}")
    specs = sample_specs(
        "train",
        n_chains,
        seed=seed + 10_000,
        p_hide_a=noise.p_hide_a,
        p_hide_b=noise.p_hide_b,
        min_hidden=noise.min_hidden,
    )
    tasks = [to_task(s, f"corpus/{i}") for i, s in enumerate(specs)]
    examples: list[dict] = []
    # live chains: (task index, prompt for the next attempt, the next attempt)
    live = []
    for i, spec in enumerate(specs):
        att = first_attempt(spec, rng, noise)
        live.append((i, first_prompt(spec.prompt), att))
    bar = _bar(progress, turns)
    for turn in range(1, turns + 1):
        for _, prompt, att in live:
            examples.append(
                {"prompt": prompt, "completion": att.code, "turn": turn, "spec": asdict(att.spec)}
            )
        if turn == turns:
            break
        results = _run_unique(executor, [(att.code, tasks[i].visible_tests) for i, _, att in live])
        _require_verdicts(results)
        nxt = []
        for (i, _, att), res in zip(live, results):
            if res.passed == res.total:  # the visible locks pass only for the right function: chain done
                continue
            task = tasks[i]
            rep = repair(att, revealed(task, res.feedback), rng, noise)
            nxt.append((i, refine_prompt(task.prompt, att.code, res.feedback), rep))
        live = nxt
        bar.update(1)
    bar.close()
    return examples


def _run_unique(executor, jobs: list[tuple[str, object]]) -> list:
    """Run each distinct (program, tests) once; return results in job order. Tests are the whole suite, its setup
    included: every task's lock lives in its setup (world v2's corpus keyed on the cases alone, which all tasks
    share, and quoted the first task's feedback for every task that tried the same program)."""
    keys = [(p, t.setup, tuple(t.cases)) for p, t in jobs]
    first: dict = {}
    for k, job in zip(keys, jobs):
        first.setdefault(k, job)
    uniq = list(first)
    res = dict(zip(uniq, executor.run_many([first[k] for k in uniq])))
    return [res[k] for k in keys]


def _require_verdicts(results: list) -> None:
    """The corpus must not depend on how loaded the machine is: a timed-out (or crashed) expert program (they are one-line
    functions that run in microseconds) means the executor was starved, and its feedback would silently change the
    data. Refuse instead of building a different corpus."""
    starved = sum(r.status in ("timeout", "crashed") for r in results)
    if starved:
        raise RuntimeError(
            f"{starved} of the expert's programs timed out while building the toy corpus: the machine "
            "is too loaded for the executor's timeout; rerun when it is quieter (or raise "
            "murphy_lab.toy.build.CORPUS_TIMEOUT)"
        )


def _bar(progress: bool, total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total - 1, desc="corpus: executing turns", disable=not progress, leave=False)
