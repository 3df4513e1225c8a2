"""The test side: run test cases against the program, which lives in another process; make the verdicts.

Loaded by the test worker (`worker.py`) by path, fresh for every job, and run there; it stands on the standard
library and `wire.py`. The worker never runs program code: the tests, their expected values and the comparisons
live here, the program in a program process (`server.py`) that answers requests with plain data only.

How a verdict is made (the rules the feedback and the tests rely on):

- The test namespace is declared, not taken from the program: clean builtins (the program cannot shadow them),
  what the setup and the case define and import, the standard-library modules the test text names without
  importing them (our own import of that name, never the program's module), and, from the program, only the
  suite's entry points and the other names the test text reads but does not define (`program_names`: e.g.
  ``Solution``, ``Pair``, ``Node``), fetched in one request. Module ``solution`` is a proxy for
  ``from solution import f``. No name the program chose reaches our import system.
- The test side serves nothing, and nothing on it answers for the program. A program value is plain data, rebuilt
  here by our own constructors (`wire`), or a `Ref`: a reference to an object that stays in the program process.
  A test may call a reference whose object is callable (a function, a class, a method: a request the program
  process serves, answered with plain data or another reference), read and set its attributes, and compare its
  identity (one `Ref` per program object, so ``is`` works; ``==`` is ``is``). Any other use (truth, iteration,
  containment, indexing, ``len``, ``str``, order, ``format``, copying) fails the case closed with a message naming
  the object's type; `Ref` defines no ``__iter__``, ``__len__``, ``__contains__`` or ``__call__`` of its own, so
  `callable()` and the `collections.abc` checks are what the object is. A test value that is not plain data (a
  lambda, a generator, an instance of a setup class) cannot cross: the case fails closed, naming the type.
- Every reply carries exactly what its request asked for (`reply_fits`, one rule for every request/reply pair):
  names beyond those asked, changes of arguments never sent, a ``StopIteration`` that would end the test's own
  loop: a protocol violation, and the case fails closed.
- Every ``assert`` is rewritten with `ast` into a call of `Check`, which compares with Python's own operators (on
  values that are ours) and reports the left side's value for feedback.
- ``passed`` only for a case whose test code ran to its end with no fault of the channel (a program process that
  ended, the time limit, a reply that was refused): a test that could not run this way fails closed, even if it
  caught the exception the fault raised.
"""

from __future__ import annotations

import ast
import builtins
import collections
import importlib
import linecache
import operator
import reprlib
import symtable
import sys
import traceback
import types

PROGRAM_FILE = "solution.py"  # the name the program's frames carry in tracebacks
PROGRAM_MODULE = "solution"  # `from solution import f` works in test code (KodCode/pytest style)
TEST_FILE = "test.py"
SETUP_FILE = "test_setup.py"
CHECK = "__murphy_check__"  # the one name the rewritten asserts call
LOADING = "(loading the program)"  # the assertion of a verdict that loading the program decided
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py truncates further)
wire = globals().get("wire")  # the channel's format (`wire.py`): the worker sets it before this file runs

_CLEAN_BUILTINS = dict(builtins.__dict__)  # captured before any test code runs; each case gets a copy
_BUILTIN_NAMES = frozenset(_CLEAN_BUILTINS)
_REF_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})  # forwarded (plain text)
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
_AST_OPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


class _AssertFailed(AssertionError):
    def __init__(self, assertion: str, value: str):
        super().__init__(assertion)
        self.assertion, self.value = assertion, value


# --- references -------------------------------------------------------------------------------------------------
class Ref:
    """An object that stays in the program process: the test may read and set its attributes and compare its
    identity; every other use fails the case closed (`_refuse`). `CallableRef` may also be called."""

    __slots__ = ("_murphy_channel", "_murphy_id", "_murphy_type", "_murphy_text", "_murphy_note")

    def __init__(self, channel: Channel, pid: int, type_name: str, text: str, note: str):
        for slot, v in zip(Ref.__slots__, (channel, pid, type_name, text, note)):
            object.__setattr__(self, slot, v)

    def _murphy_op(self, op: str, *args):
        return self._murphy_channel.op(self, op, args)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name not in _REF_DUNDERS:
            raise AttributeError(name)  # protocols (__array__, __fspath__, ...) are not forwarded
        return self._murphy_op("getattr", name)

    def __setattr__(self, name: str, value) -> None:
        self._murphy_op("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        self._murphy_op("delattr", name)

    def __repr__(self) -> str:  # the program's repr text as it crossed (no request): feedback
        return ref_text(self)

    # __eq__ and __hash__ are object's: a reference equals only itself


class CallableRef(Ref):
    """A reference to a callable object of the program (a function, a class, a method)."""

    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return self._murphy_channel.call(self, args, kwargs)


def _refuse(use: str):
    def refused(self, *args):
        self._murphy_channel.fail(
            f"the test used a {self._murphy_type} object of the program ({use}), which is not plain data: a test may "
            "only call the program's functions and classes, read their attributes and compare their identity"
        )

    return refused


for _dunder, _use in {
    "__bool__": "its truth", "__getitem__": "indexing or iteration", "__setitem__": "item assignment",
    "__delitem__": "item deletion", "__str__": "str()", "__format__": "format()", "__lt__": "<", "__le__": "<=",
    "__gt__": ">", "__ge__": ">=", "__int__": "int()", "__float__": "float()", "__index__": "as an index",
    "__complex__": "complex()", "__round__": "round()", "__abs__": "abs()", "__neg__": "-x", "__pos__": "+x",
    "__invert__": "~x", "__reduce_ex__": "copying", "__enter__": "with", "__dir__": "dir()",
}.items():  # fmt: skip
    setattr(Ref, _dunder, _refuse(_use))


def describe(x) -> str:
    """What a test value that cannot cross is, for the message that fails its test."""
    if isinstance(x, Ref):
        return "a reference to an object of an earlier program process"
    if isinstance(x, types.FunctionType):
        return f"a function ({x.__qualname__})"
    return f"a {type(x).__qualname__} object"


class Channel:
    """The test side of one program process: requests, and their replies decoded under `wire`'s bounds."""

    def __init__(self, fd: int):
        self.fd, self.reader, self.fault = fd, wire.Reader(fd), None
        self.refs: dict[int, Ref] = {}  # program object id -> its one Ref
        self.kept: dict[int, object] = {}  # token (its id) -> a mutable argument the test passed to a call
        self.decoder = wire.Decoder(ref=self._ref)

    def _ref(self, pid, type_name, text, note, is_callable) -> Ref:
        if not (type(pid) is int and type(type_name) is str and type(text) is str and type(note) is str):
            raise wire.Refused("not a reference")
        ref = self.refs.get(pid)
        if ref is None:
            kind = CallableRef if is_callable is True else Ref
            ref = self.refs[pid] = kind(self, pid, type_name[:100], text[:300], note[:300])
        else:
            object.__setattr__(ref, "_murphy_text", text)
        return ref

    def _home(self, encoder, x, depth: int) -> None:
        """The test side sends nothing but plain data and the program's own references (going home)."""
        if type(x) is wire.EnumValue and x._home is not None:  # a member of the program's, going home
            encoder.out += b"h"
            return encoder.int(x._home)
        library = _library_name(x)
        if library is not None:  # a standard-library function: the program side's own, by name
            encoder.out += b"L"
            return encoder.value(library, depth + 1)
        if type(x) not in _REFS or x._murphy_channel is not self:
            raise wire.NotPlain(describe(x))
        encoder.out += b"h"
        encoder.int(x._murphy_id)

    def names(self, names: tuple[str, ...]) -> dict:
        """The values of those of `names` the program defines (loading the program's exception, raised)."""
        return self.request(b"N", names)[0]

    def call(self, ref: Ref, args: tuple, kwargs: dict):
        """A call of the program's: the test's mutable arguments go with a token each (their `id` here, kept alive
        for the program process's life), so that their in-place changes, at any depth and in any later call while
        the program keeps them, come back into the test's own objects, and a result that *is* one of them is."""
        kept = self.kept
        # the arguments the test no longer holds (only `kept` does): forgotten on both sides, so that neither
        # side's memory grows with every list a test passes, and an id is never reused while followed
        gone = tuple(t for t in kept if sys.getrefcount(kept[t]) <= _UNHELD) if kept else ()
        for t in gone:
            del kept[t]
        tokens = []
        for v in (*args, *kwargs.values()):
            if type(v) in _FOLLOWED:
                kept[id(v)] = v
                tokens.append(id(v))
            else:
                tokens.append(None)
        result, changes, same = self.request(b"C", (ref, args, kwargs, tuple(tokens), gone))
        for token, new in changes or ():
            _sync(kept[token], new)
        return result if same is None else kept[same]

    def op(self, ref: Ref, op: str, args: tuple):
        return self.request(b"O", (ref, op, args))[0]

    def fail(self, detail: str, status: str = "error"):
        self.fault = wire.Fault(status, detail[:MAX_DETAIL])
        raise self.fault

    def request(self, kind: bytes, value) -> tuple:
        """Send a request and read its one reply: (result, changes), or the program's exception raised here."""
        if self.fault is not None:
            raise self.fault
        try:
            payload = wire.encode(value, self._home, _HOMES)
        except (wire.NotPlain, wire.Refused) as e:
            self.fail(
                f"the test passed {e} to the program, which cannot cross: only plain data does (the tests serve nothing)"
            )
        try:
            wire.send(self.fd, kind, payload)
            reply, data = self.reader.message()
            got = self.decoder.decode(data)
        except wire.Fault as f:  # the program process ended, or the timer struck (it set our fault)
            self.fault = self.fault or f
            raise self.fault from None
        except wire.Refused as e:
            self.fail(f"refused the program's reply: {e}")
        except OSError as e:
            self.fail(f"the program process is gone ({e.strerror})", "lost")
        violation = reply_fits(kind, value, reply, got, self.kept)
        if violation:
            self.fail(f"protocol violation: the program process's reply {violation}; the case fails closed")
        if reply == b"V":
            return got
        if reply == b"S":
            self.fail(got, "syntax")
        if isinstance(got, MemoryError):
            self.fail("", "memory")
        raise got


def reply_fits(kind: bytes, request, reply: bytes, got, kept=()) -> str:
    """The one rule of every request/reply pair: the reply carries exactly what its request asked for. '' when it
    does, else what it carries beyond that. ``E``: the program's exception (but a StopIteration, which would end a
    loop of the test's own: ``map(candidate, ...)``); ``V`` to ``N`` (names): those of the names asked for that the
    program defines, nothing else; to ``C`` (a call): (its result, the changed arguments: positions or keywords of
    the arguments sent, each once, or None); to ``O``: (its result, None)."""
    if kind == b"C" and reply == b"V":  # (result, changes, the token of the argument the result is, or None)
        if type(got) is not tuple or len(got) != 3:
            return "to a call is not (result, changes, same)"
        result, changes, same = got
        if same is not None and same not in kept:
            return "to a call names an argument that was never sent"
        if changes is None:
            return ""
        if type(changes) is not list:
            return "to a call carries changes that are not a list"
        tokens = [item[0] if type(item) is tuple and len(item) == 2 else None for item in changes]
        if all(t in kept for t in tokens) and len(set(tokens)) == len(tokens):
            return ""
        return "to a call changes arguments that were not sent"
    if reply == b"S":  # the program does not compile: its SyntaxError, to the first request (names)
        return "" if kind == b"N" and type(got) is str else "is a compile error out of turn"
    if reply == b"E":
        if not isinstance(got, BaseException):
            return "to an error is not an exception"
        if isinstance(got, (StopIteration, StopAsyncIteration)):
            return f"is {type(got).__name__}, which would end a loop of the test's own"
        return ""
    if reply != b"V" or type(got) is not tuple or len(got) != 2:
        return "is not a reply"
    result, extra = got
    if kind == b"N":
        if type(result) is not dict or extra is not None:
            return "to a names request is not a mapping of names"
        beyond = [k for k in result if type(k) is not str or k not in request]
        return (
            f"carries names it was not asked for: {', '.join(map(repr, beyond[:5]))[:300]}" if beyond else ""
        )
    return "" if extra is None else "carries more than the result"


def _library_name(x):
    """(module, qualified name) of a standard-library function or method descriptor (`math.sqrt`, `str.lower`,
    `operator.add`, `string.capwords`), which crosses to the program by name; else None."""
    if type(x) not in _LIBRARY_TYPES:
        return None
    module = getattr(x, "__module__", None) or "builtins"  # a method descriptor: its class's (str, list, ...)
    qualname = getattr(x, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str or "<" in qualname:
        return None
    return (module, qualname) if module.split(".")[0] in sys.stdlib_module_names else None


_LIBRARY_TYPES = frozenset(
    {types.BuiltinFunctionType, types.FunctionType, types.MethodDescriptorType, types.WrapperDescriptorType}
)


def _sync(old, new) -> None:
    """Write the program's in-place changes into the test's own object `old`, at any depth: nested mutable objects
    stay the test's own (a test may hold a row of a grid), the rest is replaced."""
    t = type(old)
    if t is list and type(new) is list:
        if len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new)):
                if type(a) in _MUTABLE and type(a) is type(b):
                    _sync(a, b)
                elif not (type(a) is type(b) and a == b):
                    old[i] = b  # immutable (a tuple too: replaced when it differs)
        else:
            old[:] = new
    elif isinstance(old, dict) and type(new) is t:
        for k in [k for k in old if k not in new]:
            del old[k]
        for k, b in new.items():
            a = old.get(k)
            if type(a) in _MUTABLE and type(a) is type(b):
                _sync(a, b)
            else:
                old[k] = b
        if t is collections.OrderedDict:  # the order too
            for k in new:
                old.move_to_end(k)
    elif t is tuple and type(new) is tuple and len(old) == len(new):
        for a, b in zip(old, new):
            if type(a) in _FOLLOWED and type(a) is type(b):
                _sync(a, b)
    elif t is set and type(new) is set or t is collections.deque and type(new) is t:
        old.clear()
        old.extend(new) if t is collections.deque else old.update(new)
    elif t is bytearray and type(new) is bytearray:
        old[:] = new


_MUTABLE = frozenset(
    {list, dict, set, bytearray, collections.deque, collections.OrderedDict, collections.Counter,
     collections.defaultdict}
)  # fmt: skip
_UNHELD = (
    2  # sys.getrefcount of a followed argument only `Channel.kept` holds (the dict, getrefcount's argument)
)
_FOLLOWED = _MUTABLE | {tuple}  # whose in-place changes a call sends back (a tuple may hold mutable values)


class SolutionModule(types.ModuleType):
    """Module ``solution`` of the tests: each name is fetched from the program on first use."""

    def __init__(self, channel: Channel):
        super().__init__(PROGRAM_MODULE)
        self.__dict__["_murphy_channel"] = channel

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        got = self.__dict__["_murphy_channel"].names((name,))
        if name not in got:
            raise AttributeError(f"module 'solution' has no attribute {name!r}")
        self.__dict__[name] = got[name]
        return got[name]


# --- the namespace ----------------------------------------------------------------------------------------------
def scope(source: str) -> tuple[frozenset, frozenset]:
    """(the names test code binds at module level, the global names it reads), by `symtable`."""
    table = symtable.symtable(source, TEST_FILE, "exec")
    bound, free, todo = set(), set(), [table]
    for s in table.get_symbols():
        if s.is_assigned() or s.is_imported() or s.is_namespace():
            bound.add(s.get_name())
    while todo:
        t = todo.pop()
        module = t.get_type() == "module"
        for s in t.get_symbols():
            if s.is_referenced() and (module or s.is_global()):
                free.add(s.get_name())
            if not module and s.is_declared_global() and s.is_assigned():
                bound.add(s.get_name())
        todo.extend(t.get_children())
    return frozenset(bound), frozenset(free)


def called(source: str) -> frozenset:
    """The names test code calls (`name(...)`)."""
    return frozenset(
        n.func.id
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    )


def program_names(
    sources: tuple[str, ...], entry_points: tuple[str, ...], scope=scope, called=called
) -> tuple[tuple, tuple]:
    """(the names to take from the program, the standard-library modules to import by the test's own name).

    From the program: the entry points, and every global name the test text reads but neither binds nor finds
    among the builtins. A name the text reads that is a top-level standard-library module (``sys`` in MBPP/596,
    which relies on the program's ``import sys``) is our own import of that name, never the program's binding —
    unless the text calls it (a module is never called: ``decimal()`` is the program's function)."""
    bound, free = set(), set()
    for source in sources:
        b, f = scope(source)
        bound |= b
        free |= f
    free = {n for n in free - bound if not n.startswith("__")}
    modules = {n for n in free - set(entry_points) - _BUILTIN_NAMES if n in sys.stdlib_module_names}
    if modules:  # rare (MBPP/596): a module is never called, a program's function of that name is
        modules -= {n for source in sources for n in called(source)}
    wanted = (free - _BUILTIN_NAMES - modules) | set(entry_points)
    return tuple(sorted(wanted)), tuple(sorted(modules))


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


def _call(name: str, args: list, loc: dict) -> ast.Call:
    """`__murphy_check__.<name>(*args)`, located at `loc` (the assert's position)."""
    fn = ast.Attribute(ast.Name(CHECK, ast.Load(), **loc), name, ast.Load(), **loc)
    return ast.Call(fn, args, [], **loc)


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source text of `node` (ast offsets are UTF-8 byte offsets)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode("utf-8", "replace")
    parts = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"".join(parts).decode("utf-8", "replace")


def _rewrite_assert(node: ast.Assert, lines: list[bytes]) -> ast.stmt:
    """`assert <test>` -> a `Check` call that evaluates it and reports the left side's value when it fails."""
    loc = {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
    src = ast.Constant(_segment(lines, node), **loc)
    t, negate = node.test, False
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Compare):
        t, negate = t.operand, True
    if isinstance(t, ast.Compare) and len(t.ops) == 1:  # the common case: report the left side's value
        op = ast.Constant(_AST_OPS[type(t.ops[0])], **loc)
        call = _call("compare", [t.left, op, t.comparators[0], src, ast.Constant(negate, **loc)], loc)
    else:
        call = _call("truthy", [node.test, src], loc)
    return ast.Expr(call, **loc)


def _rewrite_body(stmts: list, lines: list[bytes]) -> None:
    """Rewrite the asserts in a statement list and, recursively, in the blocks of its statements."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Assert):
            stmts[i] = _rewrite_assert(s, lines)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(s, field, None)
            if isinstance(block, list):
                _rewrite_body(block, lines)


def compile_test(source: str, filename: str):
    """Compile test code with every assert rewritten into a `Check` call (the worker caches the result)."""
    if "assert" not in source:
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)
    lines = source.encode("utf-8", "surrogatepass").splitlines(True)
    _rewrite_body(tree.body, lines)
    return compile(tree, filename, "exec", dont_inherit=True)


# --- reporting --------------------------------------------------------------------------------------------------
_REFS = frozenset({Ref, CallableRef})
_HOMES = _REFS | ({wire.EnumValue} if wire is not None else set())  # encoded straight by `Channel._home`


class _Repr(reprlib.Repr):
    def repr_Ref(self, x, level) -> str:  # noqa: N802 - reprlib's naming: repr_<type name>
        return ref_text(x)

    repr_CallableRef = repr_Ref


_repr = _Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = 300
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = _repr.maxdeque = 40
_repr.maxlevel = 5


def ref_text(ref: Ref) -> str:
    """A reference in feedback: the program's repr of its object, and why it did not cross."""
    why = ref._murphy_note or "not plain data, so it equals only itself"
    article = "an" if ref._murphy_type[:1].lower() in ("a", "e", "i", "o", "u") else "a"
    text = (
        ref._murphy_text if len(ref._murphy_text) <= 150 else ref._murphy_text[:150] + "..."
    )  # the why fits
    return f"{text} ({article} {ref._murphy_type} object of the program: {why})"


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
        if f.filename in (PROGRAM_FILE, TEST_FILE, SETUP_FILE)
    ]
    remote = getattr(e, "__murphy_remote__", None)
    if remote is not None:  # raised in the program process: its frames follow ours, its text is the head
        frames += [
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
def run_cases(channel: Channel, report, job) -> None:
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
    base = {name: importlib.import_module(name) for name in job.modules}
    base.update(values)
    sys.modules[PROGRAM_MODULE] = SolutionModule(channel)
    check = Check(job.compare == "livecodebench")
    _remember_source(SETUP_FILE, job.setup)
    for case_code, case in job.cases:
        _remember_source(TEST_FILE, case)
        say(*run_case(channel, base, check, job.setup_code, case_code))
        if channel.fault is not None:
            return None
    return None


def run_case(channel: Channel, names: dict, check: Check, setup_code, case_code) -> tuple[str, str, str]:
    """(status, detail, assertion) of one case; a fault of the channel decides it even if the test caught it."""
    ns = dict(names, __builtins__=dict(_CLEAN_BUILTINS), __name__="__test__")
    ns[CHECK] = check
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
        out = ("memory", "", "")
    except BaseException as e:  # noqa: BLE001
        out = ("error", format_exception(e), "")
    if channel.fault is not None:
        return channel.fault.status, channel.fault.detail, ""
    return out


def io_equal(got: str, expected: str, compare: str) -> bool:
    """Whether an IO test's stdout matches: by default line by line with trailing whitespace ignored (and
    trailing blank lines); ``"livecodebench"``: lcb_runner's rule — both stripped, the same number of lines, each
    line equal after stripping or, token by token, as `Decimal` numbers (``0.50`` equals ``0.5``)."""
    if compare != "livecodebench":
        return _rstripped(got) == _rstripped(expected)
    a, b = _stripped_lines(got), _stripped_lines(expected)
    return len(a) == len(b) and all(_same_line(x, y) for x, y in zip(a, b))


def _same_line(x: str, y: str) -> bool:
    if x == y:
        return True
    numbers = _as_numbers(x)
    return numbers is not None and numbers == _as_numbers(y)


def _rstripped(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _as_numbers(line: str):
    """The line's tokens as Decimals, or None when one is not a number (lcb_runner's convert_line_to_decimals)."""
    decimal = importlib.import_module("decimal")
    try:
        return [decimal.Decimal(token) for token in line.split()]
    except (decimal.InvalidOperation, ValueError):
        return None
