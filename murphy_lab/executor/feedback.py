"""Every text the executor writes for a model to read: the one place its formats live (prompts quote them).

A failed job's feedback is a header and one block per failed test (at most `MAX_SHOWN`), in the test order:

    Tests failed:
    assert f(2) == 7  # output: 5                               a failed assert (Reflexion/DoT style)
    assert f(0) == 1  # error: ZeroDivisionError: division by zero
      Traceback (most recent call last):                        the exception, harness frames removed,
        File "solution.py", line 2, in f                        last 3 frames, indented by two spaces
          return 1 / x
      ZeroDivisionError: division by zero
    assert g() == 1  # timeout: took longer than 2 s            one text per way a test can be stopped
    assert g() == 1  # memory limit: used more than 1024 MB
    assert g() == 1  # exited early: the program ended the process before the test finished (exit code 0)
    assert g() == 1  # crashed: killed by SIGSEGV (e.g. a C-stack overflow from deep recursion)
    assert g() == 1  # output limit: wrote more than 1024 KB
    assert g() == 1  # too large: the program is 600,000 bytes; the limit is 524,288 bytes

When the failing assert sits inside a helper (HumanEval's ``check(candidate)``), the line shows the failing
assert itself, and the test that called it follows after `via:`:  ``assert candidate(3) == 2  # output: 1  (via:
check(f))``.

IO tests (LiveCodeBench style; every value cut to `MAX_CHARS` characters):

    Wrong Answer                      Time Limit Exceeded (2 s)     Runtime Error
    Input:                            Input:                        Input:
    1 2                               1 2                           1 2
    Expected:                                                       <exception / traceback>
    3
    Got:
    4

A program that does not compile gets ``The program does not compile:`` and the SyntaxError with its line; one
that passes everything gets ``All tests passed.``.
"""

from __future__ import annotations

from murphy_lab.executor.types import IOTest, TestOutcome

MAX_CHARS = 300  # each quoted value (input, expected, got, output) is cut to this many characters
MAX_SHOWN = 5  # failed tests shown; the rest are counted
HEADER = "Tests failed:"
ALL_PASSED = "All tests passed."
NO_TESTS = "(no tests)"
SYNTAX = "The program does not compile:"

CRASH_HINTS = {
    "SIGSEGV": " (e.g. a C-stack overflow from deep recursion)",
    "SIGKILL": " (killed from outside)",
    "SIGABRT": " (aborted)",
}


def valid_text(text: str) -> str:
    """`text` as valid UTF-8: a lone surrogate (a program's exception text may hold one) becomes its escape
    (``\\udc80``), so that feedback, outcomes and the prompts quoting them always encode."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """`text` cut to `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more characters)"


def tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text` (a traceback ends with what went wrong), marking the cut."""
    return text if len(text) <= limit else f"({len(text) - limit} earlier characters) ..." + text[-limit:]


def stop_text(status: str, detail: str, timeout: float, memory_mb: int) -> str:
    """The short reason a test did not finish (used after `# ` on an assert line)."""
    if status == "timeout":
        return f"timeout: took longer than {timeout:g} s"
    if status == "memory":
        return f"memory limit: used more than {memory_mb} MB"
    if status == "exit":
        code = f" (exit code {detail})" if detail else ""
        return f"exited early: the program ended the process before the test finished{code}"
    if status == "crashed":
        return f"crashed: killed by {detail}{CRASH_HINTS.get(detail, '')}"
    if status == "output":
        return f"output limit: wrote more than {detail} KB"
    if status == "too_large":
        return f"too large: {detail}"
    return status


def assert_line(o: TestOutcome, timeout: float, memory_mb: int) -> str:
    """One failed assert-style test as feedback lines."""
    test = str(o.test).strip()
    shown = o.assertion if o.assertion and o.assertion != test and not o.assertion.startswith("(") else test
    via = f"  (via: {cut(test, 120)})" if shown != test else ""
    if o.status == "failed":
        return f"{cut(shown, 2 * MAX_CHARS)}  # output: {cut(o.detail)}{via}"
    if o.status == "error":
        where = "  (while loading the program)" if o.assertion.startswith("(loading") else via
        lines = o.detail.strip().splitlines()
        head = lines[-1] if lines else "error"
        tb = "\n".join("  " + ln for ln in lines[:-1] + [head]) if len(lines) > 1 else ""
        return f"{cut(shown, 2 * MAX_CHARS)}  # error: {cut(head)}{where}" + (f"\n{tb}" if tb else "")
    return f"{cut(shown, 2 * MAX_CHARS)}  # {stop_text(o.status, o.detail, timeout, memory_mb)}"


def io_block(o: TestOutcome, timeout: float, memory_mb: int) -> str:
    """One failed IO test as a LiveCodeBench-style block."""
    t: IOTest = o.test  # type: ignore[assignment]
    if o.status == "failed":
        return (
            f"Wrong Answer\nInput:\n{cut(t.input.rstrip())}\nExpected:\n{cut(t.output.rstrip())}\n"
            f"Got:\n{cut(o.got.rstrip())}"
        )
    if o.status == "timeout":
        return f"Time Limit Exceeded ({timeout:g} s)\nInput:\n{cut(t.input.rstrip())}"
    if o.status == "memory":
        return f"Memory Limit Exceeded ({memory_mb} MB)\nInput:\n{cut(t.input.rstrip())}"
    if o.status == "output":
        return f"Output Limit Exceeded ({o.detail} KB)\nInput:\n{cut(t.input.rstrip())}"
    if o.status == "error":  # the end of the program's stderr: its traceback
        return f"Runtime Error\nInput:\n{cut(t.input.rstrip())}\n{tail(o.detail, 3 * MAX_CHARS)}"
    return (
        f"Runtime Error\nInput:\n{cut(t.input.rstrip())}\n{stop_text(o.status, o.detail, timeout, memory_mb)}"
    )


def render(outcomes: list[TestOutcome], timeout: float, memory_mb: int) -> str:
    """The feedback text for a whole job: what the next turn's refinement prompt quotes."""
    if not outcomes:
        return NO_TESTS
    failed = [o for o in outcomes if not o.passed]
    if not failed:
        return ALL_PASSED
    if failed[0].status == "syntax":
        return f"{SYNTAX}\n{failed[0].detail.strip()}"
    blocks = [
        io_block(o, timeout, memory_mb) if isinstance(o.test, IOTest) else assert_line(o, timeout, memory_mb)
        for o in failed[:MAX_SHOWN]
    ]
    more = f"\n... and {len(failed) - MAX_SHOWN} more failed tests" if len(failed) > MAX_SHOWN else ""
    sep = "\n\n" if any(isinstance(o.test, IOTest) for o in failed[:MAX_SHOWN]) else "\n"
    return HEADER + "\n" + sep.join(blocks) + more
