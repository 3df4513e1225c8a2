"""The program server: the only process that starts program processes. It never sees a test.

Started by `pool.Executor` as ``python -I server.py '<config json>' <socket fd>``, beside its test worker
(`worker.py`), which is the other end of the socket. It never receives a test or an expected value, and never
reads a program either: the program comes as a file descriptor (a memfd) that only the program process reads. So
nothing a program reads in its own memory or files holds an answer, or another job's program.
Requests (`protocol.py`; the channel to the test worker travels as a file descriptor):

    ASSERT + channel fd, program fd   fork a program process serving the program's names (no reply; a syntax
                                      error is sent on the channel as the program's hello)
    FINISH                            kill it and everything it started, clean up -> FINISHED (its wait status)
    {"op": "io", ...} + program fd    run it as a script on that stdin -> status, stdout

A program process (`serve_program`) loads the program as module ``solution`` and answers calls on the channel
(`wire.Endpoint`): only plain data crosses. It runs in the sandbox of `sandbox.enter`.
"""

from __future__ import annotations

import builtins
import fcntl
import gc
import importlib
import importlib.util
import json
import linecache
import os
import resource
import select
import signal
import socket
import struct
import sys
import traceback
import types

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


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, file))
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = dict(
        vars(builtins)
    )  # its own snapshot: a program patching builtins cannot reach it
    spec.loader.exec_module(module)
    return module


sandbox = _load("_murphy_sandbox", "sandbox.py")
wire = _load("_murphy_wire", "wire.py")
protocol = _load("_murphy_protocol", "protocol.py")
PROGRAM_FILE = protocol.FILENAME
PROGRAM_MODULE = "solution"
MAX_DETAIL = protocol.MAX_DETAIL
_ModuleType, _isinstance, _exit = types.ModuleType, isinstance, os._exit
ASSERT, FINISHED = protocol.ASSERT, protocol.FINISHED
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
_CHILD_STDIO = tuple(
    open(fd, mode, encoding="utf-8", errors="replace", closefd=False)
    for fd, mode in ((0, "r"), (1, "w"), (2, "w"))
)


# --- the program process ----------------------------------------------------------------------------------------
def format_exception(e: BaseException, limit: int = 3) -> str:
    """The exception and its last `limit` program frames."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == PROGRAM_FILE]
    try:
        head = "".join(traceback.format_exception_only(type(e), e)).strip()
    except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
        head = type(e).__name__
    lines = traceback.format_list(frames[-limit:])
    body = ("Traceback (most recent call last):\n" + "".join(lines)) if lines else ""
    return (body + head)[-MAX_DETAIL:]


def stop_status(e: BaseException) -> str | None:
    if _isinstance(e, MemoryError):
        return "memory"
    if _isinstance(e, (SystemExit, KeyboardInterrupt, GeneratorExit)):
        return "exit"
    return None


def _room() -> None:
    """After a MemoryError: the soft address-space limit up to the hard one (64 MB more), to send the reply."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _load_program(code, program: str, name: str) -> types.ModuleType:
    linecache.cache[PROGRAM_FILE] = (len(program), None, program.splitlines(True), PROGRAM_FILE)
    module = types.ModuleType(name)
    module.__file__ = PROGRAM_FILE
    sys.modules[name] = module
    exec(code, module.__dict__)
    return module


def _checker(ep):
    """The program side's check after each request it served (`Endpoint.check`): a trace or profile hook, or an
    exception that ends the process (memory, exit), ends it with a stop message."""

    def stop(status: str, detail: str = "") -> None:
        if status == "memory":
            _room()
        try:
            ep.send(["stop", status, detail[:MAX_DETAIL]])
        finally:
            _exit(0)

    def check(e: BaseException | None) -> None:
        if e is None:
            if sys.gettrace() is not None or sys.getprofile() is not None:
                stop("error", "the program installed a trace/profile hook (not allowed during tests)")
            return
        status = stop_status(e)
        if status:
            stop(status, "")

    return check


def serve_program(code, program: str, ep) -> None:
    """Load the program, send its names, answer the test worker's calls on `ep` until it hangs up."""
    try:
        module = _load_program(code, program, PROGRAM_MODULE)
    except BaseException as e:  # noqa: BLE001 - whatever stops the program is the verdict
        status = stop_status(e)
        if status == "memory":
            _room()
        ep.send(["loadfail", status or "error", "" if status else format_exception(e)])
        _exit(0)
    names = []
    for name, value in list(module.__dict__.items()):
        if _isinstance(name, str) and not name.startswith("__"):
            try:
                if _isinstance(value, _ModuleType):
                    names.append([name, "m", str(value.__name__)])
                else:
                    names.append([name, "v", ep.encode(value)])
            except BaseException:  # noqa: BLE001 - a name that cannot be described is left out
                pass
    ep.send(["hello", names])
    ep.check(None)
    ep.serve_forever()
    _exit(0)


def run_script(code, program: str, report: int, syntax: str | None = None) -> None:
    """An IO test: run the program as ``__main__`` on the stdin in place; 'ran' or the error on `report`."""
    if code is None:
        os.write(report, json.dumps({"status": "syntax", "detail": syntax}).encode("utf-8", "replace")[:8192])
        _exit(0)
    try:
        _load_program(code, program, "__main__")
        status, detail = "ran", ""
    except BaseException as e:  # noqa: BLE001
        status = stop_status(e)
        if status == "exit" and _isinstance(e, SystemExit) and e.code in (None, 0):
            status = "ran"  # an IO program may end with sys.exit(0)
        if status == "memory":
            _room()
        detail = "" if status else format_exception(e)
        status = status or "error"
    try:
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - e.g. the output limit was hit while flushing
        pass
    os.write(report, json.dumps({"status": status, "detail": detail}).encode("utf-8", "replace")[:8192])
    _exit(0)


# --- the server -------------------------------------------------------------------------------------------------
class Server:
    def __init__(self, cfg: dict, sock: socket.socket):
        self.cfg, self.sock = cfg, sock
        # made before the sandbox hides /sys, and named after the pid the pool knows (it removes them if we cannot)
        self.cgroups = sandbox.Cgroups(
            f"murphy-{os.getpid()}", cfg["memory_mb"] + cfg["tmp_mb"], cfg["max_processes"],
            enabled=cfg["isolate"] and os.geteuid() == 0,
        )  # fmt: skip
        self.active, self.warnings = sandbox.isolate(cfg, "server")  # from here on PID 1 of our PID namespace
        cfg["active"] = self.active
        self.active["cgroup"] = bool(self.cgroups.procs)  # each program process joins them
        self.active["cpu"] = self.cgroups.join_slot()  # this server joins: every fork inherits the CPU bound
        if os.geteuid() != 0 and cfg["isolate"]:
            self.warnings.append("not root: no cgroups (memory incl. tmpfs, processes, a CPU bound per slot)")
        elif cfg["isolate"] and not self.active["cpu"]:
            self.warnings.append("no cpu/cpuset cgroup: a slot's programs can take the CPU of other slots")
        self.cgroup_procs, self.failcnt = self.cgroups.procs, self.cgroups.failcnt
        self.uid = sandbox.private_uid("program")
        self.base = os.path.join("/tmp", f"murphy-{os.getpid()}-{self.uid}")
        os.makedirs(self.base, mode=0o711, exist_ok=True)
        self.n = 0
        self.workdir = os.path.join(self.base, "work")  # each program process's own: made empty, then removed
        self.current: int | None = None
        os.environ.clear()  # the program processes' environment, inherited by every fork
        os.environ.update(sandbox.CHILD_ENV, HOME=self.workdir, TMPDIR=self.workdir)
        self.sandbox = sandbox.ProgramSandbox(cfg, self.workdir, self.uid, PROGRAM_FDS, self.cgroup_procs)
        # built once, each fork gets a fresh copy: the program process's end of the channel (fd 3) and stdio
        self.endpoint = wire.Endpoint(3, trace_files=(PROGRAM_FILE,))
        self.endpoint.check = _checker(self.endpoint)
        sys.stdin, sys.stdout = _CHILD_STDIO[:2]  # fds 0 and 1 (our own error output stays on sys.stderr)
        sys.argv = [PROGRAM_FILE]
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
            if op == b"A" and len(fds) == 2:  # the channel, the program (a memfd the worker wrote; never read here)
                self.start(ASSERT.unpack(body)[1], {3: fds[0], 4: fds[1]})
                for fd in fds:
                    os.close(fd)
            elif op == b"F":
                status = self.finish()
                os.write(sock, FINISHED.pack(b"F", status, self.oom(), sandbox.rss_mb(_STATM)))
            elif op == b"{" and len(fds) == 1 and (msg := json.loads(body)).get("op") == "io":
                self.send(self.run_io(msg["input"], msg["timeout"], fds[0]))
                os.close(fds[0])
            else:
                for fd in fds:
                    os.close(fd)
                self.send({"error": f"unknown request {body[:20]!r}"})

    def _workdir(self) -> None:
        """Make the working directory, fresh and empty (the same path every time: `finish` removed the last one)."""
        self.n += 1
        try:
            os.mkdir(self.workdir, 0o700)
        except FileExistsError:  # a cleanup was cut short
            sandbox.remove_tree(self.workdir)
            os.mkdir(self.workdir, 0o700)
        if self.active["user"]:
            os.chown(self.workdir, self.uid, self.uid)

    def start(self, cpu: float, fds: dict[int, int], script: bool = False) -> int:
        """Fork one sandboxed program process with `fds` (target fd -> our fd) in place: it reads the program
        from fd 4, then serves calls on fd 3 (or runs as a script, reporting on fd 3). This server never holds a
        program: nothing of one job is in the memory the next job's process is forked from."""
        self._workdir()
        self.fail0 = _failcnt(self.failcnt)
        for target, fd in fds.items():  # ours are all above PROGRAM_FDS: no overlap
            os.dup2(fd, target)
        pid = os.fork()
        if pid == 0:
            try:
                self.sandbox.enter(int(cpu) + 2)
                sys.stderr = _CHILD_STDIO[2]
                code, source, error = protocol.unpack(os.pread(4, os.fstat(4).st_size, 0))
                os.close(4)
                if script:
                    run_script(code, source, 3, error)
                elif code is None:
                    self.endpoint.send(["loadfail", "syntax", error])
                else:
                    serve_program(code, source, self.endpoint)
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
        sandbox.remove_tree(self.workdir)
        sandbox.empty_private_dirs(keep=(self.base,))
        return status

    def run_io(self, stdin: str, timeout: float, program: int) -> dict:
        """Run the program as a script on `stdin` (the expected output never comes here)."""
        inp = os.path.join(self.base, f"{self.n + 1}.in")
        out = os.path.join(self.base, f"{self.n + 1}.out")
        with open(inp, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(stdin)
        os.chmod(inp, 0o644)
        r, w = os.pipe()
        fin = os.open(inp, os.O_RDONLY)
        fout = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if self.active["user"]:
            os.fchown(fout, self.uid, self.uid)
        pid = self.start(timeout, {0: fin, 1: fout, 3: w, 4: program}, script=True)
        for fd in (w, fin, fout):
            os.close(fd)
        timed_out = _wait_pid(pid, timeout)
        status = self.finish()
        report = _drain(r)
        with open(out, "rb") as f:
            got = f.read(self.cfg["output_kb"] * 1024 + 1)
        for p in (inp, out):
            os.unlink(p)
        return {
            "timed_out": timed_out,
            "status": status,
            "oom": self.oom(),
            "report": report.decode("utf-8", "replace"),
            "stdout": got.decode("utf-8", "replace"),
        }


def _wait_pid(pid: int, timeout: float) -> bool:
    """Wait until `pid` exits or `timeout` s pass; whether it timed out."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        return not ready
    finally:
        os.close(pidfd)


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    parts = []
    try:
        while len(parts) < 4:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            parts.append(chunk)
    except BlockingIOError:
        pass
    os.close(fd)
    return b"".join(parts)


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
