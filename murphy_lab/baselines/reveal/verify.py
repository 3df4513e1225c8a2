"""The tool of a ReVeal round: validate the model's own tests, run its program on them, write <tool-feedback>.

ReVeal §3.1: the test cases the model writes in its verification turn are first run against the task's reference
("gold") solution; a test the reference fails is *invalid* (its expected value is wrong) and is reported as such,
not run. The candidate program is then run on the valid tests, and the feedback lists runtime errors, invalid
tests, expected vs actual output and pass/fail per test. In training the candidate is also run on the oracle tests
(the task's hidden tests), which the model never sees; they define the rewards (rewards.py).

Where the paper is silent, our choices:
  - no reference solution (LiveCodeBench ships none; at evaluation time we never use one): tests are run unvalidated;
  - a test that does not compile is invalid; a test that the reference *times out* on is invalid too;
  - all of it is ONE executor batch per round for all chains: (reference, tests), (candidate, tests), (candidate,
    oracle tests) per chain; every test runs in its own namespace, so validity and verdicts are per test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from murphy_lab.executor.feedback import cut
from murphy_lab.executor.types import IOTest, TestOutcome


@dataclass
class Check:
    """The tool's verdict on one round (one candidate program and the tests written beside it)."""

    tests: list = field(default_factory=list)  # the model's test cases (assert strings or IOTests)
    valid: list[bool] = field(default_factory=list)  # tests[j] passes the reference (True when there is none)
    # the candidate on tests[j]: passed / failed / error / ...
    status: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # actual output or error of the candidate on tests[j]
    compile_error: str = ""  # the candidate does not compile
    oracle: float | None = None  # h_t: pass rate on the oracle (hidden) tests; None at evaluation time
    oracle_total: int = 0
    feedback: str = ""  # the <tool-feedback> text

    @property
    def n_valid(self) -> int:
        return sum(self.valid)

    @property
    def n_passed(self) -> int:
        """Valid tests the candidate passes."""
        return sum(v and s == "passed" for v, s in zip(self.valid, self.status))

    @property
    def verdict(self) -> bool:
        """The self-verification verdict: at least one valid test and the candidate passes every valid test."""
        return self.n_valid > 0 and self.n_passed == self.n_valid

    @property
    def solved(self) -> bool | None:
        """The oracle verdict: the candidate passes every oracle test (None without oracle tests)."""
        return None if self.oracle is None else (self.oracle >= 1.0 and self.oracle_total > 0)


def check_rounds(
    items: list[tuple[str, list, str | None, Any]],
    executor: Any,
    format_issues: list[list[str]] | None = None,
) -> list[Check]:
    """Check many rounds in ONE executor batch.

    Args:
        items: per round (candidate program, its tests, reference program or None, oracle TestSuite or None).
        executor: anything with `run_many([(program, tests), ...])` (murphy_lab.executor.Executor).
        format_issues: per round, the parser's issues to mention in the feedback (optional).
    Returns: one `Check` per item, feedback filled in.
    """
    jobs, where = [], []
    for i, (program, tests, reference, oracle) in enumerate(items):
        if tests and reference is not None:
            where.append((i, "reference"))
            jobs.append((reference, list(tests)))
        if tests:
            where.append((i, "candidate"))
            jobs.append((program, list(tests)))
        if oracle is not None:
            where.append((i, "oracle"))
            jobs.append((program, oracle))
    results = executor.run_many(jobs) if jobs else []
    if len(results) != len(jobs):
        raise ValueError(f"executor returned {len(results)} results for {len(jobs)} jobs")
    got: dict[tuple[int, str], Any] = {key: res for key, res in zip(where, results)}
    checks = []
    for i, (_, tests, reference, _) in enumerate(items):
        c = Check(tests=list(tests))
        ref = got.get((i, "reference"))
        c.valid = [o.passed for o in _outcomes(ref, len(tests))] if ref is not None else [True] * len(tests)
        cand = got.get((i, "candidate"))
        outs = _outcomes(cand, len(tests)) if cand is not None else []
        c.status = [o.status for o in outs]
        c.details = [o.got if isinstance(o.test, IOTest) and o.status == "failed" else o.detail for o in outs]
        if cand is not None and cand.status == "syntax":
            c.compile_error = outs[0].detail if outs else "syntax error"
        orc = got.get((i, "oracle"))
        if orc is not None:
            c.oracle, c.oracle_total = float(orc.reward), int(orc.total)
            if orc.status == "syntax" and not c.compile_error:
                c.compile_error = orc.outcomes[0].detail if orc.outcomes else "syntax error"
        c.feedback = tool_feedback(
            c, (format_issues or [[]] * len(items))[i], validated=reference is not None
        )
        checks.append(c)
    return checks


def _outcomes(result: Any, n: int) -> list:
    outs = list(getattr(result, "outcomes", []) or [])
    if len(outs) != n:  # a whole-job failure (crashed worker, no outcomes): every test gets the job's status
        outs = [
            TestOutcome(
                test="", status=getattr(result, "status", "error"), detail=getattr(result, "feedback", "")
            )
            for _ in range(n)
        ]
    return outs


def _short(detail: str) -> str:
    """The last line of an error (the exception), cut."""
    lines = [ln for ln in (detail or "").strip().split("\n") if ln.strip()]
    return cut(lines[-1].strip() if lines else "", 200)


def tool_feedback(c: Check, issues: list[str] = (), validated: bool = True) -> str:
    """The <tool-feedback> text of one round (see the module docstring)."""
    lines = [f"Format: {i}." for i in issues]
    if c.compile_error:
        lines.append("Your program does not compile:\n" + cut(c.compile_error, 400))
    if not c.tests:
        lines.append("No test cases were found in <verification-answer>, so nothing was run.")
        return "\n".join(lines)
    invalid = [t for t, v in zip(c.tests, c.valid) if not v]
    if invalid:
        lines.append(
            f"Invalid test cases (the reference solution fails them; they were not run): {len(invalid)}"
        )
        lines += ["  " + _show(t) for t in invalid]
    if not validated:
        lines.append("(The test cases could not be checked against a reference solution.)")
    for j, (t, v) in enumerate(zip(c.tests, c.valid)):
        if not v:
            continue
        status, detail = c.status[j], c.details[j]
        if isinstance(t, IOTest):
            head = f"Test {j + 1}: {status}\nInput:\n{cut(t.input.rstrip())}\nExpected:\n{cut(t.output.rstrip())}"
            tail = (
                f"\nGot:\n{cut(detail.rstrip())}"
                if status == "failed"
                else (f"\nError: {_short(detail)}" if status != "passed" else "")
            )
            lines.append(head + tail)
        elif status == "passed":
            lines.append(f"Test {j + 1}: passed  {cut(t, 200)}")
        elif status == "failed":
            lines.append(f"Test {j + 1}: failed  {cut(t, 200)}  # actual: {cut(detail, 200)}")
        elif not c.compile_error:
            lines.append(f"Test {j + 1}: {status}  {cut(t, 200)}  # {_short(detail)}")
    lines.append(f"Passed {c.n_passed} of {c.n_valid} valid test cases.")
    return "\n".join(lines)


def _show(t: Any) -> str:
    if isinstance(t, IOTest):
        return f"Input: {cut(t.input.strip(), 100)!r} Expected: {cut(t.output.strip(), 100)!r}"
    return cut(str(t), 200)
