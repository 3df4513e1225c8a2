"""The warm worker: a long-lived process that forks one sandboxed child per test and writes the verdicts.

Started by `pool.Executor` as ``python -I worker.py '<config json>'``; speaks length-prefixed JSON on stdin/stdout
(one job in, one list of outcomes out). It imports the standard library once, so a test costs a `fork` (about
2 ms), not an interpreter start (10-20 ms). It stands on the standard library and `harness.py` only.

Per worker, once: become a child subreaper (orphaned grandchildren and `setsid` daemons are re-parented to us and
swept), enter a fresh network namespace (no network) and mount namespace with private tmpfs on /tmp, /var/tmp and
/dev/shm (as root directly; as a normal user through a user namespace where the kernel allows it).

Per test, in the forked child: new session, parent-death signal, stdin from /dev/null (or the IO test's input),
stdout/stderr to /dev/null (or a capped file for IO tests), a private empty working directory, a cleared
environment, rlimits (address space, CPU seconds, file size, processes, no core dumps), and, as root, a private
unprivileged uid with no supplementary groups; then `no_new_privs`. The worker waits with the wall-clock timeout,
kills the child's process group, sweeps every remaining descendant, and removes the directory.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import importlib.util
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time

# Warm the standard library that generated programs import, so a forked child does not pay for importing it.
# Not queue (imports threading) nor random/statistics/tempfile (import random): their after-fork hooks would run
# in every child (~0.1 ms each); a program that imports them pays for it in its own process.
WARM_MODULES = (
    "abc array bisect collections collections.abc copy dataclasses datetime decimal enum fractions functools "
    "hashlib heapq io itertools math operator re string textwrap typing unicodedata"
).split()
for _name in WARM_MODULES:
    importlib.import_module(_name)

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("_murphy_harness", os.path.join(_HERE, "harness.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 1 << 12, 1 << 14, 1 << 18
MS_RDONLY, MS_REMOUNT = 1, 32
# Top-level entries of the private /tmp that hold the bound-back Python installation (see _private_tmp): the
# per-test cleanup of the private /tmp must never descend into them.
KEPT_UNDER_TMP: set[str] = set()
_libc = ctypes.CDLL(None, use_errno=True)
MB = 1 << 20


def _call(fn, *args) -> None:
    if fn(*args) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


# --- once per worker -------------------------------------------------------------------------------------------
def isolate_worker(cfg: dict) -> tuple[dict, list[str]]:
    """Subreaper, network and mount namespaces. Returns (what is active, warnings for what is not)."""
    active, warnings = {"subreaper": False, "network": False, "private_tmp": False, "user": False}, []
    try:
        _call(_libc.prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        active["subreaper"] = True
    except OSError as e:
        warnings.append(f"cannot become a child subreaper ({e}); daemonized grandchildren may survive a test")
    uid, gid = os.geteuid(), os.getegid()
    if cfg["isolate"]:
        flags = CLONE_NEWNET | CLONE_NEWNS | (0 if uid == 0 else CLONE_NEWUSER)
        try:
            _call(_libc.unshare, flags)
            if uid != 0:  # map ourselves to ourselves inside the new user namespace
                for name, text in (
                    ("setgroups", "deny"),
                    ("uid_map", f"{uid} {uid} 1"),
                    ("gid_map", f"{gid} {gid} 1"),
                ):
                    with open(f"/proc/self/{name}", "w") as f:
                        f.write(text)
            active["network"] = True
        except OSError as e:
            warnings.append(f"no network namespace ({e}); programs can reach the network")
        if active["network"]:
            try:
                _call(_libc.mount, b"none", b"/", None, MS_REC | MS_PRIVATE, None)
                for d in ("/tmp", "/var/tmp", "/dev/shm"):
                    if os.path.isdir(d):
                        _private_tmp(d, f"size={cfg['tmp_mb']}m,mode=1777".encode())
                active["private_tmp"] = True
            except OSError as e:
                warnings.append(f"no private /tmp ({e}); programs may write to the shared /tmp")
    drop = cfg["drop_user"]
    if drop is None:
        drop = uid == 0
    if drop and uid != 0:
        warnings.append("not root: cannot switch tests to a private uid; programs run as the calling user")
        drop = False
    active["user"] = drop
    if drop:
        hidden = expose_python() if active["private_tmp"] else _closed_ancestors()
        if hidden:
            warnings.append(
                f"{', '.join(hidden)} not readable by other users: programs may fail to import modules "
                "that the worker did not pre-import (install Python where other users can read it, or allow "
                "mount namespaces)"
            )
    return active, warnings


def _outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(p.startswith(q + "/") for q in paths)]


def _private_tmp(d: str, opts: bytes) -> None:
    """Cover `d` with an empty tmpfs, keeping the parts of the Python installation that live under it.

    A checkout or virtual environment under /tmp (as in a CI clone) would otherwise vanish from the worker's
    view: each needed directory is held open, the tmpfs mounted, and the directory bound back from its open fd.
    """
    keep = _outermost([p for p in _needed_paths() if p.startswith(d + "/")])
    held = [(p, os.open(p, os.O_RDONLY | os.O_DIRECTORY)) for p in keep]
    try:
        _call(_libc.mount, b"tmpfs", d.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts)
        for p, fd in held:
            os.makedirs(p, mode=0o755, exist_ok=True)
            _call(_libc.mount, f"/proc/self/fd/{fd}".encode(), p.encode(), None, MS_BIND | MS_REC, None)
            # read-only in this namespace: neither a test nor a cleanup can change the real files
            _call(_libc.mount, None, p.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)
            KEPT_UNDER_TMP.add(os.path.join(d, os.path.relpath(p, d).split(os.sep)[0]))
    finally:
        for _, fd in held:
            os.close(fd)


def _needed_paths() -> list[str]:
    """The Python installation a program needs to read: prefixes and every directory on sys.path."""
    paths = {sys.prefix, sys.base_prefix, *(p for p in sys.path if p and os.path.isdir(p))}
    return sorted(os.path.realpath(p) for p in paths)


def _closed_ancestors() -> list[str]:
    """Directories on the way to the installation that other users cannot enter (e.g. /root, mode 700)."""
    closed = set()
    for p in _needed_paths():
        parts = p.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            try:
                mode = os.stat(d).st_mode
            except OSError:  # not visible in this namespace: nothing to open up
                break
            if not mode & 0o001:
                closed.add(d)
                break
    return sorted(closed)


def expose_python() -> list[str]:
    """Let the private uid read the Python installation when it lives under a closed directory such as /root.

    In the worker's own mount namespace: bind each needed directory aside, cover the closed directory with an
    empty tmpfs, and bind the needed directories back. Nothing else under the closed directory is visible.
    Returns the closed directories that could not be handled.
    """
    failed = []
    for closed in _closed_ancestors():
        inside = [p for p in _needed_paths() if p == closed or p.startswith(closed + "/")]
        inside = _outermost(inside)
        try:
            staged = []
            for k, p in enumerate(inside):
                aside = f"/tmp/.murphy-python/{len(staged)}-{k}"
                os.makedirs(aside, exist_ok=True)
                _call(_libc.mount, p.encode(), aside.encode(), None, MS_BIND | MS_REC, None)
                staged.append((aside, p))
            _call(_libc.mount, b"tmpfs", closed.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=755")
            for aside, p in staged:
                os.makedirs(p, mode=0o755, exist_ok=True)
                _call(_libc.mount, aside.encode(), p.encode(), None, MS_BIND | MS_REC, None)
            os.chmod("/tmp/.murphy-python", 0o700)
        except OSError:
            failed.append(closed)
    return failed


# --- once per test, in the child -------------------------------------------------------------------------------
def _drop_capabilities() -> None:
    """Clear all capabilities (the user-namespace case, where our uid holds them inside the namespace)."""
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two zeroed {effective, permitted, inheritable} sets
    _libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(data))


# The child's sys.stdin/stdout/stderr, made once here (unused by the worker): fds 0-2 get their final targets in
# the child by dup2, so these objects read and write the right files there without an open() per test.
# The whole environment a program sees (the worker replaces its own with it at start; tests add HOME/TMPDIR).
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
}  # fmt: skip
_DEVNULL = os.open(os.devnull, os.O_RDWR)  # kept open in the worker, dup2'ed into each child
_CHILD_STDIO = tuple(
    open(fd, mode, encoding="utf-8", errors="replace", closefd=False)
    for fd, mode in ((0, "r"), (1, "w"), (2, "w"))
)


def enter_sandbox(
    cfg: dict, workdir: str, uid: int, stdin_path: str | None, stdout_path: str | None, verdict_fd: int
) -> int:
    """Everything between fork and running untrusted code. Returns the verdict fd's new number (3)."""
    os.setsid()
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Signal dispositions come from the worker: SIGXFSZ default (writing past RLIMIT_FSIZE kills: status
    # `output`), SIGPIPE ignored as in any Python process, SIGINT ignored, SIGTERM -> SystemExit (status `exit`).
    null = _DEVNULL
    os.dup2(os.open(stdin_path, os.O_RDONLY) if stdin_path else null, 0)
    out = os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if stdout_path else null
    os.dup2(out, 1)
    os.dup2(null, 2)
    os.dup2(verdict_fd, 3)
    os.closerange(4, 1 << 16)  # the worker's pipes to the parent process, pidfds, everything else
    if cfg["active"]["user"]:
        os.chown(workdir, uid, uid)
        if stdout_path:
            os.fchown(1, uid, uid)
    os.chdir(workdir)
    limit = cfg["memory_mb"] * MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit + 64 * MB))  # slack above soft: room to report
    cpu = int(cfg["timeout"]) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["output_kb"] * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (64 * MB, resource.getrlimit(resource.RLIMIT_STACK)[1]))
    except (ValueError, OSError):
        pass
    if cfg["active"]["user"]:
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["max_processes"],) * 2)  # per uid: ours is private
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # all ids non-zero: the kernel clears every capability
    elif os.geteuid() != 0:
        _drop_capabilities()
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # setuid binaries cannot give privileges back
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # the rest was set once in the worker (CHILD_ENV)
    sys.stdin, sys.stdout, sys.stderr = _CHILD_STDIO  # built once in the worker; fds 0-2 now point right
    sys.argv = [harness.PROGRAM_FILE]
    return 3


# --- the worker's side of one test -----------------------------------------------------------------------------
class Worker:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.active, self.warnings = isolate_worker(cfg)
        cfg["active"] = self.active
        self.uid = (
            200_000 + int.from_bytes(os.urandom(4), "little") % 2_000_000_000
        )  # private: no one else has it
        self.base = os.path.join("/tmp", f"murphy-{os.getpid()}-{self.uid}")
        os.makedirs(self.base, mode=0o711, exist_ok=True)
        self.n = 0
        self.me = os.getpid()
        self.current: int | None = None  # pid of the test child running now
        self.prefetch = None  # called once while a child runs, when the next job is waiting on stdin
        os.environ.clear()
        os.environ.update(CHILD_ENV)
        gc.collect()
        gc.freeze()  # warm objects leave the collector: a child's collections do not touch (and copy) their pages

    def shutdown(self) -> None:
        """Leave nothing behind: kill the running test (if any) and every descendant, remove the temp dirs."""
        if self.current is not None:
            self._sweep(self.current)
        shutil.rmtree(self.base, ignore_errors=True)

    @staticmethod
    def prepare(job: dict) -> dict:
        """Compile the program and the tests once per job (compiling executes nothing), into `job["compiled"]`."""
        n = len(job["cases"])
        code, error = harness.compile_program(job["program"])
        if error is not None:
            job["compiled"] = [{"status": "syntax", "detail": error}] * n
            return job
        setup = job["setup"]
        try:
            setup_code = harness.compile_test(setup, harness.SETUP_FILE) if setup.strip() else None
        except SyntaxError as e:
            job["compiled"] = [{"status": "error", "detail": f"the test setup does not compile: {e}"}] * n
            return job
        cases = []
        for case in job["cases"]:
            try:
                cases.append(
                    harness.compile_test(case[1], harness.TEST_FILE) if case[0] == "assert" else None
                )
            except SyntaxError as e:
                cases.append({"status": "error", "detail": f"the test does not compile: {e}"})
        job["compiled"] = (code, setup_code, cases)
        return job

    def run_job(self, job: dict) -> list[dict]:
        """All tests of one job, each in its own child."""
        if "compiled" not in job:
            self.prepare(job)
        if isinstance(job["compiled"], list):  # it did not compile: the same outcome for every test
            return job["compiled"]
        code, setup_code, cases = job["compiled"]
        outcomes = []
        for case, case_code in zip(job["cases"], cases):
            if isinstance(case_code, dict):
                outcomes.append(case_code)
                continue
            outcomes.append(
                self.run_test(code, job["program"], setup_code, job["setup"], case, case_code, job["timeout"])
            )
        return outcomes

    def run_test(
        self, code, program: str, setup_code, setup: str, case: list, case_code, timeout: float
    ) -> dict:
        """Fork a sandboxed child for one test, wait at most `timeout` s, clean up, return the outcome."""
        self.n += 1
        workdir = os.path.join(self.base, str(self.n))
        os.mkdir(workdir, 0o700)
        is_io = case[0] == "io"
        stdin_path = stdout_path = None
        if is_io:
            stdin_path = os.path.join(self.base, f"{self.n}.in")
            with open(stdin_path, "w", encoding="utf-8") as f:
                f.write(case[1])
            os.chmod(stdin_path, 0o644)
            stdout_path = os.path.join(self.base, f"{self.n}.out")
        nonce = os.urandom(16).hex()
        r, w = os.pipe()
        sys.stdout.flush()
        pid = os.fork()
        if (
            pid == 0
        ):  # ------------------------------------------------------------------- the sandboxed child
            try:
                os.close(r)
                cfg = dict(self.cfg, timeout=timeout)
                fd = enter_sandbox(cfg, workdir, self.uid, stdin_path, stdout_path, w)
                if is_io:
                    harness.run_io_test(code, program, fd, nonce, sys.stdout)
                else:
                    harness.run_assert_test(code, program, setup_code, setup, case_code, case[1], fd, nonce)
            finally:
                os._exit(70)
        os.close(w)
        self.current = pid
        raw, code, timed_out = self._wait(pid, r, timeout)
        self._sweep(pid)
        self.current = None
        try:
            out = self._outcome(raw, code, timed_out, nonce, timeout, case, stdout_path)
        finally:
            try:
                os.rmdir(workdir)  # the usual case: the test wrote nothing
            except OSError:
                shutil.rmtree(workdir, ignore_errors=True)
            self._clean_shared_tmp()
            for p in (stdin_path, stdout_path):
                if p and os.path.exists(p):
                    os.unlink(p)
        return out

    def _clean_shared_tmp(self) -> None:
        """Empty the worker's private /tmp, /var/tmp, /dev/shm: nothing a test wrote there reaches the next one."""
        if not self.active["private_tmp"]:
            return
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if e.path in (self.base, "/tmp/.murphy-python") or e.path in KEPT_UNDER_TMP:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(e.path)
                    except OSError:
                        pass

    def _wait(self, pid: int, r: int, timeout: float) -> tuple[bytes, int, bool]:
        """Wait for the child to exit (or the wall clock to run out), then read its verdict; (bytes, status, timed out).

        The verdict (a few KB at most) sits in the pipe's 64 KB buffer until the child has exited, so the worker
        wakes once per test. A child that floods the pipe blocks, and times out without a verdict.
        """
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if self.prefetch is not None:  # while the child runs, read and compile the next job
            poller.register(0, select.POLLIN)
        deadline, timed_out = time.monotonic() + timeout, False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                self._kill_group(pid)
                break
            events = dict(poller.poll(left * 1000))
            if 0 in events and self.prefetch is not None:
                poller.unregister(0)
                self.prefetch()
                self.prefetch = None
            if pidfd in events:
                break
        _, status = os.waitpid(pid, 0)
        os.set_blocking(r, False)
        chunks, chunk = [], self._read(r)
        while chunk and len(chunks) < 16:
            chunks.append(chunk)
            chunk = self._read(r)
        os.close(r)
        os.close(pidfd)
        return b"".join(chunks), status, timed_out

    @staticmethod
    def _read(fd: int) -> bytes:
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            return b""

    @staticmethod
    def _kill_group(pid: int) -> None:
        for target in (-pid, pid):
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _sweep(self, pid: int) -> None:
        """Kill and reap every process the test left behind (they are all our descendants: we are a subreaper)."""
        self._kill_group(pid)
        path = f"/proc/{self.me}/task/{self.me}/children"
        for _ in range(10_000):
            self._reap()
            try:
                with open(path) as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                return
            if not kids:
                return
            for k in kids:
                self._kill_group(k)
            time.sleep(0.0005)

    @staticmethod
    def _reap() -> None:
        while True:
            try:
                p, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if p == 0:
                return

    def _outcome(self, raw, status, timed_out, nonce, timeout, case, stdout_path) -> dict:
        """Turn what came back (verdict bytes, wait status) into {status, detail, assertion, got}."""
        if timed_out:
            return {"status": "timeout", "detail": f"{timeout:g}"}
        verdict = None
        try:
            verdict = json.loads(raw.decode("utf-8", "replace"))
            if not isinstance(verdict, dict) or verdict.get("nonce") != nonce:
                verdict = None
        except ValueError:
            pass
        if verdict is None:  # no verdict: what stopped the process is the outcome
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                if sig == signal.SIGXCPU:
                    return {"status": "timeout", "detail": f"{timeout:g}"}
                if sig == signal.SIGXFSZ:
                    return {"status": "output", "detail": str(self.cfg["output_kb"])}
                return {
                    "status": "crashed",
                    "detail": signal.Signals(sig).name if sig in signal.valid_signals() else str(sig),
                }
            return {"status": "exit", "detail": str(os.waitstatus_to_exitcode(status))}
        out = {
            "status": verdict.get("status", "error"),
            "detail": str(verdict.get("detail", "")),
            "assertion": str(verdict.get("assertion", "")),
        }
        if out["status"] == "ran":  # IO test: the worker, not the program, compares the output
            with open(stdout_path, "rb") as f:
                got = f.read(self.cfg["output_kb"] * 1024 + 1).decode("utf-8", "replace")
            same = normalize(got) == normalize(case[2])
            out.update(status="passed" if same else "failed", got=got[:4000])
        return out


def normalize(text: str) -> str:
    """IO comparison: trailing whitespace on each line and trailing blank lines are ignored."""
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


# --- the loop --------------------------------------------------------------------------------------------------
def _read_exact(fd: int, n: int) -> bytes:
    """Exactly n bytes from fd (unbuffered, so poll() on it tells whether the next job is waiting), b"" at EOF."""
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


def _recv(fd: int) -> dict | None:
    head = _read_exact(fd, 4)
    if not head:
        return None
    (n,) = struct.unpack("<I", head)
    return json.loads(_read_exact(fd, n))


def _send(stream, obj) -> None:
    data = json.dumps(obj).encode()
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def main() -> None:
    cfg = json.loads(sys.argv[1])
    stdin, stdout = 0, sys.stdout.buffer
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a notebook stops the parent, not the sandbox
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the parent's "stop now": clean up, then exit
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # inherited by the children: see enter_sandbox
    worker = Worker(cfg)
    ahead: list = []  # the next job, read (and compiled) while a child of the current one was running

    def read_ahead() -> None:
        job = _recv(stdin)
        ahead.append(job if job is None else worker.prepare(job))

    try:
        _send(stdout, {"ready": True, "active": worker.active, "warnings": worker.warnings})
        while True:
            job = ahead.pop() if ahead else _recv(stdin)
            if job is None:  # the parent closed the pipe (or died)
                return
            t0 = time.perf_counter()
            worker.prefetch = read_ahead
            outcomes = worker.run_job(job)
            worker.prefetch = None
            _send(stdout, {"outcomes": outcomes, "runtime_s": time.perf_counter() - t0})
    finally:
        worker.shutdown()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
