"""The executor's vocabulary: test kinds and results. Stands on nothing; task loaders import it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IOTest:
    """A stdin/stdout test: feed `input` on stdin, compare stdout with `output` (trailing whitespace normalized)."""

    input: str
    output: str


# One test is an assert statement (str, may span lines) or an IOTest.
Test = str | IOTest


COMPARE_MODES = ("default", "livecodebench")
RUNNERS = ("default", "pytest")  # who runs the cases: the harness (each case a statement) or pytest itself


@dataclass(frozen=True)
class TestSuite:
    """A list of tests and the rules of the benchmark's own harness for running them.

    A plain list of tests is accepted wherever a TestSuite is; it means `TestSuite(cases=tuple(list))`.
    """

    __test__ = False  # not a pytest test class

    cases: tuple[Test, ...] = ()
    setup: str = ""  # test code (imports, helpers, HumanEval's check) run before each case, after the program
    entry_points: tuple[str, ...] = ()  # the program names the tests call (they reach the program even when
    # they are a builtin's name, e.g. MBPP's `sum`); other names the test text reads but does not define too
    timeout: float | None = None  # wall-clock seconds per test; None: the Executor's own
    # "default" or "livecodebench" (stdout and functional results as lcb_runner compares)
    compare: str = "default"
    load_timeout: float | None = None  # seconds for loading the program, timed on their own before the first
    # test's limit starts (lcb_runner's `compile_code` alarm); None: loading counts towards the first test
    # "pytest": `setup` is a pytest test file and each case one of its test ids, run by pytest itself in the
    # test worker (`executor/pytest_run.py`; `tasks.convert.pytest_file_suite` makes them)
    runner: str = "default"

    def __post_init__(self) -> None:
        for k, case in enumerate(self.cases):
            if isinstance(case, str) and not _has_code(case):
                raise ValueError(f"test case {k} ({case!r}) is empty or only comments: it would test nothing")
        if isinstance(self.entry_points, str):
            object.__setattr__(self, "entry_points", (self.entry_points,))
        for name in self.entry_points:
            if not (isinstance(name, str) and name.isidentifier()):
                raise ValueError(f"entry point {name!r} is not a Python name")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, got {self.timeout!r}")
        if self.load_timeout is not None and not (
            isinstance(self.load_timeout, (int, float)) and self.load_timeout > 0
        ):
            raise ValueError(
                f"load_timeout must be a positive number of seconds or None, got {self.load_timeout!r}"
            )
        if self.compare not in COMPARE_MODES:
            raise ValueError(f"compare must be one of {COMPARE_MODES}, got {self.compare!r}")
        if self.runner not in RUNNERS:
            raise ValueError(f"runner must be one of {RUNNERS}, got {self.runner!r}")
        if self.runner == "pytest" and not all(isinstance(c, str) for c in self.cases):
            raise ValueError("a pytest suite's cases are test ids (str), not IOTest")

    @classmethod
    def of(cls, tests: TestSuite | Sequence[Test]) -> TestSuite:
        if isinstance(tests, TestSuite):
            return tests
        if isinstance(tests, (str, IOTest)):
            raise TypeError("tests must be a list of tests (assert strings or IOTest), not a single test")
        return cls(cases=tuple(tests))

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Test]:
        return iter(self.cases)

    def __getitem__(self, k: int | slice) -> Test | tuple[Test, ...]:
        return self.cases[k]


class Program(str):
    """A program's text that starts with a `prelude` (a benchmark's header, e.g. LiveCodeBench's imports).

    It is the whole text as a str (``prelude + code``); the executor runs the prelude, compiled on its own, in the
    program's module before the code, so the line numbers of the program's own tracebacks are its own.
    """

    prelude: str

    def __new__(cls, code: str, prelude: str = "") -> Program:
        self = super().__new__(cls, prelude + code)
        self.prelude = prelude
        return self

    def __reduce__(self):
        return Program, (str(self)[len(self.prelude) :], self.prelude)

    @staticmethod
    def split(program: str) -> tuple[str, str]:
        """(prelude, code) of a program (a plain str has no prelude)."""
        prelude = getattr(program, "prelude", "") if type(program) is Program else ""
        return prelude, str(program)[len(prelude) :]


def _has_code(source: str) -> bool:
    """Whether test source holds a statement (not only blank lines and comments)."""
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


@dataclass
class TestOutcome:
    """What happened to one test: `status` is one of passed/failed/error/timeout/memory/exit/crashed/output/syntax/too_large."""

    test: Test
    status: str
    detail: str = ""  # actual value, exception text, or what stopped the test
    assertion: str = ""  # the assert that failed when it is not the test itself (inside a check function)
    got: str = ""  # IO tests: the program's stdout

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class ExecutionResult:
    """The verdict for one (program, tests) job. `reward` = passed / total, the paper's r(v)."""

    reward: float
    passed: int
    total: int
    # passed | failed | error | timeout | memory | exit | crashed | output | syntax | too_large | no_tests
    status: str
    feedback: str = ""  # the text quoted in the next turn's refinement prompt, f(v)
    outcomes: list[TestOutcome] = field(default_factory=list)
    runtime_s: float = 0.0

    @property
    def solved(self) -> bool:
        return self.total > 0 and self.passed == self.total
