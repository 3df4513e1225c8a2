"""Running toy programs: the project's real Executor when it is available, a minimal in-process stand-in otherwise.

The SFT corpus quotes executor feedback, so its feedback must come from the same executor the RL loop and the
evaluation use (otherwise the formats drift and the base model cannot read its own feedback). `get_executor()`
returns `murphy_lab.executor.Executor` whenever that package exports it; the stand-in below only exists so that the
toy world can be developed and tested before (or without) the real one. It is NOT a sandbox: it `exec`s the program
in this process under an alarm, which is acceptable only for the toy world's own short programs.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence

from murphy_lab.executor.types import ExecutionResult, TestOutcome, TestSuite


def get_executor(workers: int = 2, timeout: float = 2.0):
    """The real `murphy_lab.executor.Executor` if it can be imported, else the in-process `StandInExecutor`."""
    try:
        from murphy_lab.executor import Executor
    except ImportError:
        return StandInExecutor(timeout=timeout)
    return Executor(timeout=timeout, workers=workers)


class StandInExecutor:
    """Reflexion-style feedback (`assert f(0) == 12  # output: 7`), in process, no isolation (toy programs only)."""

    def __init__(self, timeout: float = 2.0) -> None:
        self.timeout = timeout

    def run_many(self, jobs: Sequence[tuple[str, object]]) -> list[ExecutionResult]:
        return [self.run(p, t) for p, t in jobs]

    def run(self, program: str, tests) -> ExecutionResult:
        suite = TestSuite.of(tests)
        try:
            # as plain Python: no __future__ of ours
            code = compile(program, "solution.py", "exec", dont_inherit=True)
        except SyntaxError as e:
            fb = f"The program does not compile:\nSyntaxError: {e.msg} (line {e.lineno})"
            return ExecutionResult(0.0, 0, len(suite), "syntax", fb)
        outcomes, lines = [], []
        for test in suite.cases:
            env: dict = {}
            try:
                with _alarm(self.timeout):
                    exec(code, env)
                    exec(compile(suite.setup, "setup.py", "exec", dont_inherit=True), env)
                    exec(compile(test, "test.py", "exec", dont_inherit=True), env)
                outcomes.append(TestOutcome(test, "passed"))
            except AssertionError as e:
                shown, value = _failing_assert(e, suite.setup, test, env)
                via = f"  (via: {test})" if shown != test else ""
                outcomes.append(TestOutcome(test, "failed", value))
                lines.append(f"{shown}  # output: {value}{via}")
            except Exception as e:  # noqa: BLE001 - the program's own error is the verdict
                outcomes.append(TestOutcome(test, "error", f"{type(e).__name__}: {e}"))
                lines.append(f"{test}  # error: {type(e).__name__}: {e}")
        passed, total = sum(o.passed for o in outcomes), len(outcomes)
        status = (
            "passed"
            if passed == total
            else ("error" if any(o.status == "error" for o in outcomes) else "failed")
        )
        fb = "Tests failed:\n" + "\n".join(lines) if lines else "All tests passed."
        return ExecutionResult(passed / total if total else 0.0, passed, total, status, fb, outcomes)


def _failing_assert(e: AssertionError, setup: str, test: str, env: dict) -> tuple[str, str]:
    """(the failing assert's source, the value of its left-hand side), looking inside setup helpers."""
    import ast
    import traceback

    src = test
    frames = traceback.extract_tb(e.__traceback__)
    if frames and frames[-1].filename == "setup.py":
        src = setup.splitlines()[frames[-1].lineno - 1].strip()
    try:
        node = ast.parse(src).body[0].test
        left = node.left if isinstance(node, ast.Compare) else node
        local = {"f": env.get("f")}
        return src, repr(eval(compile(ast.Expression(left), "<lhs>", "eval", dont_inherit=True), env, local))  # noqa: S307
    except Exception as err:  # noqa: BLE001
        return src, type(err).__name__


class _alarm:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self):
        def _raise(*_):
            raise TimeoutError

        self.old = signal.signal(signal.SIGALRM, _raise)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.old)
        return False
