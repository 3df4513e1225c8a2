"""The program server: the only process that starts program processes. It never sees a test.

Started by `pool.Executor` as ``python -I server.py '<config json>' <socket fd>``, beside its test worker
(`worker.py`), which is the other end of the socket. It never receives a test or an expected value, and never
reads a program either: the program comes as a file descriptor (a memfd) that only the program process reads. So
nothing a program reads in its own memory or files holds an answer, or another job's program.
Requests (`protocol.py`; the channel to the test worker travels as a file descriptor):

    ASSERT + channel fd, program fd   fork a program process that serves the program on the channel (no reply)
    FINISH                            kill it and everything it started, clean up -> its wait status
    IO + program fd                   run it as a script on that stdin -> timed out, wait status, stdout, stderr

A program process loads the program and answers the test worker's requests on the channel with plain data or
references (`program.ProgramSide`), in the job folder the test worker shares (mounted here at its start,
`Server._job_folder`; emptied after every job); it never sends anything else, so how it ended is what the kernel says (its wait
status, the memory cgroup's counter) or the worker's timer. As a script (IO tests) it ends the way
``python program.py`` ends (`program.run_script`). It runs in the sandbox of `sandbox.ProgramSandbox`.
"""

from __future__ import annotations

import builtins
import fcntl
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import sys
import time

# imported once here, so a program importing them finds them loaded. Only what programs commonly import: every
# page the server holds is copied into the page tables of every fork and torn down at every exit, so a rarely
# used heavy module (dataclasses, with inspect: 1.4 MB; hashlib, datetime, decimal, fractions: 1.3 MB) costs
# every job more than the few programs that import it save
WARM_MODULES = (
    "abc array bisect collections collections.abc copy enum functools heapq io itertools math operator re "
    "string textwrap typing unicodedata"
).split()
for _name in WARM_MODULES:
    importlib.import_module(_name)

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, file: str, **names):
    """A module of ours, loaded by path with `names` set before it runs, and its own builtins."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, file))
    module = importlib.util.module_from_spec(spec)
    # its own snapshot: a program patching builtins cannot reach it
    module.__builtins__ = dict(vars(builtins))
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


sandbox = _load("_murphy_sandbox", "sandbox.py")
wire = _load("_murphy_wire", "wire.py")
protocol = _load("_murphy_protocol", "protocol.py")
# what runs in a program process
capture = _load("_murphy_capture", "capture.py", wire=wire)  # what a program prints in a pytest run
program = _load("_murphy_program", "program.py", wire=wire, protocol=protocol, capture=capture)
PROGRAM_FILE = protocol.FILENAME
ASSERT, FINISHED, IO, RAN = protocol.ASSERT, protocol.FINISHED, protocol.IO, protocol.RAN
STDERR_KEPT = 16 * 1024  # the end of an IO program's stderr is kept (its traceback, for feedback)
_FD_SPACE = socket.CMSG_SPACE(4 * 4)
PROGRAM_FDS = 5  # fds 0-4 are the program process's (stdin, stdout, stderr, the channel, the program): the
# server keeps them on /dev/null, puts a job's files there just before it forks, and keeps its own above them


def _above(fd: int) -> int:
    """`fd`, moved above the program process's fds."""
    if fd >= PROGRAM_FDS:
        return fd
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, PROGRAM_FDS)
    os.close(fd)
    return new


_DEVNULL = _above(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))


# --- the server -------------------------------------------------------------------------------------------------
class Server:
    def __init__(self, cfg: dict, sock: socket.socket):
        self.cfg, self.sock = cfg, sock
        # made before the sandbox hides /sys, and named after the pid the pool knows (it removes them if we cannot)
        self.cgroups = sandbox.Cgroups(
            f"murphy-{os.getpid()}",
            cfg["memory_mb"] + cfg["tmp_mb"],
            cfg["max_processes"],
            enabled=cfg["isolate"] and os.geteuid() == 0,
        )
        self.active, self.warnings = sandbox.isolate(cfg, "server")  # from here on PID 1 of our PID namespace
        self.uid = sandbox.private_uid("program")
        # the test worker's: one folder for test and program
        self.active["job_folder"] = self._job_folder(cfg)
        cfg["active"] = self.active
        self.active["cgroup"] = bool(self.cgroups.procs)  # each program process joins them
        self.active["cpu"] = self.cgroups.join_slot()  # this server joins: every fork inherits the CPU bound
        if os.geteuid() != 0 and cfg["isolate"]:
            self.warnings.append("not root: no cgroups (memory incl. tmpfs, processes, a CPU bound per slot)")
        elif cfg["isolate"] and not self.active["cpu"]:
            self.warnings.append("no cpu/cpuset cgroup: a slot's programs can take the CPU of other slots")
        self.cgroup_procs, self.failcnt = self.cgroups.procs, self.cgroups.failcnt
        self.base = os.path.join("/tmp", f"murphy-{os.getpid()}-{self.uid}")
        os.makedirs(self.base, mode=0o711, exist_ok=True)
        self.n = 0
        # the job folder: the program's working directory, HOME and TMPDIR, and the test's too; emptied after a job
        self.workdir = cfg["job_dir"]
        self.current: int | None = None
        os.environ.clear()  # the program processes' environment, inherited by every fork
        os.environ.update(sandbox.CHILD_ENV, HOME=self.workdir, TMPDIR=self.workdir)
        self.sandbox = sandbox.ProgramSandbox(cfg, self.workdir, self.uid, PROGRAM_FDS, self.cgroup_procs)
        # fds 0 and 1 (our own error output stays on sys.stderr)
        sys.stdin, sys.stdout = program.CHILD_STDIO[:2]
        sys.argv = [PROGRAM_FILE]
        program.warm_up()
        gc.collect()
        gc.freeze()

    def recv(self) -> tuple[bytes, list[int]]:
        """One request: its body and the fds that came with its first bytes (the length is read alone, so no
        read takes bytes or fds of the next request)."""
        head, anc, _, _ = self.sock.recvmsg(4, _FD_SPACE)
        fds = []
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(struct.unpack(f"{len(blob) // 4}i", blob[: len(blob) // 4 * 4]))
        if len(head) < 4:
            if not head:
                raise EOFError
            head += self._exact(4 - len(head))
        return self._exact(int.from_bytes(head, "little")), fds

    def _exact(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise EOFError
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def send(self, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.sock.sendall(struct.pack("<I", len(data)) + data)

    def loop(self) -> None:
        self.send({"ready": True, "active": self.active, "warnings": self.warnings})
        sock = self.sock.fileno()
        while True:
            try:
                body, fds = self.recv()
            except (EOFError, ConnectionError, OSError):
                return
            op = body[:1]
            # the channel, the program (a memfd the worker wrote; never read here)
            if op == b"A" and len(fds) == 2:
                self.start(ASSERT.unpack(body)[1], {3: fds[0], 4: fds[1]})
                for fd in fds:
                    os.close(fd)
            elif op == b"F":
                status = self.finish()
                os.write(sock, FINISHED.pack(b"F", status, self.oom(), sandbox.rss_mb(_STATM)))
            elif op == b"I" and len(fds) == 1:
                os.write(sock, self.run_io(body[IO.size :], IO.unpack(body[: IO.size])[1], fds[0]))
                os.close(fds[0])
            else:
                for fd in fds:
                    os.close(fd)
                self.send({"error": f"unknown request {body[:20]!r}"})

    def _job_folder(self, cfg: dict) -> bool:
        """Receive the test worker's job folder (a detached mount, or none, and the uid the worker runs as) and
        mount it at the same path here, idmapped: the worker's files are the program's own there and the
        program's are the worker's, as one process's would be (a file made `0600` by `tempfile` is readable by
        the other side). Whether the two share one folder. Without namespaces on either side both use the
        caller's directory itself."""
        body, fds = self.recv()
        tree, worker_uid = (fds[0] if fds else None), int(body[1:])
        programs_uid = self.uid if self.active["user"] else os.geteuid()
        idmap = None
        try:
            if tree is not None and self.active["root"]:
                # the worker's files shown as the program's own, and the reverse
                if worker_uid != programs_uid:
                    idmap = sandbox.idmapping(worker_uid, programs_uid)
                sandbox.attach_tree(tree, cfg["job_dir"], idmap)
                return True
            if tree is None and not self.active["root"]:
                # the caller's own directory: the worker's uid and the programs'
                os.chmod(cfg["job_dir"], 0o777)
                return True
        except OSError as e:
            self.warnings.append(f"no job folder shared by tests and programs ({e})")
            return False
        finally:
            for fd in (tree, idmap):
                if fd is not None:
                    os.close(fd)
        self.warnings.append("no job folder shared by tests and programs (only one of them has its own root)")
        return False

    def start(self, cpu: float, fds: dict[int, int], script: bool = False) -> int:
        """Fork one sandboxed program process with `fds` (target fd -> our fd) in place: it reads the program
        from fd 4, then serves it on fd 3 (or runs it as a script on stdin 0). This server never holds a program:
        nothing of one job is in the memory the next job's process is forked from."""
        self.n += 1
        self.fail0 = _failcnt(self.failcnt)
        for target, fd in fds.items():  # ours are all above PROGRAM_FDS: no overlap
            os.dup2(fd, target)
        pid = os.fork()
        if pid == 0:
            try:
                self.sandbox.enter(int(cpu) + 2)
                sys.stderr = program.CHILD_STDIO[2]
                prelude, code, source = protocol.unpack(os.pread(4, os.fstat(4).st_size, 0))
                os.close(4)
                if script:
                    program.run_script(prelude, code, source)
                else:
                    program.serve_program(prelude, code, source, 3)
            finally:
                os._exit(70)
        for target in fds:
            os.dup2(_DEVNULL, target)
        self.current = pid
        return pid

    def oom(self) -> bool:
        return _failcnt(self.failcnt) > self.fail0

    def finish(self) -> int:
        """Kill the program process and every process it left (`sandbox.end_job`); its wait status."""
        pid, self.current = self.current, None
        if pid is None:
            return 0
        status = sandbox.end_job(pid, init=self.active["pid"])
        sandbox.empty_dir(self.workdir)  # after every process of the job is gone, the test's code too
        sandbox.empty_private_dirs(keep=(self.base, self.workdir))
        return status

    def run_io(self, stdin: bytes, timeout: float, program: int) -> bytes:
        """Run the program as a script on `stdin` (the expected output never comes here) -> RAN."""
        paths = [os.path.join(self.base, f"{self.n + 1}.{ext}") for ext in ("in", "out")]
        with open(paths[0], "wb") as f:
            f.write(stdin)
        os.chmod(paths[0], 0o644)
        fin = os.open(paths[0], os.O_RDONLY)
        out_fd = os.open(paths[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if self.active["user"]:
            os.fchown(out_fd, self.uid, self.uid)
        # stderr is a pipe this server drains, keeping its end: feedback only, never limited (as under `python`),
        # while stdout, the answer, is a file capped at `output_kb` (RLIMIT_FSIZE)
        err_read, err_write = os.pipe2(os.O_CLOEXEC)
        err_read = _above(err_read)
        pid = self.start(timeout, {0: fin, 1: out_fd, 2: err_write, 4: program}, script=True)
        for fd in (fin, out_fd, err_write):
            os.close(fd)
        tail = bytearray()
        timed_out = _wait_pid(pid, timeout, err_read, tail)
        status = self.finish()  # every writer is gone: the pipe reads to its end
        _drain(err_read, tail, 0)
        os.close(err_read)
        err = bytes(tail[-STDERR_KEPT:])
        with open(paths[1], "rb") as f:
            out = f.read(self.cfg["output_kb"] * 1024 + 1)
        for p in paths:
            os.unlink(p)
        head = RAN.pack(b"R", timed_out, status, self.oom(), sandbox.rss_mb(_STATM), len(out), len(err))
        return head + out + err


def _wait_pid(pid: int, timeout: float, err: int, tail: bytearray) -> bool:
    """Wait until `pid` exits or `timeout` s pass, keeping the end of what it writes to the pipe `err`; whether it
    timed out."""
    pidfd = os.pidfd_open(pid)
    deadline, watched = time.monotonic() + timeout, [pidfd, err]
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            ready, _, _ = select.select(watched, [], [], left)
            if pidfd in ready:
                return False
            if err in ready and not _drain(err, tail, 1):
                watched = [pidfd]  # its writers closed it
    finally:
        os.close(pidfd)


def _drain(fd: int, tail: bytearray, reads: int) -> bool:
    """Read `reads` chunks (0: to the end) from `fd` into `tail`, keeping its last STDERR_KEPT bytes; False at EOF."""
    n = 0
    while reads == 0 or n < reads:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        tail += chunk
        if len(tail) > 2 * STDERR_KEPT:
            del tail[:-STDERR_KEPT]
        n += 1
    return True


_STATM = _above(os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC))  # ours, for `sandbox.rss_mb`


def _failcnt(fds: list[int]) -> int:
    """How often the memory cgroup refused memory so far (a program killed for memory shows here)."""
    for fd in fds:
        try:
            return int(os.pread(fd, 64, 0))
        except (OSError, ValueError):
            pass
    return 0


def _settle_fds(sock: int) -> int:
    """Our socket and stderr above PROGRAM_FDS, fds 0-4 on /dev/null; the socket's new fd."""
    global _STDERR
    sock = _above(sock)
    # kept referenced here too: a program process replaces sys.stderr, and freeing this file object there
    # would touch (copy) some 60 pages shared with the server
    sys.stderr = _STDERR = open(fcntl.fcntl(2, fcntl.F_DUPFD_CLOEXEC, PROGRAM_FDS), "w", buffering=1)
    for fd in range(PROGRAM_FDS):
        os.dup2(_DEVNULL, fd)
    return sock


def main() -> None:
    cfg = json.loads(sys.argv[1])
    sock = socket.socket(fileno=_settle_fds(int(sys.argv[2])))
    if len(sys.argv) > 3 and cfg.get("pin", True):
        try:
            os.sched_setaffinity(0, {int(sys.argv[3])})  # see pool.Executor._spawn
        except OSError:
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # inherited by program processes: writing too much kills
    sandbox.not_dumpable()
    server = Server(cfg, sock)
    try:
        server.loop()
    finally:
        if server.current is not None:
            server.finish()
        sandbox.remove_tree(server.base)
        server.cgroups.remove()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt, ConnectionError):
        pass
