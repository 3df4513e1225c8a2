"""The test side of one program process: requests, their replies checked, and the stand-ins of program objects.

Loaded by the test worker (`worker.py`) by path, fresh for every job with `harness.py` (`worker.fresh_harness`),
with `wire` set before it runs. The test side serves nothing. A program value is plain data, rebuilt here by our
own constructors (`wire`), or a stand-in of the program's object, one per object (so ``is`` works), of a class
named like the program's (``type(x).__name__``) made here per program type (`Channel.stand_in`):

- a `Ref` for an object that stays in the program process: it answers for itself, as in one process — calls,
  attributes, ``len``, truth, ``str``/``repr``/``format``, iteration (a generator is never drained: a loop fetches
  its items in growing batches, ``next(g)`` one),
  containment, items, hashing, ordering, ``==``, operators, ``with`` — each a request the program process serves
  with the object's own methods (`program._OPS`). Its class has exactly the special methods the program's type has
  (`wire.PROTOCOLS`), so `callable()`, `len()` and the `collections.abc` checks say what the program's type is.
- a value (`IntValue`, `StrValue`, ...) for an instance of a program subclass of a scalar (an IntEnum or a
  ``(str, Enum)`` member): it compares, hashes and computes as its base value, here, and carries the program's
  own str, repr and truth; a namedtuple of the program is a `NamedTupleValue` of such a class.

**The rule that keeps the verdict ours**: a program object is never equal to, nor ordered against, the test's own
plain data through the program's methods: ``==``, ``!=``, ``<``... between a `Ref` and anything that is not a
program object never reach the program (Python's identity fallback decides: not equal; order: TypeError), and an
operator between a `Ref` and the test's plain data must give another program object (``vec * 3``), never plain
data (``abs(f() - expected) < 1e-9``, where the program's ``__sub__`` would see the expected value), or the case
fails closed. Between two program objects (``mid(a, b) == Point(1, 2)``) the program's own ``__eq__`` answers, as
in one process. A ``with`` block's AssertionError is never the program's to swallow.

A test value that is not plain data (a lambda, a generator, an instance of a setup class) cannot cross: the case
fails closed, naming the type. Every reply carries exactly what its request asked for (`reply_fits`, one rule for
every request/reply pair), or the case fails closed. A call's mutable arguments (numpy arrays too) are followed:
their in-place changes in the program come back into the test's own objects (`_sync`).
"""

from __future__ import annotations

import collections
import sys
import types

PROGRAM_MODULE = "solution"  # `from solution import f` works in test code (KodCode/pytest style)
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py truncates further)
wire = globals().get("wire")  # the channel's format (`wire.py`): the worker sets it before this file runs
# this job's `standin.py`, made fresh with this module (`worker.fresh_harness`)
standin = globals().get("standin")
if standin is not None:
    StandIn, Ref, ref_text, value_class = standin.StandIn, standin.Ref, standin.ref_text, standin.value_class
    _forwarder, _cached_hash, _tuple_attr = standin.forwarder, standin.cached_hash, standin.tuple_attr
_SCALARS_CROSSING = (int, float, complex, str, bytes)  # the bases of ``O`` values
_PROTOCOLS = wire.PROTOCOLS if wire is not None else ()  # imported without `wire`: for `reply_fits` alone


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
        self.objects: dict[int, object] = {}  # program object id -> its one stand-in
        self.classes: dict[tuple, type] = {}  # (type id, protocol bits, base) -> the stand-in class
        self.kept: dict[int, object] = {}  # token (its id) -> a mutable argument the test passed to a call
        self.decoding = False  # a reply is being decoded: stand-ins compare by identity, nothing is requested
        self.decoder = wire.Decoder(objects=self._object)
        self.decoder.channel = self  # a program exception's other attributes are asked here (`wire_decode`)
        self.printed = False  # after `capture`: what the program prints comes back before each reply

    # --- stand-ins --------------------------------------------------------------------------------------------
    def stand_in(self, described, base: type) -> type:
        """The class standing for a program type (its description: id, name, module, protocol bits) here."""
        if not (type(described) is tuple and len(described) == 4 and type(described[0]) is int):
            raise wire.Refused("not a type description")
        tid, name, module, bits = described
        if type(name) is not str or type(module) is not str or type(bits) is not int or bits < 0:
            raise wire.Refused("not a type description")
        cls = self.classes.get((tid, bits, base))
        if cls is None:
            if len(self.classes) >= wire.MAX_CLASSES:
                raise wire.Refused(f"objects of more than {wire.MAX_CLASSES} program types")
            body = {
                "__module__": module[:100],
                "__qualname__": name[:100],
                "_murphy_owner": self,
                "_murphy_type_id": tid,
                "__doc__": None,
            }
            if base is Ref:
                has = {p for k, p in enumerate(_PROTOCOLS) if bits >> k & 1}
                body["__slots__"] = ()
                body.update((p, _forwarder(p)) for p in has if _forwarder(p) is not None)
                body["__hash__"] = (
                    _cached_hash if "__hash__" in has else None if "__hash__ None" in has else Ref.__hash__
                )
            elif base is wire.NamedTupleValue:
                body["__getattr__"] = _tuple_attr
            cls = self.classes[(tid, bits, base)] = StandIn(name[:100], (base,), body)
        return cls

    def _object(self, tag: bytes, fields: tuple):
        """The stand-in of a program object (``R``, ``O``, ``P`` with its id): the one this channel has for it."""
        pid = fields[0] if fields else None
        if type(pid) is not int:
            raise wire.Refused("not a program object")
        if tag == b"R":
            if len(fields) != 5 or type(fields[2]) is not str or type(fields[3]) is not str:
                raise wire.Refused("not a reference")
            hashed = fields[4]
            if hashed is not None and type(hashed) is not int and hashed is not False:
                raise wire.Refused("not a reference")
            cls = self.stand_in(fields[1], Ref)
            ref = self.objects.get(pid)
            if type(ref) is not cls:
                ref = self.objects[pid] = object.__new__(cls)
                object.__setattr__(ref, "_murphy_channel", self)
                object.__setattr__(ref, "_murphy_id", pid)
            for slot, v in (
                ("_murphy_text", fields[2][:300]),
                ("_murphy_note", fields[3][:300]),
                ("_murphy_hash", hashed),
            ):
                object.__setattr__(ref, slot, v)
            return ref
        if tag == b"O":
            if len(fields) != 6 or type(fields[2]) not in _SCALARS_CROSSING or type(fields[5]) is not bool:
                raise wire.Refused("not a program value")
            if not all(t is None or type(t) is str for t in fields[3:5]):
                raise wire.Refused("not a program value")
            cls = self.stand_in(fields[1], value_class(type(fields[2])))
            value = self.objects.get(pid)
            if type(value) is not cls or cls._murphy_base.__ne__(value, fields[2]):
                value = self.objects[pid] = cls._murphy_base.__new__(cls, fields[2])
                value.__dict__["_murphy"] = (self, pid, *fields[3:])
            return value
        cls = self.stand_in(fields[1], wire.NamedTupleValue)  # P: a namedtuple of the program
        value = self.objects.get(pid)
        if type(value) is not cls or tuple(value) != fields[4]:
            value = self.objects[pid] = wire.NamedTupleValue.__new__(cls, fields[2], fields[3], fields[4])
            value.__dict__["_murphy_home"] = pid
        return value

    def home_id(self, x) -> int | None:
        """The program id of `x` when it stands for one of this program process's objects, else None."""
        t = type(x)
        if issubclass(t, Ref):
            return x._murphy_id if x._murphy_channel is self else None
        if isinstance(t, StandIn):  # a value or namedtuple of the program
            if t.__dict__.get("_murphy_owner") is not self:
                return None
            return x.__dict__["_murphy"][1] if "_murphy" in x.__dict__ else x.__dict__.get("_murphy_home")
        if isinstance(x, StandIn):  # the class standing for a program class
            return x._murphy_type_id if x.__dict__.get("_murphy_owner") is self else None
        home = None
        if isinstance(x, BaseException):
            remote = x.__dict__.get("__murphy_remote__")
            home = remote[4] if remote is not None else None
        elif isinstance(x, type) and issubclass(x, BaseException):
            home = x.__dict__.get("__murphy_home__")
        return home[1] if home is not None and home[0] is self.decoder else None

    def _home(self, encoder, x, depth: int) -> None:
        """The test side sends nothing but plain data and the program's own objects (going home, by `home_id`)."""
        library = _library_name(x)
        if library is not None:  # a standard-library function: the program side's own, by name
            encoder.out += b"L"
            return encoder.value(library, depth + 1)
        raise wire.NotPlain(describe(x))

    # --- requests ---------------------------------------------------------------------------------------------
    def names(self, names: tuple[str, ...]) -> dict:
        """The values of those of `names` the program defines (loading the program's exception, raised)."""
        return self.request(b"N", names)[0]

    def call(self, ref, args: tuple, kwargs: dict):
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
            if type(v) in _FOLLOWED or type(v).__name__ == "ndarray" and type(v).__module__ == "numpy":
                kept[id(v)] = v
                tokens.append(id(v))
            else:
                tokens.append(None)
        result, changes, same = self.request(b"C", (ref, args, kwargs, tuple(tokens), gone))
        for token, new in changes or ():
            _sync(kept[token], new)
        return result if same is None else kept[same]

    def op(self, target, op: str, args: tuple):
        return self.request(b"O", (target, op, args))[0]

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
        if self.decoding:  # a program object used while a reply is decoded (by a library rebuilding a value)
            self.fail(
                "a program object was used while the program's reply was being decoded; the case fails closed"
            )
        try:
            payload = wire.encode(value, self._home, homed=self.home_id)
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
            self.decoding = True
            got = self.decoder.decode(data)
        except wire.Fault as f:  # the program process ended, or the timer struck (it set our fault)
            self.fault = self.fault or f
            raise self.fault from None
        except wire.Refused as e:
            self.fail(f"refused the program's reply: {e}")
        except OSError as e:
            self.fail(f"the program process is gone ({e.strerror})", "lost")
        finally:
            self.decoding = False
        violation = reply_fits(kind, value, reply, got, self.kept)
        if violation:
            self.fail(f"protocol violation: the program process's reply {violation}; the case fails closed")
        if reply == b"V":
            return got
        if reply == b"S":
            self.fail(got, "syntax")
        if isinstance(got, MemoryError):
            self.fail("the program raised MemoryError", "memory")
        raise got


def _printed(text) -> tuple:
    if not (type(text) is tuple and len(text) == 2 and all(type(t) is str for t in text)):
        raise wire.Refused("printed text that is not (stdout, stderr)")
    return text


def reply_fits(kind: bytes, request, reply: bytes, got, kept=()) -> str:
    """The one rule of every request/reply pair: the reply carries exactly what its request asked for. '' when it
    does, else what it carries beyond that. ``E``: the program's exception (but a StopIteration, which would end a
    loop of the test's own: ``map(candidate, ...)``, unless the request stepped an iterator of the program's);
    ``V`` to ``N`` (names): those of the names asked for that the program defines, nothing else; to ``C`` (a call):
    (its result, the changed arguments: positions or keywords of the arguments sent, each once, or None); to ``O``:
    (its result, None)."""
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
        stepping = kind == b"O" and request[1] == "next"
        if isinstance(got, (StopIteration, StopAsyncIteration)) and not stepping:
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
                elif not (a is b or type(a) is type(b) and type(a) in _SCALARS and a == b):
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
    elif type(new) is t and t.__name__ == "ndarray" and old.shape == new.shape and old.dtype == new.dtype:
        old[...] = new  # a numpy array changed in place: its view and its base see it too


_MUTABLE = frozenset(
    {
        list,
        dict,
        set,
        bytearray,
        collections.deque,
        collections.OrderedDict,
        collections.Counter,
        collections.defaultdict,
    }
)
_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
# sys.getrefcount of a followed argument only `Channel.kept` holds (the dict, getrefcount's argument)
_UNHELD = 2
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
