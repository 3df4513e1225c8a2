"""The executor's threat model: one test per trick a generated program can play (murphy_lab/executor docstring)."""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="private uid and private /tmp need root")


@pytest.fixture(scope="module")
def ex():
    with Executor(workers=2, timeout=1.0, memory_mb=256) as e:  # own: tests time out at 1 s, bombs hit 256 MB
        yield e


@pytest.fixture(scope="module")
def roomy():
    """For tests whose program does real work before the limit hits (robust on a loaded machine)."""
    with Executor(workers=1, timeout=10.0, memory_mb=256) as e:
        yield e


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def descendants(pids: list[int]) -> list[int]:
    """Every live process below `pids` (from /proc, so daemons that called setsid are included)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
                parent[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = [], set(pids)
    while frontier:
        kids = {p for p, pp in parent.items() if pp in frontier}
        found += kids
        frontier = kids
    return [p for p in found if p not in pids]


def worker_pids(e: Executor) -> list[int]:
    """The test workers and their program servers (the program processes are the servers' children; a server in
    its own PID namespace is the child the started process forked, PID 1 there)."""
    servers = [s.server.pid for s in e._slots]
    inner = [int(k) for s in servers for k in Path(f"/proc/{s}/task/{s}/children").read_text().split()]
    return [s.proc.pid for s in e._slots] + servers + inner


# --- time ------------------------------------------------------------------------------------------------------
def test_infinite_loop_costs_one_test_not_all(ex):
    p = prog("""
        def f(x):
            while x == 0:
                pass
            return x
    """)
    res = ex.run(p, ["assert f(0) == 0", "assert f(1) == 1", "assert f(2) == 2"])
    assert (res.passed, res.status) == (2, "timeout") and "timeout: took longer than 1 s" in res.feedback


def test_sleep_is_stopped_by_the_wall_clock_timeout(ex):
    t0 = time.monotonic()
    res = ex.run("import time\ntime.sleep(60)\n", ["assert True"])
    assert res.status == "timeout" and time.monotonic() - t0 < 5


# --- memory ----------------------------------------------------------------------------------------------------
def test_memory_bomb_gets_status_memory(roomy):
    res = roomy.run("def f():\n    x = []\n    while True:\n        x.append(' ' * 10**7)\n", ["f()"])
    assert res.status == "memory" and "memory limit: used more than 256 MB" in res.feedback


# --- processes -------------------------------------------------------------------------------------------------
def test_fork_bomb_is_contained_and_nothing_survives(ex):
    p = prog("""
        import os
        def f():
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
    """)
    res = ex.run(p, ["f()"])
    assert res.passed == 0 and descendants(worker_pids(ex)) == []


def test_setsid_daemons_and_grandchildren_do_not_survive_the_call(ex):
    p = prog("""
        import os, subprocess, time
        def f():
            subprocess.Popen(["sleep", "987.654"], start_new_session=True)  # a daemon
            if os.fork() == 0:                                               # a double-forked grandchild
                os.setsid()
                if os.fork() == 0:
                    time.sleep(987.654)
                os._exit(0)
            return 1
    """)
    res = ex.run(p, ["assert f() == 1"])
    assert res.solved
    time.sleep(0.05)
    survivors = [d for d in os.listdir("/proc") if d.isdigit() and "987.654" in _cmdline(d)]
    assert survivors == [] and descendants(worker_pids(ex)) == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


# --- exits are never passes ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "trick",
    [
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "raise SystemExit\n",
        "raise KeyboardInterrupt\n",
        "def f():\n    import os\n    os._exit(0)\n",
        "def f():\n    raise SystemExit(0)\n",
        "def f():\n    import sys\n    sys.exit()\n",
    ],
)
def test_exit_before_or_during_the_tests_is_never_a_pass(ex, trick):
    res = ex.run(trick, ["assert f() == 1"])
    assert res.passed == 0 and res.status in ("exit", "error")


def test_writing_a_fake_verdict_to_the_verdict_pipe_does_not_pass(ex):
    p = prog("""
        import os, json
        for fd in range(3, 20):
            try:
                os.write(fd, json.dumps({"status": "passed"}).encode())
            except OSError:
                pass
        os._exit(0)
    """)
    assert ex.run(p, ["assert f() == 1"]).passed == 0


# --- lying objects ---------------------------------------------------------------------------------------------
ALWAYS_EQUAL = prog("""
    class AlwaysEqual:
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        def __hash__(self): return 0
        def __bool__(self): return True
        def __lt__(self, other): return True
        def __sub__(self, other): return 0
        def __rsub__(self, other): return 0
        def __abs__(self): return 0
""")


@pytest.mark.parametrize(
    "test",
    [
        "assert f() == 7",
        "assert 7 == f()",
        "assert not f() != 7",
        "assert f() in [7]",
        "assert [f()] == [7]",
        "assert {f(): 1} == {7: 1}",
        "assert f() >= 7 and f() <= 7",
        "assert abs(f() - 7) < 1e-6",
        "assert 0 <= f() == 7",
    ],
)
def test_an_always_equal_object_passes_nothing(ex, test):
    assert ex.run(ALWAYS_EQUAL + "def f():\n    return AlwaysEqual()\n", [test]).passed == 0


def test_always_equal_fails_inside_humaneval_check_too(ex):
    suite = TestSuite(cases=("check(f)",), setup="def check(candidate):\n    assert candidate() == 7\n")
    assert ex.run(ALWAYS_EQUAL + "def f():\n    return AlwaysEqual()\n", suite).passed == 0


@pytest.mark.parametrize(
    "base, value, test",
    [
        ("int", "5", "assert f() == 7"),
        ("str", "'a'", "assert f() == 'b'"),
        ("float", "0.0", "assert abs(f() - 0.5) < 1e-6"),
        ("list", "[]", "assert f() == [1]"),
    ],
)
def test_builtin_subclasses_that_override_operators_cannot_lie(ex, base, value, test):
    p = prog(f"""
        class Liar({base}):
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            def __sub__(self, other): return 0.5 - 0.5
            def __lt__(self, other): return True
        def f():
            return Liar({value})
    """)
    assert ex.run(p, [test]).passed == 0


def test_class_attribute_spoofing_does_not_fool_isinstance(ex):
    p = "class Fake:\n    __class__ = property(lambda self: int)\ndef f():\n    return Fake()\n"
    assert ex.run(p, ["assert isinstance(f(), int)"]).passed == 0


# --- monkeypatching ----------------------------------------------------------------------------------------------
def test_monkeypatched_builtins_do_not_reach_the_tests(ex):
    p = prog("""
        import builtins
        builtins.len = lambda x: 3
        builtins.sorted = lambda x, **k: [1, 2, 3]
        builtins.AssertionError = ZeroDivisionError
        def f():
            return [9]
    """)
    res = ex.run(p, ["assert len(f()) == 3", "assert sorted(f()) == [1, 2, 3]"])
    assert res.passed == 0 and res.status == "failed"


def test_program_cannot_replace_the_tests_own_check_function(ex):
    p = "def check(candidate):\n    pass\ndef f():\n    return 1\n"
    suite = TestSuite(cases=("check(f)",), setup="def check(candidate):\n    assert candidate() == 2\n")
    assert ex.run(p, suite).passed == 0


def test_rebinding_globals_during_the_call_does_not_change_the_test(ex):
    p = "def f():\n    globals()['expected'] = 1\n    globals()['__murphy_check__'] = None\n    return 1\n"
    suite = TestSuite(cases=("assert f() == expected",), setup="expected = 2\n")
    assert ex.run(p, suite).passed == 0


def test_a_trace_hook_that_skips_lines_reaches_no_test_line(ex):
    # in one process it could jump over the failing assert; the test lines run in another process
    p = prog("""
        import sys
        def skip(frame, event, arg):
            if event == "line" and frame.f_back is not None:
                try:
                    frame.f_lineno = frame.f_lineno + 1
                except ValueError:
                    pass
            return skip
        def f():
            sys.settrace(skip)
            sys._getframe().f_trace = skip
            return 1
    """)
    assert ex.run(p, ["assert f() == 2\nassert f() == 2"]).passed == 0


# --- killing the parent ------------------------------------------------------------------------------------------
def test_killing_the_parent_still_gives_a_result_for_every_job():
    killer = (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.killpg(os.getpgid(os.getppid()), 9)\n"
    )
    ok = "def f():\n    return 1\n"
    with Executor(workers=2, timeout=0.5, drop_user=False) as e:  # as root with a private uid it cannot
        # 20 killers: one that outlives its server long enough to send its names must still not pass (it did in
        # 4 runs of 4 before a dead server voided the job's verdicts)
        res = e.run_many([(ok, ["assert f() == 1"]), (killer, ["assert True"])] * 20)
        assert len(res) == 40 and all(r.solved for r in res[0::2]) and not any(r.solved for r in res[1::2])
        assert e.run(ok, ["assert f() == 1"]).solved


# --- output, input, files, environment, network -----------------------------------------------------------------
def test_huge_stdout_and_stderr_do_not_break_an_assert_test(roomy):
    p = (
        "import sys\ndef f():\n    for _ in range(20):\n        print('x' * 10**6)\n"
        "        sys.stderr.write('y' * 10**6)\n    return 1\n"
    )
    assert roomy.run(p, ["assert f() == 1"]).solved


def test_huge_stdout_in_an_io_test_hits_the_output_limit():
    with Executor(workers=1, timeout=2, output_kb=64) as e:  # own: its output limit
        res = e.run("print('x' * 10**6)\n", [IOTest("", "x")])
    assert res.status == "output" and "Output Limit Exceeded (64 KB)" in res.feedback


def test_reading_stdin_without_input_fails_fast(ex):
    res = ex.run("def f():\n    return input()\n", ["assert f() == ''"])
    assert res.status == "error" and "EOFError" in res.feedback


@needs_root
def test_files_outside_the_private_temp_dir_are_not_written(ex, tmp_path):
    target = tmp_path / "owned.txt"
    shared = Path("/tmp") / f"murphy-escape-{os.getpid()}.txt"
    p = prog(f"""
        def f():
            for path in ({str(target)!r}, {str(shared)!r}):
                try:
                    open(path, "w").write("x")
                except OSError:
                    pass
            open("mine.txt", "w").write("ok")
            return open("mine.txt").read()
    """)
    assert ex.run(p, ["assert f() == 'ok'"]).solved
    assert not target.exists() and not shared.exists()


def test_files_left_in_tmp_do_not_reach_the_next_program(executor):
    write = "def f():\n    for d in ('/tmp', '/dev/shm'):\n        open(d + '/leak.txt', 'w').write('x')\n    return 1\n"
    read = "import os\ndef f():\n    return [os.path.exists(d + '/leak.txt') for d in ('/tmp', '/dev/shm')]\n"
    e = executor  # the session's: one slot, so the reader runs where the writer ran
    if not e.run("", ["assert True"]).solved or not e.isolation.get("private_tmp"):
        pytest.skip("no private /tmp on this machine")
    res = e.run_many([(write, ["assert f() == 1"]), (read, ["assert f() == [False, False]"])])
    assert [r.solved for r in res] == [True, True], res[1].feedback


def test_the_callers_environment_is_not_visible(ex, monkeypatch):
    monkeypatch.setenv("MURPHY_SECRET", "s3cr3t-value")
    with Executor(workers=1, timeout=1) as e:  # started after the secret was set
        p = prog("""
            import os
            def f():
                seen = "s3cr3t-value" in str(dict(os.environ))
                for pid in os.listdir("/proc"):
                    try:
                        seen |= b"s3cr3t-value" in open(f"/proc/{pid}/environ", "rb").read()
                    except OSError:
                        pass
                return seen
        """)
        res = e.run(p, ["assert f() is False"])
    assert res.solved, res.feedback


def test_network_is_unreachable(ex):
    if not ex.run("", ["assert True"]).solved or not ex.isolation.get("network"):
        pytest.skip("no network namespace on this machine")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    p = prog(f"""
        import socket
        def f():
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=0.3)
                return "connected"
            except OSError:
                return "blocked"
    """)
    try:
        assert ex.run(p, ["assert f() == 'blocked'"]).solved
    finally:
        server.close()


# --- recursion ---------------------------------------------------------------------------------------------------
def test_deep_recursion_is_an_error_with_its_name(ex):
    res = ex.run("def f(n):\n    return f(n + 1)\n", ["assert f(0) == 1"])
    assert res.status == "error" and "RecursionError" in res.feedback


def test_c_stack_overflow_is_a_crash_not_a_hang():
    p = prog("""
        import sys
        sys.setrecursionlimit(10**8)
        def nested():
            t = ()
            for _ in range(10**6):
                t = (t,)
            return t
        def f():
            return nested() == nested()
    """)
    with Executor(workers=1, timeout=5, memory_mb=1024) as e:  # own: a crash
        res = e.run(p, ["assert f()"])
    assert res.status == "crashed" and "SIGSEGV" in res.feedback


# --- as a normal user --------------------------------------------------------------------------------------------
@needs_root
def test_works_as_a_normal_user_with_warnings_not_crashes():
    script = prog("""
        import warnings
        from murphy_lab.executor import Executor
        warnings.simplefilter("always")
        with Executor(workers=1, timeout=0.5) as e:
            r = e.run_many([("def f():\\n    return 1\\n", ["assert f() == 1"]),
                            ("while True:\\n    pass\\n", ["assert True"]),
                            ("import os\\nos._exit(0)\\n", ["assert True"])])
            print([x.status for x in r], e.isolation["user"])
    """)
    python = "/usr/bin/python3"  # the venv's interpreter may live under /root, closed to other users
    if not os.path.exists(python):
        pytest.skip("no system python3 for the unprivileged user")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HOME": "/tmp"}
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert "['passed', 'timeout', 'exit'] False" in out.stdout
