"""The sandbox's kernel mechanisms, one test per promise of docs/executor.md ("What holds by the sandbox").

Each test is written from what a program (or a compromised test worker) would try: read a copy of a dataset
wherever it lies, see or signal other processes, take another slot's CPU with forked spinners, keep a kernel
key for the next job, reach the kernel through the 32-bit syscall entry, or, from the test worker, write to the
host, read root's files and signal its parent. As root (the mechanisms need it; as a normal user they degrade
with a warning, tests/test_executor_faults.py::test_a_normal_user_gets_verdicts_and_each_isolation_warning_once).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from murphy_lab.executor import Executor, TestSuite

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's kernel mechanisms need root here")


@pytest.fixture(scope="module")
def ex(executor):
    return executor  # the session's (tests/conftest.py): the same settings, one slot


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def test_every_mechanism_is_active_as_root(ex):
    assert ex.run("", ["assert True"]).solved
    wanted = ("network", "root", "private_tmp", "pid", "user", "cgroup", "cpu", "job_folder")
    assert {k: ex.isolation.get(k) for k in wanted} == dict.fromkeys(wanted, True)
    assert {k: ex.isolation.get(f"worker_{k}") for k in ("network", "root", "user")} == dict.fromkeys(
        ("network", "root", "user"), True
    )


# --- the filesystem is an allow-list ----------------------------------------------------------------------------
READER = prog("""
    import os
    def readable(paths):
        seen = []
        for p in paths:
            try:
                with open(p, "rb") as fh:
                    fh.read(1)
                seen.append(p)
            except OSError:
                pass
        return seen
    def present(paths):
        return [p for p in paths if os.path.lexists(p)]
""")


@pytest.fixture
def dataset_copies():
    """A copy of a benchmark file, world-readable, at paths no deny-list knows: under /root, /opt, /var/lib,
    /work, the host's /tmp and the current directory."""
    data = b'{"task_id": "HumanEval/0", "canonical_solution": "    return 42\\n"}\n'
    made, files = [], []
    for top in ("/root", "/opt", "/var/lib", "/work", "/tmp", os.getcwd()):
        if not os.path.isdir(top):
            continue
        d = tempfile.mkdtemp(prefix=".murphy-sbx-copy-", dir=top)
        os.chmod(d, 0o755)
        f = os.path.join(d, "HumanEval.jsonl")
        Path(f).write_bytes(data)
        os.chmod(f, 0o644)
        made.append(d)
        files.append(f)
    yield files
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def test_a_dataset_copy_anywhere_on_the_machine_is_unreadable(ex, dataset_copies):
    res = ex.run(
        READER, [f"assert present({dataset_copies!r}) == []", f"assert readable({dataset_copies!r}) == []"]
    )
    assert res.solved, res.feedback


def test_secrets_sources_and_caches_do_not_exist_for_a_program(ex):
    import murphy_lab

    repo = str(Path(murphy_lab.__file__).resolve().parents[1])
    # (the repository's directory itself exists when the virtual environment lies in it: it holds only that)
    paths = [
        "/etc/shadow",
        "/etc/ssh",
        f"{repo}/murphy_lab",
        f"{repo}/tests",
        f"{repo}/README.md",
        "/root/.cache",
        os.path.expanduser("~/.cache"),
        "/work/shared",
        "/root/.bash_history",
        "/sys/class",
        "/dev/vda",
        "/dev/mem",
        "/dev/kmsg",
    ]
    res = ex.run(READER, [f"assert present({paths!r}) == []"])
    assert res.solved, res.feedback


@pytest.mark.parametrize("drop_user", [None, False], ids=["private uid", "root program"])
def test_the_root_is_read_only_but_the_private_directories_are_writable(drop_user):
    """Read-only by its mounts, not by file modes: a program running as root (drop_user=False) cannot write either."""
    p = prog("""
        import os
        def try_write(d):
            try:
                with open(os.path.join(d, "murphy-probe"), "w") as fh:
                    fh.write("x")
                os.unlink(os.path.join(d, "murphy-probe"))
                return True
            except OSError:
                return False
        def writable(dirs):
            return [d for d in dirs if try_write(d)]
    """)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    ro = ["/", "/usr/lib", "/etc", "/dev", "/proc", sys.prefix, site, os.path.dirname(os.__file__)]
    rw = ["/tmp", "/var/tmp", "/dev/shm", "."]
    with Executor(workers=1, timeout=5.0, drop_user=drop_user) as e:  # own: each uid setting
        res = e.run(p, [f"assert writable({ro!r}) == []", f"assert writable({rw!r}) == {rw!r}"])
    assert res.solved, res.feedback


def test_what_correct_programs_use_still_works(ex):
    """numpy, `import this`, local time and time zones, threads, subprocesses of Python (by sys.executable and by
    name on PATH), /dev/null and /dev/urandom, the user database, a file in the working directory."""
    local = time.strftime("%Z") if "TZ" not in os.environ else None
    p = prog("""
        import datetime, io, os, pwd, subprocess, sys, time, zoneinfo, contextlib
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np
        def numpy_sum():
            return int(np.arange(10).sum())
        def zen():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                import this
            return out.getvalue().splitlines()[0]
        def zone():
            return time.strftime("%Z"), datetime.datetime.now().astimezone().tzname()
        def paris_offset():
            d = datetime.datetime(2024, 1, 15, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
            return d.utcoffset().total_seconds()
        def threads():
            with ThreadPoolExecutor(8) as pool:
                return sum(pool.map(lambda x: x * x, range(100)))
        def children():
            code = "import json; print(json.dumps([1]))"
            a = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            b = subprocess.run(["python3", "-c", "print(2)"], capture_output=True, text=True)
            return a.stdout.strip(), b.stdout.strip()
        def devices():
            with open("/dev/null", "w") as fh:
                fh.write("x")
            with open("/dev/urandom", "rb") as fh:
                return len(fh.read(16)) + len(os.urandom(16))
        def users():
            return pwd.getpwuid(0).pw_name
        def files():
            with open("out.txt", "w") as fh:
                fh.write("ok")
            return open("out.txt").read()
    """)
    cases = [
        "assert numpy_sum() == 45",
        "assert zen() == 'The Zen of Python, by Tim Peters'",
        "assert paris_offset() == 3600.0",
        "assert threads() == 328350",
        "assert children() == ('[1]', '2')",
        "assert devices() == 32",
        "assert users() == 'root'",
        "assert files() == 'ok'",
    ]
    if local:
        cases.append(f"assert zone() == ({local!r}, {local!r})")
    res = ex.run(p, cases)
    assert res.solved, res.feedback


# --- PID namespace ----------------------------------------------------------------------------------------------
def test_a_program_sees_and_reaches_only_its_own_processes(ex):
    """Not its test worker, not the parent, not the server (PID 1 of the namespace, root's, hidden from /proc)."""
    p = prog("""
        import os, subprocess, time
        def visible():
            return sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
        def alone():
            return visible() == [os.getpid()]
        def with_child():
            child = subprocess.Popen(["sleep", "5"])
            try:
                for _ in range(200):  # a child becomes visible once its exec has made it dumpable
                    if visible() == sorted([os.getpid(), child.pid]):
                        return True
                    time.sleep(0.01)
                return visible()
            finally:
                child.kill()
        def reach(pid):
            try:
                os.kill(pid, 0)
                return "signalled"
            except ProcessLookupError:
                return "no such process"
            except PermissionError:
                return "refused"
    """)
    cases = [
        "assert alone()",
        "assert with_child()",
        "import os\nassert reach(os.getpid()) == 'no such process'",  # the test worker
        "import os\nassert reach(os.getppid()) == 'no such process'",  # the pool (this test's process)
        "assert reach(1) == 'refused'",  # its server, PID 1 there
    ]
    res = ex.run(p, cases)
    assert res.solved, res.feedback


def test_nothing_a_job_started_is_alive_when_the_next_job_starts(ex):
    leaver = prog("""
        import os, subprocess
        def f():
            for _ in range(3):
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        os.setpgid(0, 0)
                        subprocess.Popen(["sleep", "60"], start_new_session=True)
                        os.execvp("sleep", ["sleep", "60"])
                    os._exit(0)
            return len([d for d in os.listdir("/proc") if d.isdigit()])
    """)
    probe = "import os\ndef f():\n    return [d for d in os.listdir('/proc') if d.isdigit()] == [str(os.getpid())]\n"
    # one slot, so one server runs both jobs
    left, alone = ex.run_many([(leaver, ["assert f() >= 1"]), (probe, ["assert f()"])])
    assert left.solved and alone.solved, (left.feedback, alone.feedback)


# --- a CPU bound per slot ---------------------------------------------------------------------------------------
SPINNERS = prog("""
    import os, time
    def spin():
        for _ in range(40):
            if os.fork() == 0:
                os.setsid()
                try:
                    os.sched_setaffinity(0, range(os.cpu_count() or 1))
                except OSError:
                    pass
                while True:
                    pass
        time.sleep(30)
""")
INNOCENT = prog("""
    import time
    def work():
        time.sleep(0.5)  # the spinners of the other slot are running by now
        total = 0
        for i in range(6_000_000):  # ~0.3 s of one CPU
            total += i
        return total
""")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs for two slots")
def test_forked_spinners_in_one_slot_do_not_make_an_innocent_job_on_the_other_time_out():
    """40 forked spinners in their own sessions, each asking for every CPU, in one slot; an innocent job that
    needs ~0.3 s of CPU on the other slot. Without a bound the innocent gets 1/21 of its CPU and times out."""
    ok = "def f():\n    return 1\n"
    with Executor(workers=2, timeout=3.0) as e:  # own: two slots, their CPU bounds
        # two jobs queued per slot: slot 0 gets the spinners and a filler, slot 1 the innocent and a filler
        res = e.run_many(
            [
                (SPINNERS, ["spin()"]),
                (ok, ["assert f() == 1"]),
                (INNOCENT, ["assert work() == 17999997000000"]),
                (ok, ["assert f() == 1"]),
            ]
        )
    assert res[0].status == "timeout"
    assert res[2].solved, res[2].feedback


# --- kernel keyrings --------------------------------------------------------------------------------------------
KEYS = prog("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    SESSION, USER = -3, -4
    def add(desc):
        got = []
        for ring in (SESSION, USER):
            r = libc.syscall(248, b"user", desc.encode(), b"secret", 6, ring)  # add_key
            got.append(r if r >= 0 else -ctypes.get_errno())
        return got
    def find(desc):
        r = libc.syscall(249, b"user", desc.encode(), None, 0)  # request_key: searches every keyring we hold
        return r if r >= 0 else -ctypes.get_errno()
    def uid():
        return os.getuid()
""")


def _key_users() -> set[int]:
    """uids that hold kernel keys now (/proc/key-users)."""
    try:
        return {int(line.split(":")[0]) for line in Path("/proc/key-users").read_text().splitlines()}
    except OSError:
        return set()


def test_a_kernel_key_cannot_be_kept_for_the_next_job_or_after_close():
    desc = f"murphy-sbx-{os.getpid()}-{time.monotonic_ns()}"
    before = _key_users()
    with Executor(workers=1, timeout=5.0) as e:  # own: nothing may be kept after its close
        adder, finder = e.run_many(
            [
                (KEYS, [f"assert add({desc!r}) == [-1, -1]"]),  # EPERM from both keyrings
                (KEYS, [f"assert find({desc!r}) < 0"]),
            ]
        )
    assert adder.solved, adder.feedback
    assert finder.solved, finder.feedback
    assert desc not in Path("/proc/keys").read_text()
    # nothing kept for a program uid (private uids start at 200,000) once every process of it has ended
    assert [u for u in _key_users() - before if 200_000 <= u < 1_000_200_000] == []


def test_the_32_bit_syscall_entry_is_closed(ex):
    """`int 0x80` takes 32-bit syscall numbers the filter's x86_64 rules do not name: i386 `unshare(CLONE_NEWUSER)`
    (310) and `add_key` (286) went through before."""
    if os.uname().machine != "x86_64":
        pytest.skip("x86_64 only")
    p = prog("""
        import ctypes, mmap
        def int80(nr, arg):  # mov eax, nr; mov ebx, arg; int 0x80; with rbx saved
            code = (b"\\x53\\xb8" + nr.to_bytes(4, "little") + b"\\xbb" + arg.to_bytes(4, "little")
                    + b"\\xcd\\x80\\x5b\\xc3")
            buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            buf.write(code)
            fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
            return fn()
        def unshare_user():
            return int80(310, 0x10000000)
        def getpid32():
            return int80(20, 0)
    """)
    res = ex.run(p, ["assert unshare_user() == -38", "assert getpid32() == -38"])  # -ENOSYS
    assert res.solved, res.feedback


# --- the test worker is sandboxed too ---------------------------------------------------------------------------
@pytest.fixture
def root_only_file():
    """A file only root may read, inside the Python installation (which the worker's root holds)."""
    path = Path(sys.prefix) / f".murphy-sbx-root-only-{os.getpid()}"
    path.write_text("secret")
    path.chmod(0o600)
    yield str(path)
    path.unlink()


def test_test_code_cannot_write_the_host_read_roots_files_or_signal_its_parent(ex, root_only_file):
    """Test code is trusted, but stands in here for a test worker compromised through what it decodes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    checks = {
        "no write under /var/lib or /": "import os\nfor d in ('/var/lib', '/', '/usr/lib'):\n"
        "    try:\n        open(os.path.join(d, 'murphy-probe'), 'w')\n        raise AssertionError(d)\n"
        "    except OSError:\n        pass",
        "no root-only file": f"try:\n    open({root_only_file!r}).read()\n    raise AssertionError('read')\n"
        "except PermissionError:\n    pass",
        "no /etc/shadow": "import os\nassert not os.path.exists('/etc/shadow')",
        "no signal to the parent": "import os\ntry:\n    os.kill(os.getppid(), 0)\n    raise AssertionError('sent')\n"
        "except PermissionError:\n    pass",
        "no network": f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n"
        "    raise AssertionError('connected')\nexcept OSError:\n    pass",
        "a private uid, not the programs'": "import os\nassert os.getuid() not in (0, f()) and os.getgroups() == []",
        "no new privileges, the filter": "s = open('/proc/self/status').read()\n"
        "assert 'NoNewPrivs:\\t1' in s and 'Seccomp:\\t2' in s",
        "no keyring": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.syscall(248, b'user', b'murphy-w', b'x', 1, -3) == -1 and ctypes.get_errno() == 1",
        "still imports what tests import": "import numpy, math, fractions, decimal\n"
        "assert numpy.isclose(math.pi, float(fractions.Fraction(355, 113)), atol=1e-6)",
    }
    try:
        res = ex.run("import os\ndef f():\n    return os.getuid()\n", TestSuite(cases=tuple(checks.values())))
    finally:
        server.close()
    failed = [name for name, o in zip(checks, res.outcomes) if not o.passed]
    assert failed == [], res.feedback


# --- as a normal user -------------------------------------------------------------------------------------------
def _nobody_may_unshare() -> bool:
    if not (shutil.which("setpriv") and shutil.which("unshare") and os.path.exists("/usr/bin/python3")):
        return False
    run = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-Urnpf", "true"],
        capture_output=True,
        cwd="/",
    )
    return run.returncode == 0


@pytest.mark.skipif(not _nobody_may_unshare(), reason="this kernel gives normal users no user namespaces")
def test_a_normal_user_gets_the_namespaces_and_the_root_the_kernel_allows(tmp_path):
    """Where the kernel lets a normal user make namespaces, its executor has them all (a non-dumpable process
    cannot write its own id maps: the user namespace was made and then given up on). What needs root does not
    come: a private uid, cgroups."""
    package = Path(__file__).resolve().parents[1] / "murphy_lab"
    pub = Path(tempfile.mkdtemp(prefix="murphy-nonroot-"))  # a copy of the package that user can read
    try:
        (pub / "murphy_lab").mkdir()
        shutil.copy(package / "__init__.py", pub / "murphy_lab")
        shutil.copytree(
            package / "executor",
            pub / "murphy_lab" / "executor",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for p in [pub, *pub.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        code = textwrap.dedent(f"""
            import sys, warnings
            sys.path.insert(0, {str(pub)!r})
            warnings.simplefilter("ignore")
            from murphy_lab.executor import Executor
            probe = "import os\\ndef f():\\n    return os.path.exists({str(package)!r}), os.listdir('/proc')\\n"
            with Executor(workers=1, timeout=5) as ex:
                res = ex.run(probe, ["assert f()[0] is False", "assert len([d for d in f()[1] if d.isdigit()]) == 1"])
                active = ex.isolation
            wanted = ("network", "pid", "root", "private_tmp", "worker_network", "worker_root")
            assert all(active[k] for k in wanted), active
            assert not active["user"] and not active["cgroup"] and not active["worker_user"], active
            assert res.solved, res.feedback
        """)
        run = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", code],
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
        )
    finally:
        shutil.rmtree(pub)
    assert run.returncode == 0, run.stderr[-2000:]
