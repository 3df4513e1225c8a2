"""The wall-clock limit of test code in the test worker: a SIGALRM timer, and a watchdog for code stuck in C.

Loaded by the test worker (`worker.py`) by path, with `wire` and `devnull` (an open /dev/null) set before it runs;
one `Timer` per worker process (it owns SIGALRM). Each case must end within its timeout of the previous verdict.
"""

from __future__ import annotations

import faulthandler
import signal
import time

wire, _DEVNULL = globals()["wire"], globals()["devnull"]  # set by worker.py before this file runs


class Timer:
    """The wall-clock limit of the test code running here: `start(ep, timeout)` arms it, `stop` disarms it.

    When it strikes (SIGALRM), the channel gets the fault ``timeout`` and the fault is raised in the test code;
    every later request on that channel fails at once, and the verdict is the fault even if the test code
    catches it. It strikes again every 50 ms until the test code returns (a test looping in Python ends soon);
    test code stuck in C for long is the pool's to end (it replaces a worker that stopped answering)."""

    def __init__(self) -> None:
        self.ep = None
        self.detail = ""
        signal.signal(signal.SIGALRM, self._strike)

    def start(self, ep, timeout: float) -> None:
        self.ep, self.detail = ep, f"{timeout:g}"
        signal.setitimer(signal.ITIMER_REAL, max(timeout, 1e-3), 0.05)
        # the deadline from outside: a C thread that needs no GIL ends this process if the case is still running
        # WATCHDOG_S after its limit (test code stuck in C, out of the timer's reach); the pool reads its exit
        # status as the job's timeout (`pool.WATCHDOG_EXIT`)
        try:
            faulthandler.dump_traceback_later(timeout + WATCHDOG_S, exit=True, file=_DEVNULL)
        except RuntimeError:  # no thread to be had: the pool's own deadline remains
            pass

    def within(self, limit: float, fn, *args) -> tuple:
        """(`fn(*args)`, the seconds it took) on a clock of `limit` s: Python code is stopped by the timer (its
        `wire.Fault` is the result then), C code (a compile) by the watchdog, which ends this process."""
        clock, started = _Clock(), time.monotonic()
        self.start(clock, limit)
        try:
            result = fn(*args)
        except wire.Fault as f:
            result = f
        finally:
            self.stop()
        return result, time.monotonic() - started

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        self.ep = None

    def _strike(self, *_) -> None:
        ep = self.ep
        if ep is None:
            return
        if ep.fault is None:
            ep.fault = wire.Fault("timeout", self.detail)
        raise ep.fault


class _Clock:
    """The endpoint of a clock that serves no channel (`Timer.within`): only its fault."""

    fault = None


# a case still running this long after its limit ends the worker (faulthandler's exit status 1)
WATCHDOG_S = 0.5
