"""A pytest test file run by pytest itself, in the test worker, against the program in its program process.

Loaded by the test worker (`worker.py`) by path at its first pytest job (``TestSuite(runner="pytest")``: `setup` is
the test file, each case one of its test ids), with `wire`, `scope` (`testcode.scope`) and `traceback_text`
(`harness.traceback_text`) set before it runs; `harness.run_cases` hands such a job here once the program has
loaded. The file is written to a directory of this
worker's own and run by ``pytest.main`` in this process with a small plugin (`_Session`); module ``solution`` is
the channel's proxy (`channel.SolutionModule`): the program's functions and classes are served by its program
process, as for every other test, and the worker never runs program code. So collection, fixtures of every scope
(autouse, yield teardown), parametrize, marks, classes, inheritance, unittest classes, runtime skips, xfail and
``capsys`` are pytest's own.

One verdict per test id, in the suite's order, each within the case's clock of the previous verdict (the first
one's clock covers loading the program, starting pytest and collecting). A test id passes when pytest counts it
as no failure — passed, skipped, xfailed or a non-strict xpass (pytest's exit status 0) — with nothing faulted on
the channel; it fails with pytest's first failing phase (an assert of the test: ``failed``; any other exception,
and any failure in setup or teardown: ``error``). A fault of the channel (the limit, the program process ending, a
reply refused) decides the test that met it, even if the test caught it, and stops the session: the worker runs
the remaining ids in a fresh program process and a fresh session. A file pytest cannot collect with this program
is the loading verdict of every id; an id it does not collect is an error; ids it collects beyond the suite's do
not run.

What the program cannot do: reach pytest (it lives in another process and sends plain data only: an exception
crosses as a builtin class or our subclass named like the program's, never as pytest's `Skipped`, `Failed`, `Exit`
or `XFailed` or as `unittest.SkipTest`), write a conftest or an ini file (``--noconftest``, our own ``-c`` file and ``--rootdir``, plugin
autoloading off, a directory the program process cannot see), or choose a verdict through pytest's exit status
(never read: the verdicts come from the reports of each phase, and a test id that did not run to its end fails).

A collection job (the single case `COLLECT`, made by `tasks.convert.pytest_file_suite`) collects the file without a
program, against a stand-in `solution` whose every name is a placeholder, and reports the test ids and what they
use as JSON (`read_collection` reads it).
"""

from __future__ import annotations

import json
import linecache
import logging
import os
import signal
import sys
import tempfile
import threading
import traceback
import types
import warnings

COLLECT = "--collect-only"  # the one case of a collection job (no test id starts with "--")
FILE = "test_solution.py"  # the name the test file has here (its module: ``test_solution``)
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py cuts further)
# pytest's command line: our own ini file and rootdir, no conftest, no plugins but pytest's own, no cache or
# bytecode written, the test module imported without touching sys.path; plugins that cannot change a verdict off
ARGS = (
    "--noconftest",
    "--import-mode=importlib",
    "--capture=sys",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:terminal",
    "-p",
    "no:faulthandler",
    "-p",
    "no:pastebin",
    "-p",
    "no:junitxml",
    "-p",
    "no:doctest",
    "-p",
    "no:stepwise",
    "-p",
    "no:setuponly",
    "-p",
    "no:setupplan",
    "-p",
    "no:unraisableexception",
    "-p",
    "no:threadexception",
)


def read_collection(detail: str) -> dict:
    """What a collection job reported: ``{"ids": [...], "census": {...}}`` (your process's side)."""
    return json.loads(detail)


# --- the worker's side ------------------------------------------------------------------------------------------
def run(channel, solution_module, report, job, loading: str) -> None:
    """Run the test ids of `job.cases` ((None, id) pairs) of the file `job.setup` with pytest; ``report(status,
    detail, assertion)`` once per id, in order (`loading`: the assertion of a verdict that holds for every id)."""
    import pytest  # imported by the worker before any clock started (worker._pytest_run)

    for name, options in HOOKS.items():
        pytest.hookimpl(**options)(getattr(_Session, name))

    ids = [case for _, case in job.cases]
    collect = ids == [COLLECT]
    folder = _folder()
    path = os.path.join(folder, FILE)
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(job.setup)
    linecache.checkcache(path)
    module = _stand_in(job.setup) if collect else solution_module(channel)
    if not collect:
        channel.capture()  # the program's prints come back where it printed them (capsys)
    if not collect and "import *" in job.setup:  # `from solution import *`: the names the file reads
        module.__dict__["__all__"] = _star_names(channel, job.setup)
    session = _Session(ids, report, channel, path, collect, loading, pytest)
    # tmp_path and its kin live in the job folder (tempfile's directory here, as in the program's process): a file
    # the test makes there, the program reads, and the other way round; the test file stays in our own folder
    args = [
        path,
        "-c",
        os.path.join(folder, "pytest.ini"),
        "--rootdir",
        folder,
        "--basetemp",
        os.path.join(tempfile.gettempdir(), "pytest-tmp"),
        *ARGS,
        *(("--collect-only",) if collect else ()),
    ]
    saved = _State()
    sys.modules["solution"] = module  # the worker removes it after the job
    try:
        pytest.main(args, plugins=[session])
    except BaseException as e:  # noqa: BLE001 - a fault, or pytest stopped: the ids not decided say so
        session.stopped = session.stopped or f"{type(e).__name__}: {e}"[:300]
    finally:
        saved.restore()
    session.finish()


class _Session:
    """The plugin of one pytest session: runs the suite's ids in its order and reports a verdict for each."""

    def __init__(self, ids, report, channel, path, collect, loading, pytest):
        self.ids, self.report, self.channel, self.path = ids, report, channel, path
        self.collect, self.loading = collect, loading
        self.case = pytest.StashKey()  # an item's index in `ids`
        self.next = 0  # the next index to report
        self.failure: dict[int, tuple] = {}  # index -> (status, detail, assertion) of its first failing phase
        self.kind: dict[int, str] = {}  # index -> "skipped" / "xfailed" / "xpassed"
        self.errors: list[str] = []  # collection errors
        self.items: list | None = None  # what was collected
        self.stopped = ""  # why the session ended early
        self.faulted = False  # a fault of the channel was a test's verdict (the session stops there)

    # --- hooks (their pytest options: `HOOKS`) ---
    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(_cut(report.longreprtext))

    def pytest_collection_modifyitems(self, items: list) -> None:
        """The suite's ids, in its order (an id collected twice: its occurrences in order); the others do not
        run. In a collection job: the ids collected, and what each uses."""
        self.items = list(items)
        if self.collect:
            return
        by_id: dict[str, list] = {}
        for item in items:
            by_id.setdefault(_test_id(item), []).append(item)
        chosen = []
        for k, case in enumerate(self.ids):
            if by_id.get(case):
                item = by_id[case].pop(0)
                item.stash[self.case] = k
                chosen.append(item)
        items[:] = chosen

    def pytest_runtest_protocol(self, item):
        k = item.stash[self.case]
        while self.next < k:  # ids before this one that pytest did not collect with this program
            self._say("error", "pytest did not collect this test with this program", "")
        try:
            return (yield)
        except BaseException as e:  # noqa: BLE001 - pytest itself stopped (the program's KeyboardInterrupt)
            self.stopped = f"{type(e).__name__}: {e}"[:300]
            raise
        finally:
            # its verdict: no failure, or the first failing phase
            if self.next == k and not self._fault(item):
                if self.stopped:
                    self._say("error", f"pytest stopped in this test ({self.stopped})", "")
                else:
                    self._say(*self.failure.get(k, ("passed", self.kind.get(k, ""), "")))

    def _phase(self, item):
        """Setup, call and teardown: a fault of the channel is the test's verdict as soon as its phase ends (the
        next id's clock starts then), and the session stops."""
        try:
            return (yield)
        finally:
            self._fault(item)

    def pytest_runtest_setup(self, item):
        return (yield from self._phase(item))

    def pytest_runtest_call(self, item):
        return (yield from self._phase(item))

    def pytest_runtest_teardown(self, item):
        return (yield from self._phase(item))

    def pytest_runtest_makereport(self, item, call):
        rep = yield
        k = item.stash.get(self.case, None)
        if k is None or self.next != k:
            return rep
        if rep.failed:
            self.failure.setdefault(k, _describe(rep, call, self.path))
        elif rep.skipped:
            self.kind[k] = "xfailed" if hasattr(rep, "wasxfail") else "skipped"
        elif rep.when == "call" and hasattr(rep, "wasxfail"):
            self.kind[k] = "xpassed"
        return rep

    # --- verdicts ---
    def _say(self, status: str, detail: str, assertion: str) -> None:
        self.next += 1
        self.report(status, detail, assertion)

    def _fault(self, item) -> bool:
        """Whether the channel has a fault; the first one is the verdict of the test running (and ends the session)."""
        fault = self.channel.fault
        if fault is not None and not self.faulted and self.next == item.stash.get(self.case, None):
            self.faulted = True
            self._say(fault.status, fault.detail, "")
            item.session.shouldstop = "a fault of the channel"
        return fault is not None

    def finish(self) -> None:
        """The ids not decided when the session ended: the collection's verdict, the channel's fault, or why
        pytest stopped."""
        if self.collect:
            if self.errors or not self.items:
                return self._say("error", self.errors[0] if self.errors else "pytest collected no test", "")
            census = {"ids": [_test_id(i) for i in self.items], "census": _census(self.items)}
            return self._say("passed", json.dumps(census), "")
        if self.faulted or self.next >= len(self.ids):
            return None
        fault = self.channel.fault
        loading = self.items is None or bool(self.errors)  # the file was not collected with this program
        if fault is not None:  # the limit struck (or the program process ended) outside a test's phases
            return self._say(fault.status, fault.detail, self.loading if loading else "")
        if loading:
            why = self.errors[0] if self.errors else f"pytest stopped before collecting ({self.stopped})"
            return self._say("error", why, self.loading)
        ran = {item.stash.get(self.case, None) for item in self.items}
        while self.next < len(self.ids):
            why = (
                "pytest stopped before this test ran"
                if self.next in ran
                else "pytest did not collect this test with this program"
            )
            self._say("error", why + (f" ({self.stopped})" if self.stopped else ""), "")
        return None


# the options of `_Session`'s hooks, set on its methods once pytest is imported (this module imports no
# pytest)
HOOKS = {
    "pytest_collection_modifyitems": {"trylast": True},
    "pytest_runtest_protocol": {"wrapper": True},
    "pytest_runtest_setup": {"wrapper": True, "tryfirst": True},
    "pytest_runtest_call": {"wrapper": True, "tryfirst": True},
    "pytest_runtest_teardown": {"wrapper": True, "tryfirst": True},
    "pytest_runtest_makereport": {"wrapper": True},
}


def _test_id(item) -> str:
    """An item's id without the file: ``test_a[1-2]``, ``TestX::test_m``."""
    return item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.nodeid


def _census(items) -> dict:
    """How many collected ids are parametrized, in classes (unittest ones among them), use fixtures, carry a
    skip/skipif/xfail mark."""
    out = {"tests": len(items), "parametrized": 0, "in_classes": 0, "unittest": 0, "fixtures": 0, "marked": 0}
    for item in items:
        params = set(getattr(getattr(item, "callspec", None), "params", {}))
        out["parametrized"] += bool(params)
        out["in_classes"] += getattr(item, "cls", None) is not None
        out["unittest"] += type(item).__name__ == "TestCaseFunction"
        out["fixtures"] += bool(set(getattr(item, "fixturenames", ())) - params - {"request"})
        out["marked"] += any(m.name in ("skip", "skipif", "xfail") for m in item.iter_markers())
    return out


def _cut(text: str) -> str:
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 20] + " ... (cut)"


def _describe(rep, call, path: str) -> tuple[str, str, str]:
    """(status, detail, assertion) of a failing phase: an assert of the test in its call is ``failed`` with the
    assert's line and pytest's explanation; anything else ``error`` with the traceback (the test file's frames and
    the program's)."""
    excinfo = getattr(call, "excinfo", None)
    if excinfo is None:  # e.g. a strict xfail that passed
        return "failed" if rep.when == "call" else "error", _cut(rep.longreprtext), ""
    e = excinfo.value
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    if (
        rep.when == "call"
        and isinstance(e, AssertionError)
        and frames
        and (frames[-1].line or "").startswith("assert")
    ):
        return "failed", _cut(str(e)), frames[-1].line
    # the test file's frames (as `FILE`), then the program's if it raised there
    shown = [traceback.FrameSummary(FILE, f.lineno, f.name, lookup_line=False, line=f.line) for f in frames]
    return "error", traceback_text(e, shown), ""  # noqa: F821 - harness.traceback_text, set by the worker


def _read_names(source: str) -> list[str]:
    """The public names the file reads without binding them (none when it does not compile: pytest says why)."""
    try:
        bound, free = scope(source)  # noqa: F821 - set by the worker before this file runs
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return sorted(n for n in free - bound if not n.startswith("_"))


def _star_names(channel, source: str) -> list:
    """``from solution import *``: the names the file reads that the program defines (what the star import binds
    that the file can see)."""
    wanted = tuple(_read_names(source))
    return sorted(channel.names(wanted)) if wanted else []


class _StandIn:
    """Any value of the program while a file is collected without one: callable, with any attribute."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        return _StandIn(f"{self._name}()")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn(f"{self._name}.{name}")

    def __repr__(self) -> str:
        return f"<{self._name} of the program>"


def _stand_in(source: str) -> types.ModuleType:
    """Module ``solution`` of a collection job: every name a `_StandIn`; ``*`` gives the names the file reads."""
    module = types.ModuleType("solution")
    module.__getattr__ = lambda name: _StandIn(name) if not name.startswith("__") else _no(name)
    module.__all__ = _read_names(source)
    return module


def _no(name: str):
    raise AttributeError(name)


_FOLDER: list[str] = []


def _folder() -> str:
    """This worker's own directory for the test file (its private /tmp; mode 0700): made once, with the ini file
    that makes it pytest's rootdir and stops pytest from looking for another."""
    if not _FOLDER:
        folder = tempfile.mkdtemp(prefix="murphy-pytest-")
        with open(os.path.join(folder, "pytest.ini"), "w") as f:
            f.write("[pytest]\n")
        _FOLDER.append(folder)
    return _FOLDER[0]


class _State:
    """What a pytest session may leave changed in this process, put back after it (with SIGALRM held: the case
    timer may strike while pytest is stopped halfway, and nothing of this must be left half done)."""

    def __init__(self):
        self.stdio = sys.stdin, sys.stdout, sys.stderr
        self.modules = set(sys.modules)
        self.meta_path, self.path, self.environ = list(sys.meta_path), list(sys.path), dict(os.environ)
        self.cwd = os.getcwd()
        # the filters and showwarning, put back as it puts them back
        self.warnings = warnings.catch_warnings()
        self.warnings.__enter__()
        root = logging.getLogger()
        self.logging = root, list(root.handlers), root.level, logging.root.manager.disable
        self.hooks = sys.excepthook, threading.excepthook, sys.unraisablehook
        self.alarm = signal.getsignal(signal.SIGALRM)
        self.bytecode = sys.dont_write_bytecode
        sys.dont_write_bytecode = True  # no pyc next to the test file (the next job's file has the same name)
        os.environ.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # pytest's own plugins only
        for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
            os.environ.pop(name, None)

    def restore(self) -> None:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            sys.stdin, sys.stdout, sys.stderr = self.stdio
            for name in set(sys.modules) - self.modules:
                module = sys.modules.get(name)
                where = getattr(module, "__file__", None) or ""
                if (
                    name == "test_solution"
                    or where.startswith(_FOLDER[0])
                    or name.startswith("test_solution.")
                ):
                    del sys.modules[name]
            sys.meta_path[:], sys.path[:] = self.meta_path, self.path
            os.environ.clear()
            os.environ.update(self.environ)
            os.chdir(self.cwd)
            self.warnings.__exit__(None, None, None)
            root, handlers, level, disable = self.logging
            root.handlers[:], root.level = handlers, level
            logging.disable(disable)
            sys.excepthook, threading.excepthook, sys.unraisablehook = self.hooks
            signal.signal(signal.SIGALRM, self.alarm)
            sys.dont_write_bytecode = self.bytecode
            # frames of this job's tests
            for name in ("last_type", "last_value", "last_traceback", "last_exc"):
                sys.__dict__.pop(name, None)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
