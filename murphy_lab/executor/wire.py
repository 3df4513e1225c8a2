"""Plain data between the test side (the test worker) and the program process: the only thing that crosses.

Loaded by path (stdlib only) on both sides. A value crosses as JSON of exact builtin types: int, float (NaN and
inf included), complex, str, bytes, bool, None, tuple, list, dict, set, frozenset. A subclass of one of these
(namedtuple, OrderedDict, Counter, IntEnum, ...) crosses as its builtin base, read with the base's own methods;
a numpy scalar as its Python value. Anything else stays where it lives and crosses as a *handle*: the other side
gets a `Remote`, which it can call, index, iterate, take attributes of, and compare only with another `Remote`
(so `Solution().method(...)`, generators and callbacks work, and an object whose `__eq__` lies compares equal
to nothing of ours). The receiving side builds every value with its own constructors, so what it compares is
always a genuine builtin value whatever the sender did. (A numeric numpy array crosses as dtype, shape and its
numbers, and is rebuilt by the receiver's own numpy; an object array stays a handle.)

Exceptions cross as the first builtin class in their MRO and their message (plus the program's traceback lines
for feedback). A fault of the channel (broken message, a side that died, a stop) sets `Endpoint.fault`, which
the test side checks before it writes a pass: a test that could not run this way fails closed.
"""

from __future__ import annotations

import builtins
import json
import json.encoder
import json.scanner
import os
import sys
import traceback

MAX_MESSAGE = 256 << 20  # bytes in one message
MAX_DEPTH = 200  # nesting of a crossing value
NUMERIC_KINDS = (
    "biufc"  # numpy arrays of these dtypes cross as their numbers (bool, int, uint, float, complex)
)
_BUILTIN_CLASSES = {name: v for name, v in vars(builtins).items() if isinstance(v, type)}
_BUILTIN_IDS = {id(v): name for name, v in _BUILTIN_CLASSES.items()}
_type, _id, _isinstance, _len = type, id, isinstance, len
_FunctionType = _type(lambda: None)
_BASES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
sys.set_int_max_str_digits(0)


def _no_default(o):
    raise TypeError(f"not plain data: {_type(o).__name__}")


class Fault(BaseException):
    """The channel cannot carry on (the other side stopped, died, or sent something that is not a message)."""

    def __init__(self, status: str, detail: str = ""):
        super().__init__(status, detail)
        self.status, self.detail = status, detail


class Remote:
    """A handle to an object that lives on the other side; every operation is a request over the channel."""

    __slots__ = ("_ep", "_hid", "_native")

    def __init__(self, ep: Endpoint, hid: int, native: bool = False):
        object.__setattr__(self, "_ep", ep)
        object.__setattr__(self, "_hid", hid)
        object.__setattr__(self, "_native", native)  # the sender says: an object of a C type (e.g. re.Match)

    def _op(self, name: str, *args):
        return self._ep.request(["op", self._hid, name, args])

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):  # protocols (__array__, ...) are not forwarded
            raise AttributeError(name)
        return self._op("getattr", name)

    def __setattr__(self, name: str, value) -> None:
        self._op("setattr", name, value)

    def __call__(self, *args, **kwargs):
        return self._ep.request(["call", self._hid, args, kwargs])

    def __len__(self) -> int:
        return self._op("len")

    def __iter__(self):
        return self._op("iter")

    def __next__(self):
        return self._op("next")

    def __getitem__(self, key):
        return self._op("getitem", key)

    def __setitem__(self, key, value) -> None:
        self._op("setitem", key, value)

    def __delitem__(self, key) -> None:
        self._op("delitem", key)

    def __contains__(self, item) -> bool:
        return self._op("contains", item) is True

    def __bool__(self) -> bool:
        return self._op("bool") is True

    def __str__(self) -> str:
        s = self._op("str")
        return s if _type(s) is str else "<remote object>"

    def __repr__(self) -> str:
        s = self._op("repr")
        return s if _type(s) is str else "<remote object>"

    def __hash__(self) -> int:
        return hash(("remote", self._hid))

    def _cmp(self, op: str, other):
        if _type(other) is Remote and other._ep is self._ep:  # two objects of the other side: its own rule
            return self._op(op, other) is True
        return NotImplemented

    def __eq__(self, other):
        return True if other is self else self._cmp("eq", other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __lt__(self, other):
        return self._cmp("lt", other)

    def __le__(self, other):
        return self._cmp("le", other)

    def __gt__(self, other):
        return self._cmp("gt", other)

    def __ge__(self, other):
        return self._cmp("ge", other)


_OPS = {
    "getattr": getattr,
    "setattr": setattr,
    "len": len,
    "iter": iter,
    "next": next,
    "getitem": lambda o, k: o[k],
    "setitem": lambda o, k, v: o.__setitem__(k, v),
    "delitem": lambda o, k: o.__delitem__(k),
    "contains": lambda o, x: x in o,
    "bool": lambda o: bool(o),
    "str": lambda o: str(o)[:4000],
    "repr": lambda o: repr(o)[:4000],
    "eq": lambda a, b: bool(a == b),
    "lt": lambda a, b: bool(a < b),
    "le": lambda a, b: bool(a <= b),
    "gt": lambda a, b: bool(a > b),
    "ge": lambda a, b: bool(a >= b),
}


class Endpoint:
    """One side of the channel: sends requests, serves the other side's requests while it waits for a reply."""

    def __init__(self, fd: int, trace_files: tuple[str, ...] = ()):
        self.fd = fd
        self.objects: dict[int, object] = {}  # handles this side gave out: id -> object (kept alive)
        self.trace_files = trace_files  # traceback frames of these files travel with an exception
        self.fault: Fault | None = None
        self.buf = bytearray()  # bytes read but not consumed yet
        self.check = None  # called after serving each request (the program side: no trace hooks)
        # the C encoder and scanner of `json`, called directly: no Python-level json code (which looks up
        # builtins a program may have patched) runs on the way
        self._dump = json.encoder.c_make_encoder(
            None, _no_default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
        )
        self._scan = json.scanner.c_make_scanner(json.JSONDecoder(object_hook=self._hook))

    # --- values ---------------------------------------------------------------------------------------------
    def encode(self, x, depth: int = 0):
        t = _type(x)
        if t is str or t is bool or t is int or t is float or x is None:
            return x
        if t is _FunctionType:  # the most common handle (the program's functions): never plain, a C type
            self.objects[_id(x)] = x
            return {"h": _id(x), "n": 1}
        if depth > MAX_DEPTH:
            raise ValueError("a value nested too deeply to cross")
        d = depth + 1
        if t is list:
            return _scalars(list.copy(x)) or [self.encode(v, d) for v in list.__iter__(x)]
        if t is tuple:
            return {"t": _scalars(list(tuple.__iter__(x))) or [self.encode(v, d) for v in tuple.__iter__(x)]}
        if t is dict:
            return {"d": [[self.encode(k, d), self.encode(v, d)] for k, v in dict.items(x)]}
        if t is set or t is frozenset:
            return {"s" if t is set else "f": [self.encode(v, d) for v in t.__iter__(x)]}
        if t is complex:
            return {"c": [complex.__getattribute__(x, "real"), complex.__getattribute__(x, "imag")]}
        if t is bytes:
            return {"b": bytes.hex(x)}
        if t is Remote:
            if object.__getattribute__(x, "_ep") is self:
                return {"y": object.__getattribute__(x, "_hid")}  # the other side's own object, going home
            raise ValueError("a handle of a third process cannot cross")
        if _id(x) in _BUILTIN_IDS and t is type:
            return {"B": _BUILTIN_IDS[_id(x)]}
        for base in _BASES:  # builtin subclasses: their base value, read with the base's own methods
            if issubclass(t, base):
                return self.encode(_as_base(x, base), depth)
        np = sys.modules.get("numpy")
        if np is not None and _isinstance(x, np.generic) and not _isinstance(x, np.object_):
            return self.encode(np.generic.item(x), depth)
        if np is not None and t is np.ndarray and x.dtype.kind in NUMERIC_KINDS:  # rebuilt from its numbers
            return {"nd": [x.dtype.str, list(x.shape), self.encode(np.ndarray.tolist(x.ravel()), depth)]}
        self.objects[_id(x)] = x
        if _native(t):
            return {"h": _id(x), "n": 1}
        return {"h": _id(x)}

    def _hook(self, obj: dict):
        if _len(obj) == 2 and _type(obj.get("h")) is int and obj.get("n") == 1:
            return Remote(self, obj["h"], True)
        if _len(obj) != 1:
            raise ValueError("not a value")
        ((tag, v),) = obj.items()
        if tag == "t":
            return tuple(v)
        if tag == "d":
            return dict((k, w) for k, w in v)
        if tag == "s":
            return set(v)
        if tag == "f":
            return frozenset(v)
        if tag == "c" and all(_type(p) in (int, float) for p in v):
            return complex(v[0], v[1])
        if tag == "b" and _type(v) is str:
            return bytes.fromhex(v)
        if tag == "h" and _type(v) is int:
            return Remote(self, v)
        if tag == "y" and _type(v) is int and v in self.objects:
            return self.objects[v]
        if tag == "B" and v in _BUILTIN_CLASSES:
            return _BUILTIN_CLASSES[v]
        if tag == "nd" and _type(v) is list and _len(v) == 3:
            return _ndarray(*v)
        raise ValueError(f"not a value: {tag!r}")

    # --- messages -------------------------------------------------------------------------------------------
    def send(self, msg) -> None:
        data = "".join(self._dump(msg, 0)).encode("ascii")
        data = _len(data).to_bytes(4, "little") + data
        sent = os.write(self.fd, data)
        if sent < _len(data):  # a big message: the rest as the other side reads it
            view = memoryview(data)[sent:]
            while view:
                view = view[os.write(self.fd, view) :]

    def _fill(self, want: int) -> None:
        """Read until `want` bytes are buffered (one read brings most messages whole)."""
        buf = self.buf
        while _len(buf) < want:
            chunk = os.read(self.fd, max(1 << 16, want - _len(buf)))
            if not chunk:
                raise Fault("lost", "the other side of the channel closed it")
            buf += chunk

    def recv(self):
        buf = self.buf
        if _len(buf) < 4:
            self._fill(4)
        n = int.from_bytes(buf[:4], "little")
        if n > MAX_MESSAGE:
            raise Fault("error", f"a message of {n} bytes (the limit is {MAX_MESSAGE})")
        if _len(buf) < 4 + n:
            self._fill(4 + n)
        try:
            text = buf[4 : 4 + n].decode("ascii")
            del buf[: 4 + n]
            msg, end = self._scan(text, 0)
            if end != _len(text):
                raise ValueError("extra data after the message")
        except StopIteration:
            raise Fault("error", "a message that is not JSON") from None
        except (ValueError, TypeError, RecursionError, MemoryError) as e:
            raise Fault(
                "error", f"a message that is not plain data ({type(e).__name__}: {e})"[:500]
            ) from None
        if _type(msg) is not list or not msg or _type(msg[0]) is not str:
            raise Fault("error", "a message that is not a request or a reply")
        return msg

    def request(self, req: list):
        """Send a request and serve the other side's requests (callbacks) until its reply arrives."""
        if self.fault is not None:
            raise self.fault
        try:
            call = req[0] == "call"
            if call:  # ["call", hid, args, kwargs]: the arguments as a list and as [name, value] pairs
                _, hid, args, kwargs = req
                encoded = _scalars(list(args)) or [self.encode(v) for v in args]
                self.send(["req", "call", hid, encoded, [[k, self.encode(v)] for k, v in kwargs.items()]])
            else:
                self.send(["req", *[self.encode(v) for v in req]])
            while True:
                msg = self.recv()
                if msg[0] == "ok" and _len(msg) == 3:
                    if call:
                        _apply_changes(args, kwargs, msg[2])
                    return msg[1]
                if msg[0] == "err" and _len(msg) == 5:
                    break
                if msg[0] == "req":
                    self.serve(msg[1:])
                    continue
                if msg[0] == "stop" and _len(msg) == 3:
                    raise Fault(str(msg[1]), str(msg[2]))
                raise Fault("error", f"an unexpected message {msg[0]!r}")
        except Fault as f:
            self.fault = f
            raise
        except (OSError, ValueError, TypeError, RecursionError) as e:
            self.fault = Fault("error", f"the value could not cross ({type(e).__name__}: {e})"[:500])
            raise self.fault from None
        raise self.rebuild(msg)  # the other side's exception, as ours (outside the try: it is not a fault)

    def serve(self, req: list) -> None:
        """Perform one request of the other side and send the reply (the result or the exception)."""
        try:
            kind, hid = req[0], req[1]
            if _type(hid) is not int or hid not in self.objects:
                raise LookupError(f"no such object ({hid!r})")
            target = self.objects[hid]
            if kind == "call":
                args, kwargs = req[2], req[3]
                if _type(args) is not list or _type(kwargs) is not list:
                    raise TypeError("a call needs positional and keyword arguments")
                args, kwargs = tuple(args), dict(kwargs)
                before = _mutable_state(self, args, kwargs)
                result = target(*args, **kwargs)
                changes = _changes(self, args, kwargs, before)
            elif kind == "op" and req[2] in _OPS and _type(req[3]) is tuple:
                result, changes = _OPS[req[2]](target, *req[3]), None
            else:
                raise TypeError(f"not a request: {kind!r}")
            reply = ["ok", self.encode(result), changes]
        except Fault:
            raise
        except BaseException as e:  # noqa: BLE001 - the program's exception is the reply
            if self.check is not None:
                self.check(e)
            reply = self.error_reply(e)
        if self.check is not None:
            self.check(None)
        self.send(reply)

    def serve_forever(self) -> None:
        while True:
            try:
                msg = self.recv()
            except Fault:
                return
            if msg[0] != "req":
                return
            self.serve(msg[1:])

    # --- exceptions -----------------------------------------------------------------------------------------
    def error_reply(self, e: BaseException) -> list:
        base = next(
            (c.__name__ for c in _type(e).__mro__ if _BUILTIN_CLASSES.get(c.__name__) is c), "Exception"
        )
        try:
            args = self.encode(tuple(e.args)) if all(_type(a) in (str, int, float) for a in e.args) else None
        except BaseException:  # noqa: BLE001
            args = None
        frames = [
            [f.filename, f.lineno, f.name, f.line or ""]
            for f in traceback.extract_tb(e.__traceback__)
            if f.filename in self.trace_files
        ]
        try:
            head = "".join(traceback.format_exception_only(_type(e), e)).strip()[-2000:]
        except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
            head = base
        return ["err", base, args, head, frames[-5:]]

    def rebuild(self, msg: list) -> BaseException:
        _, name, args, head, frames = msg
        cls = _BUILTIN_CLASSES.get(name)
        if not (_isinstance(cls, type) and issubclass(cls, Exception)):
            cls = Exception
        try:
            exc = cls(*args) if _type(args) is tuple else cls(str(head).partition(": ")[2])
        except BaseException:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
            exc = Exception(str(head))
        try:
            exc.__murphy_remote__ = (frames if _type(frames) is list else [], str(head))
        except AttributeError:
            pass
        return exc


def _scalars(items: list) -> list | None:
    """`items` if every item is a str, int, float, bool or None (exact types: they cross as they are), else None."""
    for v in items:
        t = _type(v)
        if not (t is int or t is str or t is float or t is bool or v is None):
            return None
    return items


def _native(t: type) -> bool:
    """A class with no Python-level methods anywhere in its MRO (a C type such as re.Match)."""
    try:
        return not any(
            _type(v) is _FunctionType for c in type.__getattribute__(t, "__mro__") for v in vars(c).values()
        )
    except BaseException:  # noqa: BLE001
        return False


def _ndarray(dtype, shape, flat):
    """A numeric numpy array built here, with our own numpy, from plain numbers (never an object array)."""
    import numpy as np

    dt = np.dtype(str(dtype))
    if dt.kind not in NUMERIC_KINDS or _type(flat) is not list or not all(_type(n) is int for n in shape):
        raise ValueError("not a numeric array")
    return np.array(flat, dtype=dt).reshape(tuple(shape))


def _as_base(x, base):
    if base in (bool, int):
        return int.__int__(x) if base is int else bool(int.__int__(x))
    if base is float:
        return float.__float__(x)
    if base is complex:
        return complex.__complex__(x)
    if base is str:
        return str.__str__(x)
    if base is bytes:
        return bytes.__bytes__(x)
    if base in (list, tuple):
        return base(base.__iter__(x))
    if base is dict:
        return dict(dict.items(x))
    return base(base.__iter__(x))


def _mutable_state(ep: Endpoint, args: tuple, kwargs: dict) -> dict:
    """The encoded state of every list/dict/set argument before a call (tests inspect in-place changes)."""
    state = {}
    for items in (enumerate(args), kwargs.items()):
        for key, v in items:
            if _type(v) in (list, dict, set):
                state[key] = ep.encode(v)
    return state


def _changes(ep: Endpoint, args: tuple, kwargs: dict, before: dict) -> list | None:
    out = []
    for key, old in before.items():
        v = args[key] if _type(key) is int else kwargs[key]
        new = ep.encode(v)
        if new != old:
            out.append([key, new])
    return out or None


def _apply_changes(args: tuple, kwargs: dict, changes) -> None:
    """Write the other side's in-place changes to our own argument objects (by builtin methods only)."""
    if not changes:
        return
    for key, new in changes:
        old = args[key] if _type(key) is int and key < _len(args) else kwargs.get(key)
        _sync(old, new)


def _sync(old, new) -> None:
    if _type(old) is list and _type(new) is list:
        if _len(old) == _len(new):
            for i, (a, b) in enumerate(zip(old, new)):
                if _type(a) in (list, dict) and _type(a) is _type(b):
                    _sync(a, b)
                elif not (_type(a) is _type(b) and a == b):
                    old[i] = b
        else:
            old[:] = new
    elif _type(old) is dict and _type(new) is dict:
        for k in [k for k in old if k not in new]:
            del old[k]
        for k, b in new.items():
            a = old.get(k)
            if _type(a) in (list, dict) and _type(a) is _type(b):
                _sync(a, b)
            else:
                old[k] = b
    elif _type(old) is set and _type(new) is set:
        old.clear()
        old.update(new)
