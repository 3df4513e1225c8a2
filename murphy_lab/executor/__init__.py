"""Sandboxed, fast, faithful execution of untrusted programs against tests: the reward r(v) and feedback f(v).

    from murphy_lab.executor import Executor
    with Executor(timeout=2, memory_mb=1024, workers=2) as ex:
        res = ex.run("def f(x):\\n    return x * 2", ["assert f(2) == 4", "assert f(3) == 7"])
        res.reward, res.status, res.feedback   # 0.5, 'failed', 'Tests failed:\\nassert f(3) == 7  # output: 6'

Modules, one idea each (docs/executor.md, "The modules"): `types` (IOTest, TestSuite, Program, TestOutcome,
ExecutionResult), `pool` (Executor: the parent side), `feedback` (every text a model reads); in the test worker:
`worker` (holds the tests and runs them), `timer` (the wall-clock limit of test code), `testcode` (test code
compiled, the names it takes from the program), `harness` (running cases, the verdicts), `channel` (the test side
of a program process: requests, replies checked), `standin` (the stand-ins of program objects, which answer for
themselves), `io_compare` (an IO test's stdout); between the two: `protocol` (what the worker hands the server),
`wire` with `wire_format`, `wire_encode`, `wire_decode`, `wire_libraries` and `values` (the only thing between a
test and its program: plain data in a bounded binary format); in the program
server: `server` (forks the program processes, never sees a test), `program` (the program process: loads and
serves the program, or runs it as a script), `sandbox` with `sandbox_root`, `sandbox_seccomp`, `sandbox_cgroups`
and `sandbox_cleanup` (namespaces, the allow-list root, the syscall filter, cgroups, cleanup after each job).

The verdict cannot be spoken, reached or named by the program, by construction: the test code, the expected values
and the comparison live in a process that never executes program code; the program process sends no status word
(statuses come from the test worker, the kernel's wait status and the worker's timer); only plain data crosses,
rebuilt by the receiver's own constructors and decoded under bounds, and the test side serves nothing (the
program's other objects stay where they are, answering for themselves from their own process, and are never equal
to, nor ordered against, the test's own data); the test namespace is declared (builtins cannot be shadowed, no name
the program chose reaches an import). The sandbox (as root) hides
benchmark data, the repository and dataset caches from programs, gives each program process its own IPC
namespace, private world-writable directories, cgroups and a seccomp filter against nested user namespaces, and
a bad job fails alone. docs/executor.md has the threat model: what holds by construction, what by the sandbox,
and what does not (as a normal user there is no private uid; no VM boundary).
"""

from murphy_lab.executor.pool import Executor
from murphy_lab.executor.types import ExecutionResult, IOTest, Program, TestOutcome, TestSuite

__all__ = ["Executor", "ExecutionResult", "IOTest", "Program", "TestOutcome", "TestSuite", "execute"]

_default: Executor | None = None


def execute(program: str, tests, **kwargs) -> ExecutionResult:
    """Run one program with a shared default `Executor` (created on first use; kwargs configure a fresh one)."""
    global _default
    if kwargs:
        with Executor(**kwargs) as ex:
            return ex.run(program, tests)
    if _default is None:
        _default = Executor()
    return _default.run(program, tests)
