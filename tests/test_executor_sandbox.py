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
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from murphy_lab.executor import Executor

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's kernel mechanisms need root here")


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


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
    with Executor(workers=1, timeout=5.0) as e:
        adder, finder = e.run_many([(KEYS, [f"assert add({desc!r}) == [-1, -1]"]),  # EPERM from both keyrings
                                    (KEYS, [f"assert find({desc!r}) < 0"])])  # fmt: skip
    assert adder.solved, adder.feedback
    assert finder.solved, finder.feedback
    assert desc not in Path("/proc/keys").read_text()
    # nothing kept for a program uid (private uids start at 200,000) once every process of it has ended
    assert [u for u in _key_users() - before if 200_000 <= u < 1_000_200_000] == []


def test_the_32_bit_syscall_entry_is_closed():
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
    with Executor(workers=1, timeout=5.0) as e:
        res = e.run(p, ["assert unshare_user() == -38", "assert getpid32() == -38"])  # -ENOSYS
    assert res.solved, res.feedback


# --- as a normal user -------------------------------------------------------------------------------------------
def _nobody_may_unshare() -> bool:
    if not (shutil.which("setpriv") and shutil.which("unshare") and os.path.exists("/usr/bin/python3")):
        return False
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-Urnpf", "true"],
                         capture_output=True, cwd="/")  # fmt: skip
    return run.returncode == 0


@pytest.mark.skipif(not _nobody_may_unshare(), reason="this kernel gives normal users no user namespaces")
def test_a_normal_user_gets_the_namespaces_and_the_root_the_kernel_allows(tmp_path):
    """Where the kernel lets a normal user make namespaces, its executor has them (a non-dumpable process cannot
    write its own id maps: the user namespace was made and then given up on). What needs root does not come: a
    private uid, cgroups."""
    package = Path(__file__).resolve().parents[1] / "murphy_lab"
    pub = Path(tempfile.mkdtemp(prefix="murphy-nonroot-"))  # a copy of the package that user can read
    try:
        (pub / "murphy_lab").mkdir()
        shutil.copy(package / "__init__.py", pub / "murphy_lab")
        shutil.copytree(package / "executor", pub / "murphy_lab" / "executor",
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        for p in [pub, *pub.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        code = textwrap.dedent(f"""
            import sys, warnings
            sys.path.insert(0, {str(pub)!r})
            warnings.simplefilter("ignore")
            from murphy_lab.executor import Executor
            probe = "import os\\ndef f():\\n    return os.path.exists({str(package)!r}), os.listdir('/proc')\\n"
            with Executor(workers=1, timeout=5) as ex:
                res = ex.run(probe, ["assert f()[1]"])
                active = ex.isolation
            wanted = ("network", "private_tmp", "hidden")
            assert all(active[k] for k in wanted), active
            assert not active["user"] and not active["cgroup"], active
            assert res.solved, res.feedback
        """)
        run = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", code],
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120, cwd="/",
        )  # fmt: skip
    finally:
        shutil.rmtree(pub)
    assert run.returncode == 0, run.stderr[-2000:]
