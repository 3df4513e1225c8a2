"""The program process: what runs between its fork from the program server and its end.

Loaded by the program server (`server.py`) by path, with `wire`, `protocol` and `capture` set before it runs; it
runs only in the program processes the server forks (and once in the server before the first fork, `warm_up`). A
program process loads the program as module ``solution`` and answers the test worker's requests on the channel with
plain data or references (`ProgramSide`); it never sends anything else, so how it ended is what the kernel says (its
wait status, the memory cgroup's counter) or the worker's timer. As a script (IO tests) it ends the way ``python
program.py`` ends (`run_script`). A program that does not compile ends at once (`did_not_compile`).
"""

from __future__ import annotations

import atexit
import builtins
import copy
import gc
import linecache
import operator
import os
import resource
import sys
import traceback
import types

# set by server.py before this file runs
wire, protocol, capture = globals()["wire"], globals()["protocol"], globals()["capture"]
PROGRAM_FILE = protocol.FILENAME
PROGRAM_MODULE = "solution"
_isinstance, _exit = isinstance, os._exit
REPR_CHARS = 300  # of a reference's repr text (feedback shows at most that much of a value)
# the program process's sys.stdin, sys.stdout, sys.stderr (fds 0-2, set by the server before each fork)
CHILD_STDIO = tuple(
    open(fd, mode, encoding="utf-8", errors="replace", closefd=False)
    for fd, mode in ((0, "r"), (1, "w"), (2, "w"))
)


def _contains(target, x):
    return x in target


def _enter(target):
    return type(target).__enter__(target)


def _leave(target, kind, value, tb):
    return type(target).__exit__(target, kind, value, tb)


def _take(iterator, n: int) -> tuple:
    """Up to `n` next items of an iterator the test loops over: (items, the exception it raised or None, whether
    it ended). A batch stops where the iterator ended or raised; the test side meets that end at that item."""
    items = []
    try:
        for _ in range(n):
            items.append(next(iterator))
    except StopIteration:
        return items, None, True
    except BaseException as e:  # noqa: BLE001 - the program's exception, met by the test's loop in its place
        if _isinstance(e, MemoryError):
            _room()
        return items, e, True
    return items, None, False


# what a test may do to a program object besides calling it (`C`), each done here with the program's own methods:
# the `O` request's operations (`channel.py` forwards the special methods of `wire.PROTOCOLS` as these)
_OPS = {
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "len": len,
    "bool": bool,
    "str": str,
    "repr": repr,
    "format": format,
    "iter": iter,
    "next": next,
    "reversed": reversed,
    "contains": _contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "int": int,
    "float": float,
    "complex": complex,
    "index": operator.index,
    "round": round,
    "bytes": bytes,
    "dir": dir,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "enter": _enter,
    "exit": _leave,
    "next_many": _take,
    "instancecheck": lambda c, o: isinstance(o, c),
    "subclasscheck": lambda c, s: issubclass(s, c),
}
for _op in wire.BINARY_OPS:
    _fn = getattr(operator, _op + "_" if _op in ("and", "or") else _op)
    _OPS[_op], _OPS["i" + _op] = _fn, getattr(operator, "i" + _op)
    _OPS["r" + _op] = lambda target, other, fn=_fn: fn(other, target)

_UNHELD = 2  # sys.getrefcount of a followed argument that only `ProgramSide.kept` holds (its entry and
# getrefcount's argument)
# iterators over a container that run no code of the program: they cross drained (``j``); any other iterator (a
# generator, map, filter, zip, itertools) is a reference the test steps lazily, as one process would
_INERT = frozenset(
    type(it)
    for it in (
        iter([]),
        reversed([]),
        iter(()),
        iter(range(0)),
        iter(range(1 << 70)),
        iter(""),
        iter("\xe9"),
        iter(b""),
        iter(bytearray()),
        iter({}),
        iter({}.values()),
        iter({}.items()),
        reversed({}),
        reversed({}.values()),
        reversed({}.items()),
        iter(set()),
    )
)
_REFERENCED = frozenset({types.FunctionType, types.MethodType})  # the common references, encoded straight
_DEFAULTS = {name: getattr(object, name, None) for name in wire.PROTOCOLS}  # object's own: not forwarded
_HASHED, _UNHASHABLE = wire.PROTOCOLS.index("__hash__"), wire.PROTOCOLS.index("__hash__ None")


class _Stays:
    """A value that stays in the program process whatever it is (too large to cross), with the reason."""

    __slots__ = ("obj", "note")

    def __init__(self, obj, note: str):
        self.obj, self.note = obj, note


def repr_text(x) -> str:
    """The program's repr of `x` (cut), for feedback; an int too large to print is described."""
    if type(x) is int:  # only an int too large to cross comes here
        return f"<an int of about {int(x.bit_length() * 0.30103) + 1:,} digits>"
    try:
        text = repr(x)[:REPR_CHARS]
    except Exception:  # noqa: BLE001 - a broken __repr__ is the program's
        text = f"<{type(x).__name__} object>"
    return text if type(text) is str else ""


class ProgramSide:
    """Serves the test worker's requests on the program's own objects; the reply is plain data or a reference.

    Requests (`wire` messages): ``N`` (names) -> the values of those of the program's globals it defines; ``C``
    (reference, args, kwargs, a token per argument: the test's, for a mutable one) -> (the call's result, the
    followed arguments whose state changed, as (token, new value), the token of the argument the result is);
    ``O`` (reference, an operation of `_OPS`, args) -> (the result, None): an attribute, ``len``, truth, ``str``,
    an item, iteration, ``==`` or an operator, done with the object's own methods. The reply ``V`` carries a value, ``E``
    an exception (the load's, to every ``N`` request, when loading the program raised; a call's `SystemExit` too,
    as a test in the same process would see it); ``S`` a compile error (`did_not_compile`). This side sends nothing
    else, ever: how it ended, the kernel tells the server."""

    def __init__(self, fd: int, namespace: dict, load_error: BaseException | None):
        self.fd, self.namespace, self.load_error = fd, namespace, load_error
        self.objects: dict[int, object] = {}  # what crossed as a reference: id -> object (kept alive)
        self.kept: dict[int, list] = {}  # the test's token -> [a mutable argument, its last encoding]
        self.types: dict[type, tuple] = {}  # a type -> its description (`describe`)
        self.reader = wire.Reader(fd)
        self.decoder = wire.Decoder(home=self.objects.__getitem__, untrusted=False)
        self.printed: capture.Printed | None = (
            None  # after a ``P`` request: what the program prints, sent back
        )

    def serve(self) -> None:
        while True:
            try:
                kind, payload = self.reader.message()
            except (wire.Fault, wire.Refused):
                _exit(0)
            try:
                reply = b"V", self.reply(self.perform(kind, self.decoder.decode(payload)))
            except BaseException as e:  # noqa: BLE001 - the program's exception (SystemExit too) is the reply
                if _isinstance(e, MemoryError):
                    _room()
                reply = b"E", self.error(e)
            if self.printed is not None:  # what this request printed goes first (a pytest test's capsys)
                self.printed.send(self.fd)
            wire.send(self.fd, *reply)

    def perform(self, kind: bytes, req) -> tuple:
        if kind == b"N":
            if self.load_error is not None:
                raise self.load_error
            return {n: self.namespace[n] for n in req if _isinstance(n, str) and n in self.namespace}, None
        if kind == b"C":
            target, args, kwargs, tokens, gone = req
            kept = self.kept
            for token in gone:  # the test no longer holds them
                kept.pop(token, None)
            if kept:
                self._forget()
            for token, v in zip(tokens, (*args, *kwargs.values())):
                if token is not None:
                    kept[token] = [v, self.encode(v)]
            result = target(*args, **kwargs)
            if not kept:
                return result, None, None
            same = next((token for token, (v, _) in kept.items() if v is result), None)
            return result, self._changes(), same
        if kind == b"O":
            target, op, args = req
            return _OPS[op](target, *args), None
        if kind == b"P" and self.printed is None:  # from now on sys.stdout and sys.stderr come back (pytest)
            self.printed = capture.Printed()
            return None, None
        raise TypeError(f"not a request: {kind!r}")

    def encode(self, value) -> bytes:
        return wire.encode(value, self._reference, _REFERENCED, self._keep, describe=self.describe)

    def _keep(self, x) -> int:
        self.objects[id(x)] = x
        return id(x)

    def describe(self, t: type) -> tuple:
        """A type's description for its stand-in on the test side (`describe_type`). Kept alive, so that its id
        stays its own (the common types were described before the fork: `warm_up`)."""
        described = self.types.get(t)
        if described is None:
            described = self.types[t] = _DESCRIBED.get(t) or describe_type(t)
            self._keep(t)
        return described

    def _reference(self, encoder, x, depth: int) -> None:
        """What is not plain data stays here and crosses as a reference (``R``: id, its type's description, repr
        text, why it stayed, its hash when its type defines one, False when it is unhashable); an iterator over a
        container (`_INERT`: it runs no program code) crosses drained (``j``), as many items as a list may have."""
        t = type(x)
        if t in _INERT and operator.length_hint(x) <= wire.MAX_ITEMS:
            encoder.out += b"j"
            return encoder.value(list(x), depth + 1)
        note = ""
        if t is _Stays:
            x, note = x.obj, x.note
            t = type(x)
        described = self.describe(t)
        hashed = None
        if described[3] >> _HASHED & 1:
            try:
                hashed = hash(x)
            except Exception:  # noqa: BLE001 - the program's __hash__ raised: unhashable there too
                hashed = False
        elif described[3] >> _UNHASHABLE & 1:
            hashed = False
        encoder.out += b"R"
        encoder.value((self._keep(x), described, repr_text(x), note, hashed), depth + 1)

    def reply(self, value: tuple) -> bytes:
        """A ``V`` reply; a result too large or too deep to cross stays here and crosses as a reference."""
        try:
            return self.encode(value)
        except wire.Refused as e:
            return self.encode((_Stays(value[0], f"it cannot cross: {e}"), *(None,) * (len(value) - 1)))

    def error(self, e: BaseException) -> bytes:
        try:
            return self.encode(e)
        except wire.Refused as too_large:
            return self.encode(RuntimeError(f"the program raised {type(e).__name__}, which is {too_large}"))

    def _changes(self, force: bool = False) -> list | None:
        """The test's mutable arguments (of this call, and of earlier ones the program kept) whose state changed,
        at any depth, as (the test's token, new value); each encoded before and after (tests inspect in-place
        changes, as in one process)."""
        out = []
        for token, entry in list(self.kept.items()):
            try:
                now = self.encode(entry[0])
            except wire.Refused:  # grown past the bounds: no longer followed
                del self.kept[token]
                continue
            if now != entry[1]:
                entry[1] = now
                out.append((token, entry[0]))
        return out or None

    def _forget(self) -> None:
        """Stop following the arguments nothing of the program holds any more (only `kept` and this loop do)."""
        for token in [t for t, entry in self.kept.items() if sys.getrefcount(entry[0]) <= _UNHELD]:
            del self.kept[token]


def describe_type(t: type) -> tuple:
    """(its id, name, module, the bits of the special methods of `wire.PROTOCOLS` it has, object's own left out)."""
    bits, mro = 0, type.__dict__["__mro__"].__get__(t)
    for k, name in enumerate(wire.PROTOCOLS):
        # as Python finds a special method: in the type's own MRO (a class's metaclass is not asked)
        slot = "__hash__" if name == "__hash__ None" else name
        found = next((c.__dict__[slot] for c in mro if slot in c.__dict__), None)
        if name == "__hash__ None":
            bits |= (found is None) << k
        else:
            bits |= (found is not None and found is not _DEFAULTS[name]) << k
    module = getattr(t, "__module__", "")
    return (id(t), str(t.__name__)[:100], str(module)[:100], bits)


# the types most references have, described once in the server before the first fork (`warm_up`)
_COMMON_TYPES = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    type,
    types.GeneratorType,
    map,
    filter,
    zip,
    enumerate,
    reversed,
)
_DESCRIBED: dict[type, tuple] = {}


def warm_up(rounds: int = 200) -> None:
    """Run the program side's request handling here, before the first fork, on typical requests. Python counts the
    calls of a function in its code object and then rewrites (specializes) its bytecode: in each fresh fork those
    writes copied pages shared with this server (warmed, a program process copies some 60 pages fewer)."""

    def home(encoder, x, depth):
        encoder.out += b"h"
        encoder.int(id(x))

    def target(xs, k=1, **kwargs):
        return sorted(xs)[:k], {"n": len(xs), "s": str(k)}, (None, True, 2.5, -3)

    _DESCRIBED.update((t, describe_type(t)) for t in _COMMON_TYPES)
    program = protocol.pack(None, "x = 1")
    for _ in range(rounds):
        protocol.compile_program(protocol.unpack(program)[2])
        _module("_murphy_warm", "x = 1")
        side = ProgramSide(-1, {"f": target, "v": [1, "a"]}, None)
        side.reply(side.perform(b"N", side.decoder.decode(wire.encode(("f", "v", "g")))))
        call = wire.encode((target, ([3, 1, 2], 2), {"c": 0}, (1, None, None), ()), home)
        side.reply(side.perform(b"C", side.decoder.decode(call)))
        side.reply(
            side.perform(b"O", side.decoder.decode(wire.encode((target, "getattr", ("__name__",)), home)))
        )
        side.error(ValueError("warm"))
    sys.modules.pop("_murphy_warm", None)
    linecache.cache.pop(PROGRAM_FILE, None)


def exit_status(e: SystemExit) -> int:
    """The exit status Python gives `SystemExit(code)`: None -> 0, an int -> itself, else printed to stderr, 1."""
    code = e.code
    if code is None:
        return 0
    if type(code) is int:
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _room() -> None:
    """After a MemoryError: the soft address-space limit up to the hard one (64 MB more), to send the reply."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _module(name: str, program: str) -> types.ModuleType:
    linecache.cache[PROGRAM_FILE] = (len(program), None, program.splitlines(True), PROGRAM_FILE)
    module = types.ModuleType(name)
    module.__file__ = PROGRAM_FILE
    module.__builtins__ = builtins
    sys.modules[name] = module
    return module


def serve_program(prelude, code, program: str, fd: int) -> None:
    """Load the program as module ``solution`` (the prelude first, in its namespace; then the program, compiled
    here when the worker did not), then serve it on `fd`.

    A program that does not compile answers the first request with its error (`did_not_compile`); `sys.exit`
    while loading ends the process as Python would; any other exception is kept and becomes the reply to every
    request for names (a load failure the test worker reports for every test)."""
    module = _module(PROGRAM_MODULE, program)
    load_error = None
    try:
        if prelude is not None:
            exec(prelude, module.__dict__)
        exec(code if code is not None else _compiled(program, script=False), module.__dict__)
    except SystemExit as e:
        _exit(exit_status(e))
    except BaseException as e:  # noqa: BLE001 - reported, as data, to the test worker
        if _isinstance(e, MemoryError):
            _room()
        load_error = e
    ProgramSide(fd, module.__dict__, load_error).serve()


def _compiled(program: str, script: bool):
    """The program compiled here, on its own clock, after its prelude ran; or the process ends as one that does
    not compile (`did_not_compile`)."""
    code, error = protocol.compile_program(program)
    if error is not None:
        did_not_compile(error, script)
    return code


def did_not_compile(error: str, script: bool) -> None:
    """The program does not compile (nothing of it ran): as a script, the error on stderr and `SYNTAX_EXIT`; else
    ``S`` with the error as the reply to the first request."""
    if script:
        os.write(2, error.encode("utf-8", "replace") + b"\n")
        _exit(protocol.SYNTAX_EXIT)
    try:
        wire.Reader(3).message()
        wire.send(3, b"S", wire.encode(error))
    except BaseException:  # noqa: BLE001 - the worker hung up
        pass
    _exit(0)


def run_script(prelude, code, program: str) -> None:
    """An IO test: run the program as ``__main__`` on the stdin in place and end the way ``python program.py`` ends:
    its exit status (0, SystemExit's code, 1 after an uncaught exception, whose traceback goes to stderr), after
    non-daemon threads are joined, `atexit` handlers run and the program's files and stdio are flushed."""
    atexit._clear()  # the server's own handlers are not the program's
    module = _module("__main__", program)
    status = 0
    try:
        if prelude is not None:
            exec(prelude, module.__dict__)  # it may end the script itself (lcb_harness's stdin wrapper does)
        exec(code if code is not None else _compiled(program, script=True), module.__dict__)
    except SystemExit as e:
        status = exit_status(e)
    except BaseException as e:  # noqa: BLE001 - as the interpreter does: the traceback on stderr, status 1
        status = 1
        e = e.with_traceback(e.__traceback__.tb_next)  # from the program's own frame on
        # the default hook, in Python (it reads the program's lines from linecache, as python would from disk)
        try:
            hook = sys.excepthook
            hook(
                type(e), e, e.__traceback__
            ) if hook is not sys.__excepthook__ else traceback.print_exception(e)
        except BaseException:  # noqa: BLE001
            pass
    _exit(_shut_down(module, status))


def _shut_down(module: types.ModuleType, status: int) -> int:
    """What the interpreter does at exit (`Py_FinalizeEx`): join non-daemon threads, run `atexit` handlers,
    flush stdio, then drop the program's globals so that files it left open are finalized (flushed)."""
    threading = sys.modules.get("threading")
    for step in (getattr(threading, "_shutdown", None), atexit._run_exitfuncs):
        try:
            if step is not None:
                step()
        except SystemExit as e:
            status = exit_status(e)
        except BaseException:  # noqa: BLE001 - reported by the step itself, as Python does
            pass
    _flush()
    try:
        module.__dict__.clear()
        sys.modules.pop("__main__", None)
        gc.collect()
    except BaseException:  # noqa: BLE001
        pass
    _flush()
    return status


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr, *CHILD_STDIO[1:]):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - e.g. the output limit was hit while flushing
            pass
