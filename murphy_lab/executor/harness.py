"""The test side: run test cases against the program, which lives in another process; make the verdicts.

Loaded by the test worker (`worker.py`) by path, fresh for every job (with `channel.py` and `standin.py`, set as
`channel_module` before it runs, and `testcode`, the names compiled test code carries), and run there; it stands on the standard library and
`wire.py`. The worker never runs program code: the tests, their expected values and the comparisons live here, the
program in a program process (`server.py`, `program.py`) that answers requests with plain data only.

How a verdict is made (the rules the feedback and the tests rely on):

- The test namespace is declared, not taken from the program: clean builtins (the program cannot shadow them),
  what the setup and the case define and import, the standard-library modules the test text names without
  importing them, and, from the program, only the names `testcode.program_names` declares, fetched in one
  request (a module the program bound to one of them is our own import of that module, `own_module`). Module
  ``solution`` is a proxy for ``from solution import f``. No name the program chose reaches our import system.
- Program values are plain data or stand-ins of the program's objects, which answer for themselves but are never
  equal to, nor ordered against, the test's own data (`channel.py`); every reply carries exactly what its request
  asked for, or the case fails closed.
- Every ``assert`` was rewritten (`testcode.compile_test`) into a call of `Check`, which compares with Python's own
  operators (on values that are ours) and reports the left side's value for feedback.
- ``passed`` only for a case whose test code ran to its end with no fault of the channel (a program process that
  ended, the time limit, a reply that was refused): a test that could not run this way fails closed, even if it
  caught the exception the fault raised.
"""

from __future__ import annotations

import builtins
import importlib
import linecache
import operator
import reprlib
import sys
import traceback

PROGRAM_FILE = "solution.py"  # the name the program's frames carry in tracebacks
LOADING = "(loading the program)"  # the assertion of a verdict that loading the program decided
WORKER_MEMORY = "the test code ran out of memory"  # the detail of a `memory` verdict measured in the worker
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py truncates further)
wire = globals().get("wire")  # the channel's format (`wire.py`): the worker sets it before this file runs
channel_module = globals().get("channel_module")  # this job's `channel.py`, made fresh with this module
testcode = globals().get("testcode")  # the file names and the check's name of compiled test code

_CLEAN_BUILTINS = dict(builtins.__dict__)  # captured before any test code runs; each case gets a copy
_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
    "is": operator.is_,
    "is not": operator.is_not,
}


class _AssertFailed(AssertionError):
    def __init__(self, assertion: str, value: str):
        super().__init__(assertion)
        self.assertion, self.value = assertion, value


# --- asserts ----------------------------------------------------------------------------------------------------
class Check:
    """The functions rewritten asserts call (bound in the test namespace as `__murphy_check__`).

    `tuple_as_list`: a tuple on the left of ``==``/``!=`` compares as a list (LiveCodeBench's functional rule)."""

    def __init__(self, tuple_as_list: bool = False):
        self.tuple_as_list = tuple_as_list

    def compare(self, left, op: str, right, src: str, negate: bool = False) -> None:
        """A top-level `assert left <op> right` (or `assert not ...`): fails with the left side's value."""
        if self.tuple_as_list and type(left) is tuple and op in ("==", "!="):
            left = list(left)
        if bool(_OPS[op](left, right)) == negate:
            raise _AssertFailed(src, show(left))

    def truthy(self, x, src: str) -> None:
        if not x:
            raise _AssertFailed(src, show(x))


# --- reporting --------------------------------------------------------------------------------------------------
class _Repr(reprlib.Repr):
    def repr1(self, x, level) -> str:
        # the repr text it crossed with: feedback asks the program nothing
        if isinstance(x, channel_module.Ref):
            return channel_module.ref_text(x)
        # a value of the program's: its own repr, as it crossed
        if isinstance(type(x), channel_module.StandIn):
            return builtins.repr(x)
        return super().repr1(x, level)


_repr = _Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = 300
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = _repr.maxdeque = 40
_repr.maxlevel = 5


def show(x) -> str:
    """A short repr of a value for feedback (a reference: the program's repr text when it crossed)."""
    try:
        return _repr.repr(x)[:MAX_DETAIL]
    except BaseException:  # noqa: BLE001 - e.g. an int too long to print (Python's own limit)
        return f"<{type(x).__name__} object>"


def format_exception(e: BaseException, limit: int = 3) -> str:
    """The exception and its last `limit` frames, harness frames removed, the program's frames joined."""
    frames = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if f.filename in (PROGRAM_FILE, testcode.TEST_FILE, testcode.SETUP_FILE)
    ]
    return traceback_text(e, frames, limit)


def traceback_text(e: BaseException, frames: list, limit: int = 3) -> str:
    """The traceback text of `e` from the test side's `frames` (`traceback.FrameSummary`s), the program's frames
    joined when it raised in the program process, the last `limit` shown (also `pytest_run.py`'s, set there)."""
    remote = getattr(e, "__murphy_remote__", None)
    if remote is not None:  # raised in the program process: its frames follow ours, its text is the head
        frames = frames + [
            traceback.FrameSummary(fn, ln, name, lookup_line=False, line=line)
            for fn, ln, name, line in remote[0]
            if fn == PROGRAM_FILE
        ]
        head = remote[1]
    else:
        try:
            head = "".join(traceback.format_exception_only(type(e), e)).strip()
        except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
            head = type(e).__name__
    lines = traceback.format_list(frames[-limit:])
    body = ("Traceback (most recent call last):\n" + "".join(lines)) if lines else ""
    return (body + head)[-MAX_DETAIL:]


def _remember_source(filename: str, source: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


# --- running cases ----------------------------------------------------------------------------------------------
def run_cases(channel, report, job) -> None:
    """Fetch the program's declared names (`job.wanted`, see `program_names`) on `channel` once, then run setup
    and each (code, source) of `job.cases` in a fresh namespace; ``report(status, detail, assertion)`` once per
    case. Stops at the first fault of the channel (the worker starts a new program process for the rest); a load
    failure is reported once, as `LOADING`."""

    def say(status: str, detail: str, assertion: str) -> None:
        report(status, detail[:MAX_DETAIL], assertion[:MAX_DETAIL])

    try:
        values = channel.names(job.wanted)
    except wire.Fault as f:
        return say(f.status, f.detail, LOADING)
    except BaseException as e:  # noqa: BLE001 - loading the program raised
        return say("error", format_exception(e), LOADING)
    if getattr(job, "loaded", None) is not None:
        job.loaded()  # a suite's `load_timeout`: the first case's limit starts after loading
    if getattr(job, "pytest", None) is not None:  # a pytest file: pytest itself runs it (pytest_run.py)
        return job.pytest.run(channel, channel_module.SolutionModule, report, job, LOADING)
    base = {name: importlib.import_module(name) for name in job.modules}
    base.update((name, own_module(value)) for name, value in values.items())
    sys.modules[channel_module.PROGRAM_MODULE] = channel_module.SolutionModule(channel)
    check = Check(job.compare == "livecodebench")
    _remember_source(testcode.SETUP_FILE, job.setup)
    for case_code, case in job.cases:
        _remember_source(testcode.TEST_FILE, case)
        say(*run_case(channel, base, check, job.setup_code, case_code))
        if channel.fault is not None:
            return None
    return None


def own_module(value):
    """A module the program bound to a name the test reads (``np``): the test side's own import of that module
    (never the program's object), when it is the standard library's or one of `IMPORTABLE`; else as it came."""
    if type(value) is not wire.ProgramModule:
        return value
    name = value.name
    top = name.split(".")[0]
    allowed = top in IMPORTABLE or top in sys.stdlib_module_names and top not in _NEVER_IMPORTED
    if not (allowed and all(part.isidentifier() for part in name.split("."))):
        return value
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - not installed here: the test meets the program's module by name only
        return value


IMPORTABLE = frozenset({"numpy", "pandas", "scipy", "sympy", "networkx", "sortedcontainers"})
_NEVER_IMPORTED = frozenset(
    {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "__hello__", "__phello__"}
)


def run_case(channel, names: dict, check: Check, setup_code, case_code) -> tuple[str, str, str]:
    """(status, detail, assertion) of one case; a fault of the channel decides it even if the test caught it."""
    ns = dict(names, __builtins__=dict(_CLEAN_BUILTINS), __name__="__test__")
    ns[testcode.CHECK] = check
    try:
        if setup_code is not None:
            exec(setup_code, ns)
        exec(case_code, ns)
        out = ("passed", "", "")
    except wire.Fault as f:
        out = (f.status, f.detail, "")
    except _AssertFailed as f:
        out = ("failed", f.value, f.assertion)
    except MemoryError:  # the test code's own (the worker's limit; the program's is a fault of the channel)
        out = ("memory", WORKER_MEMORY, "")
    except BaseException as e:  # noqa: BLE001
        out = ("error", format_exception(e), "")
    if channel.fault is not None:
        return channel.fault.status, channel.fault.detail, ""
    return out
