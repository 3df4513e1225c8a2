"""The test side of one program process: requests, their replies checked, and references to program objects.

Loaded by the test worker (`worker.py`) by path, fresh for every job with `harness.py` (`worker.fresh_harness`),
with `wire` set before it runs. The test side serves nothing, and nothing on it answers for the program. A program
value is plain data, rebuilt here by our own constructors (`wire`), or a `Ref`: a reference to an object that
stays in the program process. A test may call a reference whose object is callable (a function, a class, a method:
a request the program process serves, answered with plain data or another reference), read and set its
attributes, and compare its identity (one `Ref` per program object, so ``is`` works; ``==`` is ``is``). Any other
use (truth, iteration, containment, indexing, ``len``, ``str``, order, ``format``, copying) fails the case closed
with a message naming the object's type; `Ref` defines no ``__iter__``, ``__len__``, ``__contains__`` or
``__call__`` of its own, so `callable()` and the `collections.abc` checks are what the object is. A test value that
is not plain data (a lambda, a generator, an instance of a setup class) cannot cross: the case fails closed, naming
the type. Every reply carries exactly what its request asked for (`reply_fits`, one rule for every request/reply
pair): names beyond those asked, changes of arguments never sent, a ``StopIteration`` that would end the test's own
loop: a protocol violation, and the case fails closed. A call's mutable arguments are followed: their in-place
changes in the program come back into the test's own objects (`_sync`).
"""

from __future__ import annotations

import collections
import sys
import types

PROGRAM_MODULE = "solution"  # `from solution import f` works in test code (KodCode/pytest style)
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py truncates further)
wire = globals().get("wire")  # the channel's format (`wire.py`): the worker sets it before this file runs
_REF_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})  # forwarded (plain text)


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
        self.printed = False  # after `capture`: what the program prints comes back before each reply

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

    def capture(self) -> None:
        """From now on what the program writes to its sys.stdout and sys.stderr comes back before each reply and
        is written to ours, where it printed it (a pytest test's ``capsys`` reads it; `pytest_run.py`)."""
        self.request(b"P", None)
        self.printed = True

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
            while reply == b"P" and self.printed:  # what the program printed while serving this request
                printed = _printed(self.decoder.decode(data))
                sys.stdout.write(printed[0]), sys.stderr.write(printed[1])
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


def _printed(text) -> tuple:
    if not (type(text) is tuple and len(text) == 2 and all(type(t) is str for t in text)):
        raise wire.Refused("printed text that is not (stdout, stderr)")
    return text


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


_REFS = frozenset({Ref, CallableRef})
_HOMES = _REFS | ({wire.EnumValue} if wire is not None else set())  # encoded straight by `Channel._home`


def ref_text(ref: Ref) -> str:
    """A reference in feedback: the program's repr of its object, and why it did not cross."""
    why = ref._murphy_note or "not plain data, so it equals only itself"
    article = "an" if ref._murphy_type[:1].lower() in ("a", "e", "i", "o", "u") else "a"
    text = (
        ref._murphy_text if len(ref._murphy_text) <= 150 else ref._murphy_text[:150] + "..."
    )  # the why fits
    return f"{text} ({article} {ref._murphy_type} object of the program: {why})"
