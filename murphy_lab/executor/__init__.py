"""Sandboxed, fast, faithful execution of untrusted programs against tests: the reward r(v) and feedback f(v).

    from murphy_lab.executor import Executor
    with Executor(timeout=2, memory_mb=1024, workers=2) as ex:
        res = ex.run("def f(x):\\n    return x * 2", ["assert f(2) == 4", "assert f(3) == 7"])
        res.reward, res.status, res.feedback   # 0.5, 'failed', 'Tests failed:\\nassert f(3) == 7  # output: 6'

Modules: `types` (IOTest, TestSuite, TestOutcome, ExecutionResult), `pool` (Executor: the parent side),
`worker` (the warm worker and the per-test sandbox), `harness` (what runs inside the sandbox: loading, the
tamper-proof assert checks), `feedback` (every text a model reads).

What is covered (each has a test in tests/test_executor_*.py):
  - infinite loops and sleeps (per-test wall-clock timeout; one loop costs one test), CPU limit as a backstop;
  - memory bombs (RLIMIT_AS; status `memory`);
  - fork bombs, stray children, grandchildren and `setsid` daemons (per-uid process limit as root; the worker is
    a child subreaper and kills every descendant after each test; nothing survives the call);
  - `sys.exit(0)`, `os._exit(0)`, `raise SystemExit`, `KeyboardInterrupt` before or during a test (a pass is a
    verdict the harness writes after the test ran, with a per-test nonce; never an exit code);
  - objects whose `__eq__`/`__ne__`/`__hash__`/`__bool__` lie, builtin subclasses overriding operators,
    `__class__` spoofing `isinstance` (asserts are rewritten to compare plain builtin values; comparisons,
    arithmetic and call results inside an assert are reduced the same way);
  - monkeypatching builtins or the program's globals (tests run with a builtins snapshot, in their own namespace);
  - a program killing its parent or the worker (as root it cannot: it runs as another uid; otherwise the dead
    worker is replaced and the job reported as `crashed`; every job still gets a result);
  - huge stdout/stderr (sent to /dev/null for assert tests; a capped file for IO tests; RLIMIT_FSIZE);
  - reading stdin when no input is given (stdin is /dev/null: EOFError, no hang);
  - writing files outside the private temp dir (as root: another uid cannot write the caller's files, and /tmp,
    /var/tmp, /dev/shm are private tmpfs mounts of the worker, emptied after every test);
  - reading the harness's environment (the environment is cleared; workers start with an empty one);
  - network access (a fresh network namespace with no interfaces up);
  - deep recursion and C-stack overflow (RecursionError is an `error`; a segfault is `crashed` with its signal).

What is not covered:
  - a program that deliberately inspects the harness's own frames or memory (gc, sys._getframe) can find the
    nonce and forge a verdict, or patch a stdlib module the test itself uses (e.g. `math.isclose`): the program
    and the checking code share one interpreter. The defence is against the tricks a policy can stumble into,
    not against an attacker targeting this harness. Nor is it a kernel sandbox (no seccomp): use a VM/container
    boundary for hostile code.
  - As a normal user (no root): no private uid, so a program can signal the caller's other processes (including
    the parent notebook); network and private /tmp need unprivileged user namespaces (a warning says when absent).
  - Objects of a class the program defines compare with their own `__eq__` only against the same class; values
    of third-party classes (e.g. numpy) are trusted when their module really exports the class.
"""

from murphy_lab.executor.pool import Executor
from murphy_lab.executor.types import ExecutionResult, IOTest, TestOutcome, TestSuite

__all__ = ["Executor", "ExecutionResult", "IOTest", "TestOutcome", "TestSuite", "execute"]

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
