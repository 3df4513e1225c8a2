"""The test worker: holds the tests, runs them (`harness.py`), and writes the outcomes.

Started by `pool.Executor` as ``python -I worker.py '<config json>' <socket fd>``; speaks length-prefixed JSON
with the pool on the pipes it was started with (moved above fd 2, so test code meets /dev/null there) and drives
its program server (`server.py`) over the socket. This process never executes program code: the program runs in a
program process of the server, which never receives a test or an expected value.

A job: the worker checks sizes, compiles the prelude, the tests (cached) and a small program on the first case's
clock (`protocol.py`), and computes which names the tests take from the program (`testcode.program_names`,
cached). Its assert tests: a socketpair is the channel; one end goes to the server, which forks a program process
that loads the program and serves it there; the test code runs here, in the job folder, in a harness made fresh
for the job, against the other end (`harness.run_cases`), each case within the wall-clock timeout of the previous
verdict (`timer.Timer`); then the server kills and sweeps the program process and reports its wait status. One IO
test: the server runs the program as a script on the input and returns how it ended and its stdout and stderr;
the worker compares stdout (exit status 0), on its timer, or reports the error.

A job that cannot be run (invalid text, too large, a fault of ours) gets its own outcomes; the worker goes on. A
worker past ``max_worker_mb`` (or whose server died) answers its job, then asks to be replaced (``{"retire": ...}``).
"""

from __future__ import annotations

import builtins
import fcntl
import functools
import gc
import importlib.util
import json
import os
import resource
import signal
import socket
import struct
import sys
import tempfile
import time
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, file: str, **names):
    """A module of ours, loaded by path with `names` set before it runs, and its own builtins."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, file))
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = dict(vars(builtins))  # its own snapshot
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


sandbox = _load("_murphy_sandbox", "sandbox.py")
wire = _load("_murphy_wire", "wire.py")
pipe = _load("_murphy_pipe", "pipe.py")  # the pool's jobs in, our replies out
protocol = _load("_murphy_protocol", "protocol.py")
testcode = _load("_murphy_testcode", "testcode.py")  # compiles tests and reads their names (pure)
io_compare = _load("_murphy_io_compare", "io_compare.py")  # an IO test's stdout against the expected output


def _code(file: str):
    """A module of ours compiled once, to be executed anew for every job (`fresh_harness`)."""
    with open(os.path.join(_HERE, file), encoding="utf-8") as f:
        return compile(f.read(), os.path.join(_HERE, file), "exec", dont_inherit=True)


STANDIN, CHANNEL, HARNESS = _code("standin.py"), _code("channel.py"), _code("harness.py")
MB = 1 << 20
_DEVNULL = os.open(os.devnull, os.O_RDWR)
timer = _load("_murphy_timer", "timer.py", wire=wire, devnull=_DEVNULL)  # the wall-clock limit of test code
compile_test = functools.lru_cache(maxsize=512)(testcode.compile_test)  # test code repeats across samples
_scope = functools.lru_cache(maxsize=2048)(testcode.scope)
_called = functools.lru_cache(maxsize=256)(testcode.called)
_compile_prelude = functools.lru_cache(maxsize=64)(protocol.compile_program)  # a benchmark's header (trusted)


def fresh_harness():
    """The harness for one job, made anew with its channel and stand-in modules: nothing a job did to their
    classes, comparisons or builtins, nor any value it decoded, reaches the next one (0.1 ms; a fork per job cost
    1.2 ms of CPU)."""
    standin = types.ModuleType("_murphy_standin")
    standin.__dict__.update(__builtins__=dict(vars(builtins)), wire=wire)
    exec(STANDIN, standin.__dict__)
    channel = types.ModuleType("_murphy_channel")
    channel.__dict__.update(__builtins__=dict(vars(builtins)), wire=wire, standin=standin)
    exec(CHANNEL, channel.__dict__)
    # of `testcode`, only the names compiled test code carries (the module itself stays out of the test's reach)
    names = types.SimpleNamespace(
        TEST_FILE=testcode.TEST_FILE, SETUP_FILE=testcode.SETUP_FILE, CHECK=testcode.CHECK
    )
    module = types.ModuleType("_murphy_harness")
    module.__dict__.update(
        __builtins__=dict(vars(builtins)), wire=wire, channel_module=channel, testcode=names
    )
    exec(HARNESS, module.__dict__)
    return module


harness = fresh_harness()  # for its constants (`LOADING`); each job runs in a harness of its own
PROGRAM_MODULE = harness.channel_module.PROGRAM_MODULE


@functools.cache
def _pytest_run():
    """The pytest runner (`pytest_run.py`, which imports pytest), loaded at the first pytest job; its folder (the
    test file, rootdir, ini) made in `PRIVATE_DIR`: in the job folder the program would read the test."""
    runner = _load(
        "_murphy_pytest_run", "pytest_run.py", wire=wire, scope=_scope, traceback_text=harness.traceback_text
    )
    shared, tempfile.tempdir = tempfile.tempdir, PRIVATE_DIR
    try:
        runner._folder()  # made once, kept by the runner
    finally:
        tempfile.tempdir = shared
    return runner


class ServerLost(Exception):
    """The program server died (e.g. a program killed its parent)."""


class Worker:
    def __init__(self, cfg: dict, sock: socket.socket):
        self.cfg, self.sock = cfg, sock
        self.active, self.warnings = sandbox.isolate(cfg, "worker")  # our own root, uid, filter
        tree = sandbox.JOB_TREE  # the job folder, for the server to mount at the same path
        self._ps_send(b"J%d" % sandbox.WORKER_UID, (tree,) if tree is not None else ())
        if tree is not None:
            os.close(tree)
        hello = self._ps_recv(60)
        # the server meets the same kernel: say each refusal once
        self.active = {**hello["active"], **self.active}
        self.warnings = list(dict.fromkeys(self.warnings + hello["warnings"]))
        self.retire = ""  # why this worker should be replaced after the current job
        self.unread = 0  # replies of the server to `finish` requests not read yet
        self.compiling = 0.0  # seconds compiling this job's program took here (`compile_program`)
        self.grew = False  # this worker or its server grew past max_worker_mb: replace it after this job
        global PRIVATE_DIR  # ours alone (our private /tmp): for files a program must never see (a test file)
        PRIVATE_DIR = tempfile.mkdtemp(prefix="murphy-worker-")
        os.environ.clear()
        os.environ.update(sandbox.CHILD_ENV, HOME=cfg["job_dir"], TMPDIR=cfg["job_dir"])
        # the job folder is the test code's working directory and tempfile's directory, as the program's: a file
        # one side writes, the other reads (and we write nothing there: the tests and their answers stay here)
        os.chdir(cfg["job_dir"])
        tempfile.tempdir = cfg["job_dir"]
        gc.collect()
        gc.freeze()

    # --- the socket to the program server -----------------------------------------------------------------
    def _ps_send(self, obj: dict | bytes, fds: tuple[int, ...] = ()) -> None:
        """A request: JSON, or the bytes of one of the server's fixed-size requests (ASSERT, FINISH)."""
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode("utf-8", "surrogatepass")
        data = struct.pack("<I", len(data)) + data
        try:
            if fds:
                sent = socket.send_fds(self.sock, [data[:4096]], list(fds))
                self.sock.sendall(data[sent:])
            else:
                self.sock.sendall(data)
        except OSError as e:
            raise ServerLost(str(e)) from None

    def _ps_recv(self, timeout: float | None = None) -> dict:
        self.sock.settimeout(timeout)
        try:
            head = self._exact(4)
            (n,) = struct.unpack("<I", head)
            return json.loads(self._exact(n))
        except (OSError, ValueError) as e:
            raise ServerLost(str(e)) from None

    def _exact(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ServerLost("the program server closed its socket")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    # --- jobs -------------------------------------------------------------------------------------------------
    def prepare(self, job: dict):
        """The job's cases compiled and the program file, or (every case's outcome) when it cannot run."""
        n = len(job["cases"])
        problem = _too_large(job, self.cfg)
        if problem:
            return [{"status": "too_large", "detail": problem}] * n
        prelude, error = (None, None)
        if job["prelude"]:
            prelude, error = _compile_prelude(job["prelude"], protocol.PRELUDE)
            if error:
                return [{"status": "error", "detail": f"the task's prelude does not compile: {error}"}] * n
        code = self.compile_program(job) if len(job["program"]) <= protocol.WORKER_COMPILES else None
        if job.get("runner") == "pytest":  # pytest reads the file and its test ids itself (pytest_run.py)
            _pytest_run()  # imported once, outside any case's clock
            return None, [None] * n, protocol.pack(prelude, job["program"], code)
        setup = job["setup"]
        try:
            setup_code = compile_test(setup, testcode.SETUP_FILE) if setup.strip() else None
        except (SyntaxError, ValueError, UnicodeError, RecursionError, MemoryError) as e:
            return [{"status": "error", "detail": f"the test setup does not compile: {e}"}] * n
        cases = []
        for case in job["cases"]:
            try:
                cases.append(compile_test(case[1], testcode.TEST_FILE) if case[0] == "assert" else None)
            except (SyntaxError, ValueError, UnicodeError, RecursionError, MemoryError) as e:
                cases.append({"status": "error", "detail": f"the test does not compile: {e}"})
        return setup_code, cases, protocol.pack(prelude, job["program"], code)

    def compile_program(self, job: dict):
        """The program compiled here, on the first case's clock (C code the timer cannot stop: the watchdog ends this
        worker past that limit plus 0.5 s, and the job is a `timeout`; 1.2 KB of nested ``try/finally`` takes
        seconds). None when it does not compile here: its program process compiles it after its prelude, which may
        take it over (lcb_runner's wrapper makes a top-level ``return`` legal)."""
        compiled, self.compiling = _TIMER.within(
            job.get("load_timeout") or job["timeout"], protocol.compile_program, job["program"]
        )
        return compiled[0] if type(compiled) is tuple and compiled[1] is None else None

    def budget(self, limit: float) -> float:
        """The first case's limit, less what compiling the program here took (then the whole limit)."""
        spent, self.compiling = self.compiling, 0.0
        return max(limit - spent, 1e-3)

    def run_job(self, job: dict) -> list[dict]:
        """All tests of one job. The program is sent to the server once; its assert tests share one program
        process, loaded once, until a test ends it (then a fresh one takes the rest). A LiveCodeBench job runs
        with lcb_runner's int-digit limit here too (its tests' literals and values are compared under it)."""
        sys.set_int_max_str_digits(LCB_INT_DIGITS if job["compare"] == "livecodebench" else _INT_DIGITS)
        try:
            prepared = self.prepare(job)
        except Exception as e:  # noqa: BLE001 - a bad job fails alone
            prepared = [{"status": "error", "detail": f"the job could not be prepared: {e!r}"[:2000]}] * len(
                job["cases"]
            )
        if isinstance(prepared, list):
            return prepared
        setup_code, codes, program_file = prepared
        # cases judged without running (bad text)
        decided = [c if isinstance(c, dict) else None for c in codes]
        outcomes: list[dict | None] = list(decided)
        self.program = os.memfd_create("program", os.MFD_CLOEXEC)  # read only by the program processes
        try:
            data = program_file
            while data:
                data = data[os.write(self.program, data) :]
            pending = [i for i, c in enumerate(job["cases"]) if outcomes[i] is None and c[0] == "assert"]
            runner = fresh_harness()
            while pending and not self.retire:
                got = self.run_asserts(
                    job, runner, setup_code, [(codes[i], job["cases"][i][1]) for i in pending]
                )
                for i, out in zip(pending, got):
                    outcomes[i] = out
                if got and got[-1].get("assertion") == harness.LOADING:  # the same for every test
                    for i in pending[len(got) :]:
                        outcomes[i] = got[-1]
                    break
                pending = pending[len(got) :]
            for i, c in enumerate(job["cases"]):
                if outcomes[i] is None and c[0] == "io" and not self.retire:
                    outcomes[i] = self.run_io(job, c)
            self._finished()  # nothing of the job survives its reply
        except ServerLost as e:
            self.retire = f"program server lost: {e}"
            # it died during this job (its program may have killed it): no verdict of this job counts, even one
            # we already recorded (a program that kills the server and then answers must not pass)
            outcomes = list(decided)
        finally:
            os.close(self.program)
        return [o if o is not None else _lost() for o in outcomes]

    def run_asserts(self, job: dict, runner, setup_code, cases: list) -> list[dict]:
        """Assert `cases` ((code, source) each): the server's program process serves the program on one end of a
        socketpair, the test code runs here on the other (`harness.run_cases`; this process never runs program
        code). Returns the outcomes of a prefix of `cases` (all of them unless one ended the program process)."""
        timeout = job["timeout"]
        mine, theirs = socket.socketpair()
        try:
            cpu = timeout * len(cases) + (job.get("load_timeout") or 0)
            self._ps_send(protocol.ASSERT.pack(b"A", cpu), (theirs.fileno(), self.program))
        finally:
            theirs.close()
        verdicts: list[dict] = []
        channel = runner.channel_module.Channel(mine.fileno())
        pytest_run = _pytest_run() if job.get("runner") == "pytest" else None
        wanted, modules = (
            ((), ())
            if pytest_run
            else testcode.program_names(
                (job["setup"], *(src for _, src in cases)), tuple(job["entry_points"]), _scope, _called
            )
        )
        load = job.get("load_timeout")

        def loaded() -> None:  # the program is loaded: the first case's own limit starts now
            _TIMER.stop()
            _TIMER.start(channel, timeout)

        plan = types.SimpleNamespace(
            setup=job["setup"],
            setup_code=setup_code,
            cases=cases,
            wanted=wanted,
            modules=modules,
            compare=job["compare"],
            loaded=loaded if load else None,
            pytest=pytest_run,
        )

        def report(status: str, detail: str, assertion: str) -> None:
            _TIMER.stop()
            verdicts.append({"status": status, "detail": detail, "assertion": assertion})
            # ours: room to go on, then a fresh worker (measured here: the test code's own MemoryError; a
            # program that raises MemoryError retires nothing)
            if status == "memory" and detail == harness.WORKER_MEMORY:
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
                self.grew = True
            _TIMER.start(channel, timeout)  # the next case (each case's limit runs from the previous verdict)

        quiet = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = _QUIET  # what the test code prints goes nowhere
        try:
            _TIMER.start(channel, self.budget(load or timeout))  # loading: its own limit, or the first case's
            runner.run_cases(channel, report, plan)
        except wire.Fault:  # the limit struck between cases
            pass
        finally:
            _TIMER.stop()
            sys.stdout, sys.stderr = quiet
            mine.close()
            sys.modules.pop(PROGRAM_MODULE, None)
        self._ps_send(protocol.FINISH)
        self.unread += 1
        out, fault = verdicts, channel.fault
        loading = bool(out) and out[-1]["assertion"] == harness.LOADING
        if fault is not None and fault.status == "timeout" and (not out or out[-1]["status"] != "timeout"):
            out.append({"status": "timeout", "detail": f"{timeout:g}", "assertion": ""})  # between two cases
        elif len(out) < len(cases) and fault is None and not loading:
            out.append({"status": "crashed", "detail": "the test ended without a verdict", "assertion": ""})
        if out and out[-1]["status"] == "lost":  # the program process ended: how it ended is the outcome
            done = self._finished()
            ended = _ended(done["status"], done.get("oom", False), timeout, self.cfg)
            out[-1] = dict(ended, assertion=out[-1]["assertion"])
        return out

    def _finished(self) -> dict:
        """The server's replies to our `finish` requests, read when needed (the last one is returned)."""
        done = {}
        while self.unread:
            self.sock.settimeout(60)
            try:
                _, status, oom, rss = protocol.FINISHED.unpack(self._exact(protocol.FINISHED.size))
            except (OSError, struct.error) as e:
                raise ServerLost(str(e)) from None
            done = {"status": status, "oom": oom, "rss_mb": rss}
            self.unread -= 1
            self._watch(done)
        return done

    def run_io(self, job: dict, case: list) -> dict:
        """One IO test: the server runs the program on the input; the expected output stays here. Exit status 0:
        stdout is compared; any other ending is what the kernel or the server's timer says (stderr: feedback)."""
        timeout = job["timeout"]
        self._finished()
        started, limit = time.monotonic(), self.budget(timeout)
        self._ps_send(
            protocol.IO.pack(b"I", limit) + case[1].encode("utf-8", "surrogatepass"), (self.program,)
        )
        self.sock.settimeout(timeout + 30)
        try:
            _, timed_out, status, oom, rss, n_out, n_err = protocol.RAN.unpack(self._exact(protocol.RAN.size))
            out, err = self._exact(n_out), self._exact(n_err)
        except (OSError, struct.error) as e:
            raise ServerLost(str(e)) from None
        self._watch({"rss_mb": rss})
        if timed_out:
            return {"status": "timeout", "detail": f"{timeout:g}"}
        if os.WIFEXITED(status) and os.waitstatus_to_exitcode(status) == protocol.SYNTAX_EXIT:
            # the compile error, written before the program ran
            detail = err.decode("utf-8", "replace").strip()
            return {"status": "syntax", "detail": detail[-protocol.MAX_DETAIL :]}
        if not os.WIFEXITED(status) or os.waitstatus_to_exitcode(status) != 0:
            ended = _ended(status, oom, timeout, self.cfg)
            if ended["status"] == "exit":  # a traceback on stderr, or a nonzero exit status
                detail = err.decode("utf-8", "replace").strip() or f"exit status {ended['detail']}"
                return {"status": "error", "detail": detail[-protocol.MAX_DETAIL :]}
            return ended
        # decoding and comparing are ours, on our timer: the case ends by its limit plus the margin (what the
        # comparison reads of the output is bounded by the expected output: io_compare)
        got = out.decode("utf-8", "replace")  # C, linear: at most `output_kb`
        left = max(started + limit + timer.WATCHDOG_S - time.monotonic(), 0.05)
        same, _ = _TIMER.within(left, io_compare.io_equal, got, case[2], job["compare"])
        if type(same) is not bool:  # the limit struck
            return {"status": "timeout", "detail": f"{timeout:g}"}
        return {"status": "passed" if same else "failed", "detail": "", "assertion": "", "got": got[:4000]}

    def _watch(self, reply: dict) -> None:
        limit = self.cfg["max_worker_mb"]
        if reply.get("rss_mb", 0) > limit or sandbox.rss_mb(_STATM) > limit:
            self.grew = True

    def shutdown(self) -> None:
        self.sock.close()  # at exit (an error here would change nothing)


def _too_large(job: dict, cfg: dict) -> str:
    """Why a job is refused before it runs (its program or inputs exceed the limits), or ''."""
    limit = cfg["max_program_kb"] * 1024
    size = len(job["program"].encode("utf-8", "surrogatepass"))
    if size > limit:
        return f"the program is {size:,} bytes; the limit is {limit:,} bytes"
    total = len(job["setup"]) + sum(len(x) for case in job["cases"] for x in case[1:])
    if total > cfg["max_input_kb"] * 1024:
        return f"the tests are {total:,} characters; the limit is {cfg['max_input_kb'] * 1024:,}"
    return ""


def _lost() -> dict:
    return {"status": "crashed", "detail": "the program server died (did the program kill its parent?)"}


def _ended(status: int, oom: bool, timeout: float, cfg: dict) -> dict:
    """The outcome of a program process that ended without finishing the test, from its wait status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return {"status": "timeout", "detail": f"{timeout:g}"}
        if sig == signal.SIGXFSZ:
            return {"status": "output", "detail": str(cfg["output_kb"])}
        if sig == signal.SIGKILL and oom:
            return {"status": "memory", "detail": ""}
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return {"status": "crashed", "detail": name}
    return {"status": "exit", "detail": str(os.waitstatus_to_exitcode(status))}


_STATM = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)  # ours, for `sandbox.rss_mb`
_INT_DIGITS = sys.get_int_max_str_digits()  # Python's default (4,300)
LCB_INT_DIGITS = 50_000  # lcb_runner's `sys.set_int_max_str_digits(50000)` (its testing_util.py, at import)
# this worker's own directory, which no program sees (`Worker.__init__`): never the job folder
PRIVATE_DIR = ""
_TIMER = timer.Timer()
_QUIET = open(_DEVNULL, "w", closefd=False)  # sys.stdout and sys.stderr while test code runs


def _own_stdio() -> tuple[int, object]:
    """Our pipes to the pool moved above fd 2, and fds 0 and 1 on /dev/null: test code that reads stdin or writes
    to fd 1 meets nothing of ours (the pool's jobs and our replies)."""
    jobs = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    replies = os.fdopen(fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3), "wb")
    os.dup2(_DEVNULL, 0)
    os.dup2(_DEVNULL, 1)
    sys.stdin, sys.stdout = open(_DEVNULL, closefd=False), _QUIET  # noqa: SIM115 - for the life of the process
    return jobs, replies


def main() -> None:
    cfg = json.loads(sys.argv[1])
    sock = socket.socket(fileno=int(sys.argv[2]))
    if len(sys.argv) > 3 and cfg.get("pin", True):
        try:
            os.sched_setaffinity(0, {int(sys.argv[3])})  # see pool.Executor._spawn
        except OSError:
            pass
    stdin, stdout = _own_stdio()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a notebook stops the parent, not the sandbox
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sandbox.not_dumpable()
    worker = Worker(cfg, sock)
    sandbox.limit_worker_memory(cfg, _STATM)
    try:
        pipe.send(stdout, {"ready": True, "active": worker.active, "warnings": worker.warnings})
        while True:
            job = pipe.recv(stdin)
            if job is None:
                return
            t0 = time.perf_counter()
            try:
                outcomes = worker.run_job(job)
            except Exception as e:  # noqa: BLE001 - a fault of ours fails this job alone, and retires us
                outcomes = [{"status": "crashed", "detail": f"executor fault: {e!r}"[:2000]}] * len(
                    job["cases"]
                )
                worker.retire = worker.retire or "executor fault"
            pipe.send(stdout, {"outcomes": outcomes, "runtime_s": time.perf_counter() - t0})
            if worker.retire or worker.grew:
                pipe.send(stdout, {"retire": worker.retire or "memory grew"})
                return
    finally:
        worker.shutdown()


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
