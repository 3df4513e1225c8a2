"""The toy task family: "locked" linear functions whose hidden constants only feedback can reveal.

Every task asks for `f(x) = x*A + B` (family `add`) or `f(x) = x*A - B` (family `sub`) with A in 2..9, B in 1..30.
The prompt writes the function in the program's own notation, except that each constant may be hidden behind `?`:

    #task: x*?+12      (A hidden: a turn-1 attempt can only guess it)
    #task: x*6-?       (B hidden)
    #task: x*?-?       (both hidden: needs three turns, see below)
    #task: x*6+12      (both given: solvable at turn 1 by copying; not drawn by default, `min_hidden=0`)

Every constant appears where it is given (prompt, feedback) in the form the program writes it (`*6`, `+12`, `-12`),
so using it is a copy, the one skill a ~138k-parameter model learns reliably (docs/toy_world.md, world v2).

By default every task hides at least one constant (`min_hidden=1`): a task with nothing hidden needs no feedback,
so a failure on it is worth the same whatever its feedback says, and it would blur the mechanism this world
exists to show (docs/toy_world.md, "The world's design").

The *visible* test is one staged lock (its result is the feedback quoted in refinement prompts). The suite's
setup defines a checker whose asserts run in order, and the executor quotes the first one that fails:

    def check(f):
        assert f(0) == +12           fails iff B is wrong            -> the feedback reveals B (f(0) = +B or -B)
        assert f(1) - f(0) == 1*6    fails iff B is right and A wrong -> the feedback reveals A
    test: check(f)

So what a failed attempt reveals depends on what it got right: an attempt with a wrong B reveals B and nothing
about A; only an attempt with the right B reveals A. A broken attempt (a syntax error: the program is truncated
before its constants, as a cut-off generation would be) reveals nothing and keeps nothing. With both
constants hidden, turn 1 reveals B, turn 2 reveals A and turn 3 can solve, so Iter-1 < Iter-2 < Iter-3 by design.
Both the visible and the hidden suite hold ONE test, so the reward r(v) is 0 or 1: no partial credit for merely
running (the prototype's flaw, see docs/toy_world.md). Training should take rewards and feedback from the
visible suite (the toy profile sets `reward_tests="visible"`); the hidden suite (other inputs, one assert) decides
success in evaluation.

Train and test splits are disjoint in (family, A, B): a task in the test split never shares its function with a
training task, whatever is hidden.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from murphy_lab.executor.types import TestSuite
from murphy_lab.tasks.task import Task

FAMILIES = {"add": "+", "sub": "-"}  # family name in the prompt -> operator in the code
A_VALUES = tuple(range(2, 10))
B_VALUES = tuple(range(1, 31))
HIDDEN_INPUTS = (2, 3, 7)  # the hidden test's inputs (none of the visible ones)
SPLITS = ("train", "test")


@dataclass(frozen=True)
class Spec:
    """The ground truth of one toy task: family, constants, and which constants the prompt hides."""

    family: str  # "add" | "sub"
    a: int  # A, the slope
    b: int  # B, the offset (added or subtracted)
    hide_a: bool = False
    hide_b: bool = False

    def f(self, x: int) -> int:
        return x * self.a + self.b if self.family == "add" else x * self.a - self.b

    @property
    def prompt(self) -> str:
        a = "?" if self.hide_a else str(self.a)
        b = "?" if self.hide_b else str(self.b)
        return f"#task: x*{a}{FAMILIES[self.family]}{b}"

    @property
    def reveals(self) -> dict[str, str]:
        """The lock's asserts, which the feedback quotes when they fail: `+12`/`-12` is B, `1*6` is A, written as
        the program writes them."""
        return {
            "b": f"assert f(0) == {FAMILIES[self.family]}{self.b}",
            "a": f"assert f(1) - f(0) == 1*{self.a}",
        }

    @property
    def check(self) -> str:
        """The visible suite's setup: a checker whose first failing assert is what the feedback quotes."""
        return f"def check(f):\n    {self.reveals['b']}\n    {self.reveals['a']}\n"

    @property
    def hidden_test(self) -> str:
        xs = ", ".join(map(str, HIDDEN_INPUTS))
        return f"assert [f(x) for x in ({xs})] == {[self.f(x) for x in HIDDEN_INPUTS]}"

    @property
    def mask(self) -> str:
        return {(False, False): "none", (True, False): "a", (False, True): "b", (True, True): "ab"}[
            (self.hide_a, self.hide_b)
        ]


def program(family: str, a: int | str, b: int | str) -> str:
    """The canonical program text for constants a, b (the SFT corpus and the references share this form)."""
    return f"def f(x):\n    return x*{a}{FAMILIES[family]}{b}\n"


def split_of(family: str, a: int, b: int) -> str:
    """Which split owns the function (family, A, B): a fixed hash, about 20% test."""
    return "test" if (a * 31 + b * 7 + (family == "sub") * 3) % 5 == 0 else "train"


def functions(split: str) -> list[tuple[str, int, int]]:
    """Every (family, A, B) owned by `split`, in a fixed order."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return [
        (fam, a, b) for fam in FAMILIES for a in A_VALUES for b in B_VALUES if split_of(fam, a, b) == split
    ]


def sample_specs(
    split: str, n: int, seed: int = 0, p_hide_a: float = 0.5, p_hide_b: float = 0.5, min_hidden: int = 1
) -> list[Spec]:
    """`n` task specs from `split`, deterministic in `seed`; each constant is hidden independently, redrawn until
    at least `min_hidden` of the two are hidden (default 1: with p = 0.5 each, masks a, b, ab are equally likely)."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    for name, p in (("p_hide_a", p_hide_a), ("p_hide_b", p_hide_b)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {p!r}")
    possible = (p_hide_a > 0) + (p_hide_b > 0)
    if min_hidden not in (0, 1, 2) or min_hidden > possible:
        raise ValueError(
            f"min_hidden must be 0, 1 or 2 and at most the number of constants that can be hidden "
            f"(p_hide_a={p_hide_a}, p_hide_b={p_hide_b}: {possible}), got {min_hidden!r}"
        )
    rng = random.Random(f"toy-{split}-{seed}")
    pool = functions(split)
    out: list[Spec] = []
    while len(out) < n:  # without replacement, reshuffled when the pool is exhausted
        order = pool[:]
        rng.shuffle(order)
        for fam, a, b in order[: n - len(out)]:
            while True:
                hide_a, hide_b = rng.random() < p_hide_a, rng.random() < p_hide_b
                if hide_a + hide_b >= min_hidden:
                    break
            out.append(Spec(fam, a, b, hide_a=hide_a, hide_b=hide_b))
    return out


def to_task(spec: Spec, task_id: str) -> Task:
    """Wrap a Spec into the project's Task (visible = the staged lock, hidden = one all-or-nothing assert)."""
    return Task(
        task_id=task_id,
        prompt=spec.prompt,
        visible_tests=TestSuite(cases=("check(f)",), setup=spec.check),
        hidden_tests=TestSuite(cases=(spec.hidden_test,)),
        entry_point="f",
        reference=program(spec.family, spec.a, spec.b),
        difficulty={"none": "easy", "a": "medium", "b": "medium", "ab": "hard"}[spec.mask],
        source="toy",
        metadata={
            "family": spec.family,
            "a": spec.a,
            "b": spec.b,
            "hide_a": spec.hide_a,
            "hide_b": spec.hide_b,
            "reveals": spec.reveals,
        },
    )


def make_tasks(
    split: str = "train",
    n: int = 200,
    seed: int = 0,
    p_hide_a: float = 0.5,
    p_hide_b: float = 0.5,
    min_hidden: int = 1,
) -> list[Task]:
    """`n` toy tasks from `split` ("train" or "test"), deterministic in `seed`.

    Train and test never share a function (family, A, B). Each constant is hidden with its own probability, and
    at least `min_hidden` of them (default 1); `difficulty` is easy (nothing hidden, only with `min_hidden=0`),
    medium (one hidden) or hard (both hidden).
    """
    specs = sample_specs(split, n, seed, p_hide_a, p_hide_b, min_hidden)
    return [to_task(s, f"toy/{split}/{seed}/{i}") for i, s in enumerate(specs)]


def spec_of(task: Task) -> Spec:
    """The ground truth of a toy task (raises ValueError for a task that is not from this family)."""
    m = task.metadata
    try:
        return Spec(m["family"], m["a"], m["b"], m["hide_a"], m["hide_b"])
    except KeyError as e:
        raise ValueError(f"task {task.task_id!r} is not a toy task (metadata lacks {e})") from None


_REVEAL_B = re.compile(r"assert f\(0\) == [-+]\d+")
_REVEAL_A = re.compile(r"assert f\(1\) - f\(0\) == 1\*\d+")


def revealed_in(feedback: str) -> set[str]:
    """Which constants a feedback text states, read from the text alone (no task needed): "b" when it quotes
    `assert f(0) == +<B>` (or `-<B>`), "a" when it quotes `assert f(1) - f(0) == 1*<A>`."""
    fb = feedback or ""
    return {name for name, pat in (("b", _REVEAL_B), ("a", _REVEAL_A)) if pat.search(fb)}


def revealed(task: Task, feedback: str) -> set[str]:
    """Which constants ("a", "b") the feedback text states: the revealing test's text appears in it.

    This is the operational meaning of an *informative* failure: its feedback literally contains a constant's
    value, through the text of the test that reveals it.
    """
    reveals = task.metadata.get("reveals")
    if not reveals:
        raise ValueError(f"task {task.task_id!r} is not a toy task (metadata lacks 'reveals')")
    fb = feedback or ""
    return {name for name, text in reveals.items() if re.search(re.escape(text) + r"(?!\d)", fb)}


def revealing(task: Task, feedback: str) -> bool:
    """Whether a failed attempt's feedback reveals what its repair needs: after it, the prompt, the attempt and
    the feedback together determine the function.

    That holds when the feedback states A (the lock's second assert failed, so the attempt's B passed the first:
    B is the attempt's, or the prompt's), or when it states B on a task whose prompt gives A. It does not hold for
    B revealed with A hidden (the attempt's A is a guess the lock has not checked yet), nor for a failure that
    states nothing (a syntax error, a crash before the lock). `benchmarks/toy_repair.py` measures how often the
    policy then writes the right program: p(repair | revealing feedback).
    """
    got = revealed(task, feedback)
    return "a" in got or ("b" in got and not spec_of(task).hide_a)
