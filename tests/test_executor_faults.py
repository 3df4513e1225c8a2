"""A bad job fails alone and the host is untouched (docs/executor.md, "Faults"): each job below once crashed a
worker, blamed an innocent job, slowed later batches, or left something behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite

ROOT = os.geteuid() == 0
OK = "def f():\n    return 1\n"
SLOW_OK = "import time\ndef f():\n    time.sleep(0.3)\n    return 1\n"


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


@pytest.fixture(scope="module")
def ex(executor):
    return executor  # the session's (tests/conftest.py): one slot; no test using it reaches a timeout


@pytest.mark.parametrize(
    "bad",
    [
        (OK, ["assert f() == '\ud800'"]),
        ("def f():\n    return '\ud800'\n", ["assert f() == 1"]),
        ("def f():\n    return 1\x00\n", ["assert f() == 1"]),
        (OK, ["assert f() == 1\x00"]),
        ("print(input())", [IOTest("\ud800\n", "x")]),
        ("print(input())", [IOTest("x", "\udfff")]),
    ],
    ids=[
        "surrogate in a test",
        "surrogate in the program",
        "NUL in the program",
        "NUL in a test",
        "surrogate in an IO input",
        "surrogate in an expected output",
    ],
)
def test_invalid_text_gets_its_own_result_and_never_blames_its_neighbours(ex, bad):
    before, res, after = ex.run_many([(SLOW_OK, ["assert f() == 1"]), bad, (OK, ["assert f() == 1"])])
    assert before.solved and after.solved
    assert not res.solved and res.status not in ("crashed", "passed")


def test_a_deep_directory_tree_is_cleaned_up_without_recursion(ex):
    deep = prog("""
        import os
        def f():
            for top in (".", "/tmp"):
                os.chdir(top)
                for _ in range(1500):
                    os.mkdir("d")
                    os.chdir("d")
            return 1
    """)
    probe = "import os\ndef f():\n    return os.path.exists('/tmp/d') or os.listdir('.') != []\n"
    deep_res, probe_res = ex.run_many([(deep, ["assert f() == 1"]), (probe, ["assert f() is False"])])
    assert deep_res.solved and probe_res.solved


def test_a_program_over_the_size_limit_gets_a_clear_status():
    with Executor(workers=1, max_program_kb=64) as e:  # own: its limit
        big = "x = 1\n" * 20_000  # 120 KB
        res = e.run(big + OK, ["assert f() == 1"])
        assert res.status == "too_large" and "the limit is 65,536 bytes" in res.feedback
        assert e.run(OK, ["assert f() == 1"]).solved


def test_huge_inputs_get_a_clear_status():
    with Executor(workers=1, max_input_kb=64) as e:  # own: its limit
        res = e.run("print(len(input()))", [IOTest("x" * 100_000, "100000")])
        assert res.status == "too_large" and "the tests are" in res.feedback


def test_a_big_next_job_does_not_make_an_innocent_test_time_out():
    with Executor(workers=1, timeout=0.6) as e:  # own: a short limit the big job must not cost the innocent
        big = [IOTest("y" * 20_000_000, "0")]  # 20 MB read ahead while the innocent test runs
        innocent, _ = e.run_many([(SLOW_OK, ["assert f() == 1"]), ("print(0)", big)])
        assert innocent.solved


def test_a_worker_that_grew_is_replaced_and_every_job_still_gets_its_result():
    with Executor(workers=1, max_worker_mb=1) as e:  # own: every worker is "too big": replaced after each job
        res = e.run_many([(f"def f():\n    return {i}\n", [f"assert f() == {i % 2}"]) for i in range(4)])
        assert [r.solved for r in res] == [True, True, False, False]


@pytest.mark.skipif(not ROOT, reason="IPC namespaces and private mounts need root here")
def test_shared_memory_and_lock_files_do_not_outlive_the_test():
    key = 0x4D555250
    leaver = prog(f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        def f():
            ok = libc.shmget({key}, 4096, 0o1000 | 0o666) >= 0
            for d in ("/run/lock", "/dev/shm", "/var/tmp", "/tmp"):
                if os.path.isdir(d):
                    open(os.path.join(d, "murphy-probe"), "w").write("x")
            return ok
    """)
    probe = prog(f"""
        import ctypes, os
        libc = ctypes.CDLL(None)
        def f():
            return libc.shmget({key}, 0, 0) >= 0 or any(
                os.path.exists(os.path.join(d, "murphy-probe")) for d in ("/run/lock", "/dev/shm", "/var/tmp", "/tmp"))
    """)
    with Executor(workers=1) as e:  # own, twice: nothing may outlive an executor's close
        assert e.run(leaver, ["assert f() is True"]).solved
        assert e.run(probe, ["assert f() is False"]).solved
    with Executor(workers=1) as e:
        assert e.run(probe, ["assert f() is False"]).solved
    shm = Path("/proc/sysvipc/shm").read_text().split("\n")[1:]
    assert not any(line.split() and int(line.split()[0]) == key for line in shm)
    assert not any(Path(d, "murphy-probe").exists() for d in ("/run/lock", "/dev/shm", "/var/tmp", "/tmp"))


def test_files_left_after_clean_jobs_are_still_removed(ex):
    """The cleanup skips a private directory that did not change since it was last emptied: a job that leaves
    files after many jobs that left none must still be cleaned up (names, nested dirs, its working dir)."""
    leaver = prog("""
        import os
        def f():
            for d in ("/run/lock", "/dev/shm", "/var/tmp", "/tmp"):
                if os.path.isdir(d):
                    os.makedirs(os.path.join(d, "murphy-nested", "deeper"), exist_ok=True)
                    open(os.path.join(d, "murphy-left"), "w").write("x")
            open("in-cwd", "w").write("x")
            return 1
    """)
    probe = prog("""
        import os
        def f():
            left = [p for d in ("/run/lock", "/dev/shm", "/var/tmp", "/tmp")
                    for p in (os.path.join(d, "murphy-left"), os.path.join(d, "murphy-nested")) if os.path.exists(p)]
            return left + os.listdir(".")
    """)
    assert all(r.solved for r in ex.run_many([(OK, ["assert f() == 1"])] * 5))  # one slot: one server
    assert ex.run(leaver, ["assert f() == 1"]).solved
    res = ex.run(probe, ["assert f() == []"])
    assert res.solved, res.feedback


def test_a_program_process_holds_only_its_own_files(ex):
    """fds 0-2 and the channel (3); the program's memfd (4) is closed after it was read; nothing of the server."""
    probe = "import os\ndef f():\n    return sorted(int(x) for x in os.listdir('/proc/self/fd'))\n"
    # 4 is the listing's own directory fd, the lowest free one because the memfd at 4 was closed; an fd
    # left open (the memfd, one of the server's) would make the list longer
    res = ex.run(probe, ["assert f() == [0, 1, 2, 3, 4]"])
    assert res.solved, res.feedback


@pytest.mark.skipif(not ROOT, reason="the memory cgroup needs root here")
def test_filling_every_private_tmpfs_counts_against_the_memory_limit():
    hog = prog("""
        def f():
            for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
                for k in range(120):  # files under the output limit, 120 MB per directory
                    with open(f"{d}/fill{k}", "wb") as fh:
                        fh.write(b"x" * 1_000_000)
            return 1
    """)
    with Executor(workers=1, memory_mb=128, tmp_mb=128, timeout=10) as e:  # own: its limits
        if not e.run(OK, ["assert f() == 1"]).solved or not e.isolation.get("cgroup"):
            pytest.skip("no memory cgroup")
        res, after = e.run_many([(hog, ["assert f() == 1"]), (OK, ["assert f() == 1"])])
    assert not res.solved and res.status in ("memory", "error") and after.solved


def test_a_correct_program_using_a_thread_pool_of_16_passes_at_the_default_memory_limit(ex):
    p = prog("""
        from concurrent.futures import ThreadPoolExecutor
        def f(n):
            with ThreadPoolExecutor(max_workers=16) as pool:
                return sum(pool.map(lambda x: x * x, range(n)))
    """)
    assert ex.run(p, ["assert f(1000) == 332833500"]).solved  # the default memory limit, as the session's


def test_a_program_cannot_create_a_nested_user_namespace(ex):
    p = prog("""
        import ctypes, subprocess
        libc = ctypes.CDLL(None, use_errno=True)
        def f():
            return libc.unshare(0x10000000) == 0
        def g():
            return subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode == 0
    """)
    assert ex.run(p, ["assert f() is False", "assert g() is False"]).solved


def test_a_memory_hog_fails_alone(ex):
    hog = "def f():\n    x = bytearray(8 << 30)\n    return 1\n"
    res = ex.run_many([(OK, ["assert f() == 1"]), (hog, ["assert f() == 1"]), (OK, ["assert f() == 1"])])
    assert [r.status for r in res] == ["passed", "memory", "passed"]


# --- the test code runs in the worker: it cannot disturb the worker's own work --------------------------------
def test_test_code_that_prints_or_reads_stdin_leaves_the_worker_intact(ex):
    noisy = TestSuite(
        cases=(
            "print('x' * 100000)\nimport os, sys\nos.write(1, b'junk')\nsys.stderr.write('e')\nassert f() == 1",
            "input()",
        ),
    )
    first, second = ex.run_many([(OK, noisy), (OK, ["assert f() == 1"])])
    assert [o.status for o in first.outcomes] == ["passed", "error"] and "EOFError" in first.feedback
    assert second.solved


def test_test_code_that_loops_and_swallows_the_timeout_still_times_out():
    # the timer strikes again every 50 ms until the test code returns; if it never gets out of the loop, the
    # worker's watchdog ends it at the limit + 0.5 s (then the job's other verdicts are lost with the worker: the
    # job after it is unaffected either way)
    with Executor(workers=1, timeout=0.5) as e:  # own: a short limit, and its worker ends
        stubborn = "while True:\n    try:\n        f()\n    except BaseException:\n        pass"
        res = e.run_many([(OK, [stubborn]), (OK, ["while True:\n    pass"]), (OK, ["assert f() == 1"])])
    assert [[o.status for o in r.outcomes] for r in res] == [["timeout"], ["timeout"], ["passed"]]


def test_test_code_stuck_in_c_ends_at_its_limit_from_outside():
    # a C loop never lets the timer strike: the worker's watchdog (a C thread, no GIL needed) ends the worker at
    # the limit + 0.5 s, the job is a timeout (it used to wait for the pool's deadline, the job's timeouts + 11 s,
    # and be `crashed`); the job queued behind it runs in the new worker
    with Executor(workers=1, timeout=0.5) as e:  # own: a short limit, and its worker ends
        e.run(OK, ["assert f() == 1"])
        t0 = time.monotonic()
        stuck, after = e.run_many(
            [(OK, ["sum(range(10**13))", "assert f() == 1"]), (OK, ["assert f() == 1"])]
        )
        took = time.monotonic() - t0
    assert [o.status for o in stuck.outcomes] == ["timeout", "timeout"], stuck.feedback
    assert after.solved
    assert took < 0.5 + 0.5 + 6.0, took  # the limit, the watchdog's margin, a new worker on a loaded machine


def test_test_code_that_runs_out_of_memory_fails_alone(ex):
    hog = TestSuite(cases=("x = bytearray(8 << 30)",), setup="")
    res = ex.run_many([(OK, ["assert f() == 1"]), (OK, hog), (OK, ["assert f() == 1"])])
    assert [r.status for r in res] == ["passed", "memory", "passed"]


AS_NOBODY = pytest.mark.skipif(
    not (ROOT and shutil.which("setpriv") and os.path.exists("/usr/bin/python3")),
    reason="needs root and setpriv",
)


def _run_as_nobody(code: str, home: Path) -> subprocess.CompletedProcess:
    """`code` run by uid 65534 with the system Python, on a copy of the package that user can read
    (`sys.path[0]`; the executor needs only the standard library)."""
    pub = Path(tempfile.mkdtemp(prefix="murphy-nonroot-"))
    try:
        package = Path(__file__).resolve().parents[1] / "murphy_lab"
        (pub / "murphy_lab").mkdir()
        shutil.copy(package / "__init__.py", pub / "murphy_lab")
        shutil.copytree(
            package / "executor",
            pub / "murphy_lab" / "executor",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for p in [pub, *pub.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        return subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                f"import sys; sys.path.insert(0, {str(pub)!r})\n" + code,
            ],
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
        )
    finally:
        shutil.rmtree(pub)


@AS_NOBODY
def test_a_user_who_cannot_read_home_can_start_an_executor(tmp_path):
    """A normal user whose HOME they may not enter (e.g. /root, mode 700) could not start an executor."""
    home = tmp_path / "closed"  # below pytest's own mode-700 directory: the user cannot even look
    (home / ".cache" / "huggingface").mkdir(parents=True)
    code = (
        "from murphy_lab.executor import Executor\nassert Executor(workers=1).run('', ['assert True']).solved"
    )
    run = _run_as_nobody(code, home)
    assert run.returncode == 0, run.stderr[-2000:]


@AS_NOBODY
def test_a_normal_user_gets_verdicts_and_each_isolation_warning_once(tmp_path):
    code = textwrap.dedent(r"""
        import warnings
        from murphy_lab.executor import Executor, IOTest
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with Executor(workers=1, timeout=1) as ex:
                got = [r.status for r in ex.run_many([
                    ("def f(x):\n    return x * 2", ["assert f(2) == 4", "assert f(3) == 7"]),
                    ("def f():\n    while True:\n        pass", ["assert f() == 1"]),
                    ("print(int(input()) * 2)", [IOTest("21", "42")]),
                    ("def read(name):\n    return open(name).read()",  # one job folder, as root has it too
                     ["import tempfile\nwith tempfile.NamedTemporaryFile('w', delete=False) as f:\n    f.write('t')\n"
                      "assert read(f.name) == 't'"]),
                ])]
        assert got == ["failed", "timeout", "passed", "passed"], got
        parts = [p for w in seen for p in str(w.message).removeprefix("executor: ").split("; ")]
        assert len(parts) == len(set(parts)), parts
    """)
    run = _run_as_nobody(code, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
