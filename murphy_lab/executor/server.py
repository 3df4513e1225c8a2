"""The program server: the only process that starts program processes. It never sees a test.

Started by `pool.Executor` as ``python -I server.py '<config json>' <socket fd>``, beside its test worker
(`worker.py`), which is the other end of the socket. It never receives a test or an expected value, and never
reads a program either: the program comes as a file descriptor (a memfd) that only the program process reads. So
nothing a program reads in its own memory or files holds an answer, or another job's program.
Requests (length-prefixed JSON; the channel to the test process travels as a file descriptor):

    {"op": "assert", "cpu": s} + channel fd, program fd   fork a program process serving the program's names (no
                                             reply; a syntax error is sent on the channel as the program's hello)
    {"op": "finish"}                         kill it and everything it started, clean up -> {"status": ...}
    {"op": "io", "input": ..., "timeout": ...} + program fd   run it as a script on that stdin -> status, stdout

A program process (`serve_program`) loads the program as module ``solution`` and answers calls on the channel
(`wire.Endpoint`): only plain data crosses. It runs in the sandbox of `sandbox.enter`.
"""

from __future__ import annotations

import builtins
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
import time
import traceback
import types

WARM_MODULES = (
    "abc array bisect collections collections.abc copy dataclasses datetime decimal enum fractions functools "
    "hashlib heapq io itertools math operator re string textwrap typing unicodedata"
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
PROGRAM_FILE = "solution.py"
PROGRAM_MODULE = "solution"
MAX_DETAIL = 2000
_ModuleType, _isinstance, _exit = types.ModuleType, isinstance, os._exit
_DEVNULL = os.open(os.devnull, os.O_RDWR)
_CHILD_STDIO = tuple(
    open(fd, mode, encoding="utf-8", errors="replace", closefd=False)
    for fd, mode in ((0, "r"), (1, "w"), (2, "w"))
)


# --- the program process ----------------------------------------------------------------------------------------
def compile_program(program: str):
    """(code, None) or (None, the error text). Compiling executes nothing."""
    try:
        return compile(program, PROGRAM_FILE, "exec"), None
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        return None, "".join(traceback.format_exception_only(type(e), e)).strip()
    except UnicodeError as e:  # lone surrogates
        return None, f"SyntaxError: the program is not valid text ({type(e).__name__}: {e})"[:MAX_DETAIL]
    except (MemoryError, RecursionError) as e:
        return None, f"{type(e).__name__}: the program is too large or too deeply nested to compile"


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


def serve_program(code, program: str, fd: int) -> None:
    """Load the program, send its names, answer the test process's calls until it hangs up."""
    ep = wire.Endpoint(fd, trace_files=(PROGRAM_FILE,))

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

    ep.check = check
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
    check(None)
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
        self.active, self.warnings = sandbox.isolate(cfg, hide=True)
        cfg["active"] = self.active
        self.uid = 200_000 + int.from_bytes(os.urandom(4), "little") % 2_000_000_000  # private: no one has it
        self.base = os.path.join("/tmp", f"murphy-{os.getpid()}-{self.uid}")
        os.makedirs(self.base, mode=0o711, exist_ok=True)
        self.cgroups = []
        if cfg["isolate"] and os.geteuid() == 0:  # each program process joins it (the server stays outside)
            self.cgroups = sandbox.make_cgroup(
                f"murphy-{os.getpid()}", cfg["memory_mb"] + cfg["tmp_mb"], cfg["max_processes"]
            )
        self.active["cgroup"] = bool(self.cgroups)
        self.me, self.n = os.getpid(), 0
        self.current: int | None = None
        os.environ.clear()
        os.environ.update(sandbox.CHILD_ENV)
        gc.collect()
        gc.freeze()

    def recv(self) -> tuple[dict | None, list[int]]:
        head, fds, _, _ = socket.recv_fds(self.sock, 4, 4)
        if len(head) < 4:
            head += self._exact(4 - len(head))
        (n,) = struct.unpack("<I", head)
        return json.loads(self._exact(n)), fds

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
        while True:
            try:
                msg, fds = self.recv()
            except (EOFError, ConnectionError, OSError):
                return
            op = msg.get("op")
            if op == "assert":  # fds: the channel, the program (a memfd the worker wrote; we never read it)
                self.start(fds[1], msg["cpu"], {0: _DEVNULL, 1: _DEVNULL, 2: _DEVNULL, 3: fds[0], 4: fds[1]})
                for fd in fds:
                    os.close(fd)
            elif op == "finish":
                status = self.finish()
                self.send({"status": status, "oom": self.oom(), "rss_mb": _rss_mb()})
            elif op == "io":
                self.send(self.run_io(msg["input"], msg["timeout"], fds[0]))
                os.close(fds[0])
            else:
                for fd in fds:
                    os.close(fd)
                self.send({"error": f"unknown request {op!r}"})

    def _workdir(self) -> str:
        self.n += 1
        workdir = os.path.join(self.base, str(self.n))
        os.mkdir(workdir, 0o700)
        return workdir

    def start(self, program: int, cpu: float, fds: dict, script: bool = False) -> int:
        """Fork one sandboxed program process: it reads the program from fd 4, then serves calls on fd 3 (or runs
        as a script, reporting on fd 3). This server never holds a program: nothing of one job is in the memory
        the next job's process is forked from."""
        workdir = self._workdir()
        self.workdir, self.fail0 = workdir, _failcnt(self.cgroups)
        pid = os.fork()
        if pid == 0:
            try:
                sandbox.enter(
                    dict(self.cfg, cpu=int(cpu) + 2), workdir, self.uid, {**fds, 4: program}, self.cgroups
                )
                sys.stdin, sys.stdout, sys.stderr = _CHILD_STDIO
                sys.argv = [PROGRAM_FILE]
                source = os.pread(4, os.fstat(4).st_size, 0).decode("utf-8", "surrogatepass")
                os.close(4)
                code, error = compile_program(source)
                if script:
                    run_script(code, source, 3, error)
                elif code is None:
                    wire.Endpoint(3).send(["loadfail", "syntax", error])
                else:
                    serve_program(code, source, 3)
            finally:
                os._exit(70)
        self.current = pid
        return pid

    def oom(self) -> bool:
        return _failcnt(self.cgroups) > self.fail0

    def finish(self) -> int:
        """Kill the program process and every process it left (they are all ours: subreaper); its wait status."""
        pid, self.current = self.current, None
        if pid is None:
            return 0
        _kill_group(pid)
        _, status = os.waitpid(pid, 0)
        self.sweep()
        sandbox.remove_tree(self.workdir)
        sandbox.empty_private_dirs(keep=(self.base,))
        return status

    def sweep(self) -> None:
        path = f"/proc/{self.me}/task/{self.me}/children"
        for _ in range(10_000):
            _reap()
            try:
                with open(path) as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                return
            if not kids:
                return
            for k in kids:
                _kill_group(k)
            time.sleep(0.0005)

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
        pid = self.start(program, timeout, {0: fin, 1: fout, 2: _DEVNULL, 3: w}, script=True)
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


def _kill_group(pid: int) -> None:
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> None:
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return


def _rss_mb() -> float:
    """This process's resident memory now (not its peak), in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def _failcnt(cgroups: list[str]) -> int:
    """How often the memory cgroup refused memory so far (a program killed for memory shows here)."""
    for d in cgroups:
        try:
            with open(os.path.join(d, "memory.failcnt")) as f:
                return int(f.read())
        except (OSError, ValueError):
            pass
    return 0


def main() -> None:
    cfg = json.loads(sys.argv[1])
    sock = socket.socket(fileno=int(sys.argv[2]))
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
        sandbox.remove_cgroups(server.cgroups)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt, ConnectionError):
        pass
