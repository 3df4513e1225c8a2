"""`Executor`: the parent side — a pool of warm workers, job dispatch, respawn, and turning outcomes into results.

The parent never runs untrusted code and never unpickles anything from a worker (replies are JSON). A slot whose
worker dies or stops answering (for example because a program killed its server) is replaced; its job still gets
a result, and a worker that asks to be replaced (``{"retire": ...}``, after it grew) has its queued jobs re-sent.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from murphy_lab.executor import feedback, pipe
from murphy_lab.executor.types import ExecutionResult, IOTest, Program, TestOutcome, TestSuite

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")
# a worker's exit status when its watchdog ended it (faulthandler's `_exit(1)`; timer.WATCHDOG_S)
WATCHDOG_EXIT = 1
PIPELINE = 2  # jobs queued at each worker, so it never waits for the parent between jobs
JOB_FIELDS = (
    "program",
    "prelude",
    "setup",
    "cases",
    "timeout",
    "entry_points",
    "compare",
    "load_timeout",
    "runner",
)
# job status
SEVERITY = ("syntax", "too_large", "timeout", "memory", "crashed", "output", "exit", "error", "failed")


@dataclass
class _Slot:
    """One live worker process and the bytes read from it so far."""

    proc: subprocess.Popen  # the test worker (holds the tests)
    server: subprocess.Popen  # its program server (runs the programs)
    buf: bytearray
    # the slot's job folder: where the two mount the one the worker makes (or, unisolated, itself)
    job_dir: str
    jobs: deque = field(default_factory=deque)  # indices sent and not yet answered, oldest first
    deadline: float = 0.0  # for the oldest one


class Executor:
    """Run untrusted programs against tests: each slot is a test worker (holds the tests) and a program server
    (runs the programs, never sees a test), joined by a socket; only plain data crosses (docs/executor.md).

    Args:
        timeout: wall-clock seconds per test (the program is loaded once per job, inside its first test's budget).
        memory_mb: address-space limit of each program process (RLIMIT_AS), in MB (+ tmp_mb: its memory cgroup).
        workers: parallel slots (one test at a time each).
        output_kb: largest file (and IO-test stdout) a program may write, in KB (64 MB: LiveCodeBench's harness
            captures stdout uncapped; stderr is never capped, only its end kept for feedback).
        max_processes: processes a test may have at once (as root, counted on its private uid).
        isolate: enter network and mount namespaces (no network; private /tmp) where the kernel allows it.
        drop_user: run tests as a private unprivileged uid; None = yes when running as root.
        tmp_mb: size of each private tmpfs (/tmp, /var/tmp, /dev/shm) and of each slot's job folder, in MB.
        max_program_kb: largest program accepted (larger ones get status `too_large`), in KB.
        max_input_kb: largest total test text of one job (setup, cases, IO inputs and outputs), in KB.
        max_worker_mb: a worker or program server whose resident memory grew past this is replaced after its job.

    Example:
        >>> with Executor(workers=2) as ex:                                            # doctest: +SKIP
        ...     ex.run("def f(x):\\n    return x + 1", ["assert f(1) == 2"]).reward
        1.0
    """

    def __init__(
        self,
        timeout: float = 2.0,
        memory_mb: int = 1024,
        workers: int = 2,
        output_kb: int = 65536,
        max_processes: int = 64,
        isolate: bool = True,
        drop_user: bool | None = None,
        tmp_mb: int = 256,
        max_program_kb: int = 512,
        max_input_kb: int = 64 * 1024,
        max_worker_mb: int = 400,
    ):
        for name, v in (
            ("timeout", timeout),
            ("memory_mb", memory_mb),
            ("workers", workers),
            ("output_kb", output_kb),
            ("max_processes", max_processes),
            ("tmp_mb", tmp_mb),
            ("max_program_kb", max_program_kb),
            ("max_input_kb", max_input_kb),
            ("max_worker_mb", max_worker_mb),
        ):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        self.timeout, self.memory_mb, self.workers = float(timeout), int(memory_mb), int(workers)
        self.output_kb, self.max_processes, self.tmp_mb = int(output_kb), int(max_processes), int(tmp_mb)
        self.isolate, self.drop_user = bool(isolate), drop_user
        self.max_program_kb, self.max_input_kb = int(max_program_kb), int(max_input_kb)
        self.max_worker_mb = int(max_worker_mb)
        self.isolation: dict = {}  # what the workers report as active (network, private_tmp, user, subreaper)
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._warned = False

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def _config(self, job_dir: str) -> str:
        return json.dumps(
            {
                "job_dir": job_dir,
                "memory_mb": self.memory_mb,
                "output_kb": self.output_kb,
                "timeout": self.timeout,
                "max_processes": self.max_processes,
                "isolate": self.isolate,
                "drop_user": self.drop_user,
                "tmp_mb": self.tmp_mb,
                "max_program_kb": self.max_program_kb,
                "max_input_kb": self.max_input_kb,
                "max_worker_mb": self.max_worker_mb,
            }
        )

    def _spawn(self, k: int) -> _Slot:
        """A test worker and its program server, joined by a socket (neither is the other's child).

        Both are pinned to one CPU (slot k -> the k-th CPU we may use): a test and its program hand the CPU to
        each other on every call, which is fastest on one core."""
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # nothing of the caller's environment
        job_dir = tempfile.mkdtemp(prefix="murphy-job-")
        ours, theirs = socket.socketpair()
        procs = []
        try:
            for script, fd, pipes in ((SERVER, theirs.fileno(), False), (WORKER, ours.fileno(), True)):
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-I", script, self._config(job_dir), str(fd), str(_cpu(k))],
                        stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                        stdout=subprocess.PIPE if pipes else subprocess.DEVNULL,
                        env=env,
                        pass_fds=(fd,),
                        start_new_session=True,
                        cwd="/",
                    )
                )
        finally:
            ours.close()
            theirs.close()
        server, proc = procs
        os.set_blocking(proc.stdout.fileno(), False)
        return _Slot(proc, server, bytearray(), job_dir)

    def _start(self) -> None:
        if self._pid != os.getpid():  # we were forked (or unpickled): the workers belong to another process
            self._slots, self._pid = [], os.getpid()
        if self._slots:
            return
        self._slots = [self._spawn(k) for k in range(self.workers)]
        for slot in self._slots:
            hello = self._read_message(slot, time.monotonic() + 60)
            if hello is None:
                raise RuntimeError("executor worker failed to start (see stderr)")
            self.isolation = hello["active"]
            if hello["warnings"] and not self._warned:
                warnings.warn("executor: " + "; ".join(hello["warnings"]), RuntimeWarning, stacklevel=3)
                self._warned = True
        _live.add(self)

    def close(self) -> None:
        """Stop the workers (they remove their temp dirs). The executor restarts them if used again."""
        slots, self._slots = self._slots, []
        for slot in slots:
            try:
                slot.proc.stdin.close()
            except OSError:
                pass
        _reap(slots, grace=2.0)

    def _terminate(self) -> None:
        """Stop the workers now (SIGTERM: each kills its running test and sweeps), without waiting for jobs."""
        slots, self._slots = self._slots, []
        _reap(slots, grace=0.0)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._pid == os.getpid():
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __getstate__(self) -> dict:  # picklable: the settings travel, the worker processes do not
        state = {k: v for k, v in self.__dict__.items() if k not in ("_slots", "_lock")}
        state["_pid"] = -1
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._slots, self._lock = [], threading.Lock()

    def __repr__(self) -> str:
        return (
            f"Executor(timeout={self.timeout:g}, memory_mb={self.memory_mb}, workers={self.workers}, "
            f"isolation={self.isolation or 'not started'})"
        )

    # --- running -----------------------------------------------------------------------------------------------
    def run(self, program: str, tests: TestSuite | Sequence) -> ExecutionResult:
        """Run one program against its tests: `reward` = passed / total (the paper's r(v)), `feedback` = f(v)."""
        return self.run_many([(program, tests)])[0]

    def run_many(
        self, jobs: Sequence[tuple[str, TestSuite | Sequence]], progress: bool = False
    ) -> list[ExecutionResult]:
        """Run (program, tests) jobs in parallel; exactly one result per job, in order, whatever the programs do."""
        prepared = [_prepare(i, job, self.timeout) for i, job in enumerate(jobs)]
        results: list[ExecutionResult | None] = [None] * len(prepared)
        todo = deque(i for i, p in enumerate(prepared) if p["cases"])
        for i, p in enumerate(prepared):
            if not p["cases"]:
                results[i] = ExecutionResult(0.0, 0, 0, "no_tests", feedback.NO_TESTS)
        bar = _progress(len(todo)) if progress else None
        with self._lock:
            try:
                if todo:
                    self._start()
                self._dispatch(prepared, todo, results, bar)
            except BaseException:  # e.g. KeyboardInterrupt: workers may hold queued jobs, or an unread hello
                self._terminate()  # (interrupted while starting): start afresh
                raise
        if bar is not None:
            bar.close()
        return results  # type: ignore[return-value]

    def _dispatch(self, prepared, todo: deque, results: list, bar) -> None:
        """Keep up to `PIPELINE` jobs queued at each worker; collect replies in order; replace dead workers."""
        sel = selectors.DefaultSelector()
        try:
            while todo or any(s.jobs for s in self._slots):
                for k, slot in enumerate(self._slots):
                    while len(slot.jobs) < PIPELINE and todo:
                        i = todo.popleft()
                        if not self._send(slot, prepared[i]):
                            todo.appendleft(i)
                            todo.extendleft(reversed(slot.jobs))  # not started: run them elsewhere
                            self._slots[k] = slot = self._replace(slot, sel)
                            continue
                        if not slot.jobs:
                            slot.deadline = self._deadline(prepared[i])
                        slot.jobs.append(i)
                    if slot.jobs and slot.proc.stdout not in sel.get_map():
                        sel.register(slot.proc.stdout, selectors.EVENT_READ, slot)
                busy = [s for s in self._slots if s.jobs]
                if not busy:
                    continue
                sel.select(timeout=max(0.0, min(s.deadline for s in busy) - time.monotonic()))
                for k, slot in enumerate(self._slots):
                    msg, dead = self._poll(slot) if slot.jobs else (None, False)
                    while msg is not None:  # replies come back in the order the jobs were sent
                        if "retire" in msg:  # it answered its job and asks to be replaced: requeue the rest
                            todo.extendleft(reversed(slot.jobs))
                            slot.jobs.clear()
                            self._slots[k] = slot = self._replace(slot, sel)
                            break
                        i = slot.jobs.popleft()
                        results[i] = self._result(prepared[i], msg)
                        if bar is not None:
                            bar.update(1)
                        if slot.jobs:
                            slot.deadline = self._deadline(prepared[slot.jobs[0]])
                        msg, dead = self._poll(slot) if slot.jobs else (None, dead)
                    if slot.jobs and (dead or time.monotonic() > slot.deadline):
                        i = slot.jobs.popleft()  # the job that was running when the worker was lost
                        why = (
                            "the sandbox worker died while running this program (did it kill its parent?)"
                            if dead
                            else "the sandbox worker stopped answering"
                        )
                        if dead and _exit_status(slot.proc) == WATCHDOG_EXIT:
                            results[i] = self._lost(prepared[i], "", "timeout")
                        else:
                            results[i] = self._lost(prepared[i], why)
                        if bar is not None:
                            bar.update(1)
                        todo.extendleft(reversed(slot.jobs))  # queued behind it, never started
                        self._slots[k] = self._replace(slot, sel)
        finally:
            sel.close()

    def _deadline(self, job: dict) -> float:
        """When to give up on a worker for this job: every test's timeout plus generous slack."""
        return time.monotonic() + len(job["cases"]) * (job["timeout"] + 1.0) + 10.0

    def _replace(self, slot: _Slot, sel) -> _Slot:
        try:
            sel.unregister(slot.proc.stdout)
        except (KeyError, ValueError):
            pass
        _stop(slot.proc, grace=0.0)
        _stop(slot.server, grace=0.0)
        slot.proc.stdout.close()
        shutil.rmtree(slot.job_dir, ignore_errors=True)
        new = self._spawn(self._slots.index(slot) if slot in self._slots else 0)
        if self._read_message(new, time.monotonic() + 60) is None:
            raise RuntimeError("executor worker failed to restart")
        return new

    # --- the pipe: 4-byte length + JSON (pipe.py) --------------------------------------------------------------
    @staticmethod
    def _send(slot: _Slot, job: dict) -> bool:
        try:
            pipe.send(slot.proc.stdin, {k: job[k] for k in JOB_FIELDS})
            return True
        except (BrokenPipeError, OSError):
            return False

    @staticmethod
    def _poll(slot: _Slot) -> tuple[dict | None, bool]:
        """Read what is available; return (a complete message or None, whether the worker is gone)."""
        dead = False
        while True:
            try:
                chunk = os.read(slot.proc.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                dead = True
                break
            slot.buf += chunk
        msg = pipe.take(slot.buf)
        return (msg, False) if msg is not None else (None, dead)

    def _read_message(self, slot: _Slot, deadline: float) -> dict | None:
        with selectors.DefaultSelector() as sel:
            sel.register(slot.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                msg, dead = self._poll(slot)
                if msg is not None or dead:
                    return msg
                sel.select(timeout=max(0.0, deadline - time.monotonic()))
        return None

    # --- results -----------------------------------------------------------------------------------------------
    def _result(self, job: dict, msg: dict) -> ExecutionResult:
        outcomes = [
            TestOutcome(
                test,
                o["status"],
                *(feedback.valid_text(o.get(k, "")) for k in ("detail", "assertion", "got")),
            )
            for test, o in zip(job["tests"], msg["outcomes"])
        ]
        return self._summarize(outcomes, msg.get("runtime_s", 0.0), job["timeout"])

    def _lost(self, job: dict, why: str, status: str = "crashed") -> ExecutionResult:
        """Every test of a job whose worker was lost: `crashed`, or `timeout` when the worker's watchdog ended it
        (a case ran past its limit in C, where the timer cannot reach; the verdicts it held are lost with it)."""
        if status == "timeout":
            outcomes = [TestOutcome(t, "timeout", f"{job['timeout']:g}") for t in job["tests"]]
            return self._summarize(outcomes, 0.0, job["timeout"])
        outcomes = [TestOutcome(t, "crashed", why) for t in job["tests"]]
        res = self._summarize(outcomes, 0.0, job["timeout"])
        res.feedback = f"{feedback.HEADER}\n{why}"
        return res

    def _summarize(self, outcomes: list[TestOutcome], runtime_s: float, timeout: float) -> ExecutionResult:
        passed, total = sum(o.passed for o in outcomes), len(outcomes)
        bad = {o.status for o in outcomes if not o.passed}
        status = next((s for s in SEVERITY if s in bad), "failed") if bad else "passed"
        text = feedback.render(outcomes, timeout, self.memory_mb)
        # r(v) = p / n
        return ExecutionResult(passed / total, passed, total, status, text, outcomes, runtime_s)


def _prepare(i: int, job, timeout: float) -> dict:
    """Validate one (program, tests) job and turn it into the worker's wire format (`timeout`: the Executor's,
    for a suite that sets none)."""
    if not isinstance(job, (tuple, list)) or len(job) != 2:
        raise TypeError(f"jobs[{i}] must be a (program, tests) pair, got {type(job).__name__}")
    program, tests = job
    if not isinstance(program, str):
        raise TypeError(f"jobs[{i}]: program must be a str, got {type(program).__name__}")
    suite = TestSuite.of(tests)
    cases = []
    for k, t in enumerate(suite.cases):
        if isinstance(t, IOTest):
            cases.append(["io", str(t.input), str(t.output)])
        elif isinstance(t, str):
            cases.append(["assert", t])
        else:
            raise TypeError(f"jobs[{i}]: test {k} must be an assert string or IOTest, got {type(t).__name__}")
    prelude, code = Program.split(program)
    return {
        "program": code,
        "prelude": prelude,
        "setup": suite.setup or "",
        "cases": cases,
        "tests": list(suite.cases),
        "timeout": float(suite.timeout or timeout),
        "entry_points": list(suite.entry_points),
        "compare": suite.compare,
        "load_timeout": suite.load_timeout,
        "runner": suite.runner,
    }


def _cpu(k: int) -> int:
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[k % len(cpus)]


def _reap(slots: list, grace: float) -> None:
    """Stop each slot's worker and server (`_stop` with `grace`), close its pipe and remove its job folder."""
    for slot in slots:
        _stop(slot.proc, grace=grace)
        _stop(slot.server, grace=grace)
        slot.proc.stdout.close()
        shutil.rmtree(slot.job_dir, ignore_errors=True)


def _stop(proc: subprocess.Popen, grace: float) -> None:
    """Let a worker exit by itself for `grace` s, then SIGTERM (it cleans up), then SIGKILL; then remove the
    server's cgroups if it could not (they are named after its pid)."""
    try:
        _stop_process(proc, grace)
    finally:
        for ctrl in ("memory", "pids", "cpu", "cpuset"):
            try:
                os.rmdir(f"/sys/fs/cgroup/{ctrl}/murphy-{proc.pid}")
            except OSError:
                pass


def _stop_process(proc: subprocess.Popen, grace: float) -> None:
    for step, wait in ((None, grace), (proc.terminate, 2.0), (proc.kill, None)):
        if step is not None:
            try:
                step()
            except OSError:
                pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _progress(n: int):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=n, desc="executing", leave=False)


_live: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for ex in list(_live):
        ex.close()


def _exit_status(proc) -> int | None:
    """The exit status of a worker whose pipe closed (it has exited or is about to)."""
    try:
        return proc.wait(timeout=2)
    except Exception:  # noqa: BLE001 - still running: not the watchdog
        return None
