"""bytes -> values, under the bounds: the decoder of the wire format (`wire_format.py`).

Loaded by `wire.py` by path. The receiver rebuilds every value with its own constructors from a closed set of types:
the builtin ones, the standard library's of the format, numpy's and pandas' (from dtype names, bytes and plain
values), and `values.py`'s (no string a sender chose becomes an attribute, a class body entry, a namespace key, a
module name or a callable). An exception class is our subclass of its builtin and program bases, rebuilt alike, its
plain attributes data read through ``__getattr__``. Decoding is total (any bytes: a value or `Refused`), linear in
the message size and bounded by `wire_format`'s limits, each counted before the items it covers are read.
"""

from __future__ import annotations

import collections
import importlib
import re

fmt = globals()["wire_format"]  # set by wire.py before this file runs
values = globals()["values"]
libraries = globals()["libraries"]  # numpy's and pandas' values (`wire_libraries.py`)
# the format's names this module reads, bound here once (module globals: the hot loops read no attribute)
(MAX_CLASSES, MAX_DEPTH, MAX_FIELDS, MAX_FRACTION_BYTES, MAX_INT_BYTES, MAX_ITEMS, MAX_PER_HASH) = (
    fmt.MAX_CLASSES,
    fmt.MAX_DEPTH,
    fmt.MAX_FIELDS,
    fmt.MAX_FRACTION_BYTES,
    fmt.MAX_INT_BYTES,
    fmt.MAX_ITEMS,
    fmt.MAX_PER_HASH,
)
NUMERIC_KINDS, Refused = fmt.NUMERIC_KINDS, fmt.Refused
_type, _len = type, len
_F64, _C128, _U32, _SMALL, _UNCHECKED = fmt.F64, fmt.C128, fmt.U32, fmt.SMALL, fmt.UNCHECKED
BUILTINS, _BUILTIN_CLASSES, _EXC_BASES = fmt.BUILTINS, fmt.BUILTIN_CLASSES, fmt.EXC_BASES
_SEQ_BUILDERS, _TAGS, _DATE_NAMES = fmt.SEQ_BUILDERS, fmt.TAGS, fmt.DATE_NAMES
range_length, decimal_in_bounds = fmt.range_length, fmt.decimal_in_bounds
NamedTupleValue, MatchValue, ProgramModule = values.NamedTupleValue, values.MatchValue, values.ProgramModule
# a tz database key (no "..", no absolute path)
_ZONE_KEY = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")


class Decoder:
    """bytes -> values, under the bounds. `objects(tag, fields)` builds the test side's stand-in of one of the
    program's objects (``R``, ``O``, ``P`` with an id) and `home(id)` finds one of the program's objects (the
    program side); either is None where those tags may not come."""

    def __init__(self, objects=None, home=None, untrusted: bool = True):
        self.objects, self.home, self.untrusted = objects, home, untrusted
        self.classes: dict = {}  # rebuilt exception classes of this channel

    def decode(self, data: bytes):
        self.buf, self.pos, self.end, self.items, self.fraction_bytes = data, 0, _len(data), 0, 0
        try:
            x = self.value(0)
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - total: any bytes are a value or Refused (a fault of the channel)
            raise Refused(f"not plain data ({_type(e).__name__})") from None
        if self.pos != _len(data):
            raise Refused("extra bytes after the value")
        return x

    def take(self, n: int) -> bytes:
        pos = self.pos
        if pos + n > self.end:
            raise Refused("a message cut short")
        self.pos = pos + n
        return self.buf[pos : pos + n]

    def count(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise Refused("a message cut short")
        self.pos = pos + 4
        return _U32.unpack_from(self.buf, pos)[0]

    def value(self, depth: int):
        buf, pos = self.buf, self.pos
        tag = buf[pos]  # IndexError (cut short) is refused by `decode`
        if tag == 0x69:  # i: a small int
            end = pos + 2 + buf[pos + 1]
            if end > self.end:
                raise Refused("a message cut short")
            self.pos = end
            return int.from_bytes(buf[pos + 2 : end], "little", signed=True)
        if tag == 0x73:  # s: str
            start = pos + 5
            end = start + _U32.unpack_from(buf, pos + 1)[0]
            if end > self.end:
                raise Refused("a message cut short")
            self.pos = end
            return buf[start:end].decode("utf-8", "surrogatepass")
        self.pos = pos + 1
        if tag == 0x66:  # f: float
            return _F64.unpack(self.take(8))[0]
        if tag == 0x4E or tag == 0x54 or tag == 0x46:  # N T F
            return None if tag == 0x4E else tag == 0x54
        tag = _TAGS[tag]
        if tag in _SEQ_BUILDERS:
            n = self.container(depth)
            value, d = self.value, depth + 1
            items = [value(d) for _ in range(n)]
            if n > MAX_PER_HASH and self.untrusted:
                _bounded_hashes(items)
            return items if tag == b"l" else tuple(items)
        if tag == b"d":
            return dict(self.pairs(depth))
        if tag == b"S" or tag == b"z":
            n = self.container(depth)
            size = self.count()
            value, d = self.value, depth + 1
            items = [value(d) for _ in range(n)]
            if n > MAX_PER_HASH and self.untrusted:
                _bounded_hashes(items)
            return same_set(set if tag == b"S" else frozenset, items, size)
        return self.rich(tag, depth)

    def pairs(self, depth: int) -> list:
        n = self.container(depth)
        value, d = self.value, depth + 1
        pairs = [(value(d), value(d)) for _ in range(n)]
        if n > MAX_PER_HASH and self.untrusted:
            _bounded_hashes([k for k, _ in pairs])
        return pairs

    def container(self, depth: int) -> int:
        """A container's length, counted against the bounds before any of its items is read."""
        n = self.count()
        self.items += n
        if self.items > MAX_ITEMS or depth >= MAX_DEPTH:
            raise Refused(f"a message over {MAX_ITEMS:,} values or {MAX_DEPTH} levels")
        return n

    def int(self) -> int:
        buf, pos = self.buf, self.pos
        tag = buf[pos]
        if tag == 0x69:  # i
            n, start = buf[pos + 1], pos + 2
        elif tag == 0x49:  # I
            self.pos = pos + 1
            n, start = self.count(), pos + 5
        else:
            raise Refused("an int was expected")
        if n > MAX_INT_BYTES:
            raise Refused(f"an int of {n:,} bytes (the limit is {MAX_INT_BYTES:,})")
        if start + n > self.end:
            raise Refused("a message cut short")
        self.pos = start + n
        return int.from_bytes(buf[start : start + n], "little", signed=True)

    def rich(self, tag: bytes, depth: int):
        d = depth + 1
        if tag == b"h" and self.home is not None:
            return self.home(self.int())
        # the program side: a stdlib function the test passed, by name
        if tag == b"L" and self.home is not None:
            module, qualname = self.value(d)
            x = importlib.import_module(module)
            for part in qualname.split("."):
                x = getattr(x, part)
            return x
        if tag in (b"R", b"O") and self.objects is not None:
            fields = self.value(d)
            if _type(fields) is not tuple:
                raise Refused("not a program object")
            return self.objects(tag, fields)
        if tag == b"I":
            self.pos -= 1
            return self.int()
        if tag in (b"b", b"a", b"D", b"B", b"M", b"w"):
            data = bytes(self.take(self.count()))
            if tag == b"b" or tag == b"a":
                return data if tag == b"b" else bytearray(data)
            if tag == b"D":
                return decimal_in_bounds(importlib.import_module("decimal").Decimal(data.decode("ascii")))
            name = data.decode("utf-8", "surrogatepass")
            if tag == b"M":
                return ProgramModule(name)
            if tag == b"w":
                return _zone(name)
            if name not in BUILTINS:
                raise Refused(f"no builtin named {name[:40]!r} may cross")
            return BUILTINS[name]
        if tag == b"c":
            return complex(*_C128.unpack(self.take(16)))
        if tag == b"Q":
            start = self.pos
            num, den = self.int(), self.int()
            self.fraction_bytes += self.pos - start
            if self.fraction_bytes > MAX_FRACTION_BYTES:
                raise Refused(f"Fractions of more than {MAX_FRACTION_BYTES:,} bytes in one message")
            return importlib.import_module("fractions").Fraction(num, den)
        if tag == b"q":
            maxlen = self.value(d)
            items = self.value(d)
            if maxlen is not None and _type(maxlen) is not int or _type(items) is not list:
                raise Refused("not a deque")
            return collections.deque(items, maxlen)
        if tag == b"j":
            items = self.value(d)
            if _type(items) is not list:
                raise Refused("not an iterator")
            return iter(items)
        if tag == b"r":
            start, stop, step = self.int(), self.int(), self.int()
            self.items += range_length(start, stop, step)  # as long as the list it stands for
            if self.items > MAX_ITEMS:
                raise Refused(f"a message over {MAX_ITEMS:,} values (a range counts as its length)")
            return range(start, stop, step)
        if tag == b"o" or tag == b"k":
            pairs = self.pairs(depth)
            return collections.OrderedDict(pairs) if tag == b"o" else collections.Counter(dict(pairs))
        if tag == b"e":
            factory = self.value(d)
            if factory is not None and (
                _type(factory) is not type or _BUILTIN_CLASSES.get(factory.__name__) is not factory
            ):
                raise Refused("not a defaultdict")
            if self.buf[self.pos] != 0x64:
                raise Refused("not a defaultdict")
            self.pos += 1
            return collections.defaultdict(factory, self.pairs(d))
        if tag == b"v":
            kind, mapping = self.value(d), self.value(d)
            if kind not in (0, 1, 2) or _type(kind) is not int or _type(mapping) is not dict:
                raise Refused("not a dict view")
            return (mapping.keys, mapping.values, mapping.items)[kind]()
        fields = self.value(d)
        if _type(fields) is not tuple:
            raise Refused(f"a malformed {tag!r} value")
        if tag in _DATE_NAMES:
            return getattr(importlib.import_module("datetime"), _DATE_NAMES[tag])(*fields)
        if tag == b"Z":
            return importlib.import_module("datetime").timezone(*fields)
        if tag == b"X":
            return rebuild_exception(self, fields)
        if tag == b"K":
            return self.exception_class(fields)
        if tag == b"P":
            return self.namedtuple(fields)
        if tag == b"m":
            return _match(fields)
        if tag == b"A":
            return libraries.ndarray(*fields)
        if tag == b"n":
            return libraries.numpy_scalar(*fields)
        if tag == b"p":
            return libraries.rebuild_pandas(fields)
        raise Refused(f"not a value (tag {tag!r})")

    def namedtuple(self, fields: tuple):
        home, described, name, names, items = fields
        if _type(name) is not str or _type(names) is not tuple or _type(items) is not tuple:
            raise Refused("not a namedtuple")
        if _len(names) > MAX_FIELDS or _len(names) != _len(items) or not all(_type(f) is str for f in names):
            raise Refused(f"not a namedtuple (or one of more than {MAX_FIELDS} fields)")
        if home is not None and self.objects is not None:  # the program's own: the channel's stand-in
            return self.objects(b"P", fields)
        return NamedTupleValue(name, names, items)

    def rebuilt(self, key, make) -> type:
        """The class of this channel for `key`, made once."""
        cls = self.classes.get(key)
        if cls is None:
            if _len(self.classes) >= MAX_CLASSES:
                raise Refused(f"more than {MAX_CLASSES} rebuilt classes")
            cls = self.classes[key] = make()
        return cls

    def exception_class(self, desc, depth: int = 0) -> type:
        """A builtin exception class (by name), or ours for the program's: a subclass of its bases rebuilt alike
        (so ``except BankError`` catches a rebuilt subclass), named like it, its plain class attributes data."""
        if _type(desc) is str:
            if desc not in _EXC_BASES:
                raise Refused("not an exception class")
            return _EXC_BASES[desc]
        if _type(desc) is not tuple or _len(desc) != 5 or depth > 10:
            raise Refused("not an exception class")
        home, name, module, bases, attrs = desc
        if _type(name) is not str or _type(module) is not str or _type(bases) is not tuple or not bases:
            raise Refused("not an exception class")
        if home is not None and _type(home) is not int or _type(attrs) is not dict:
            raise Refused("not an exception class")
        if not all(_type(k) is str and k.isidentifier() and k[:1] != "_" for k in attrs):
            raise Refused("not an exception class (attribute names)")
        built = tuple(self.exception_class(b, depth + 1) for b in bases)
        key = ("K", home) if home is not None else ("K", repr(desc))

        def make() -> type:
            body = {
                "__str__": _program_str,
                "__getattr__": _program_attr,
                "__module__": module,
                "__murphy_attrs__": attrs,
                "__murphy_home__": (self, home),
            }
            for choice in (built, (built[0],), (_first_builtin(built[0]),)):
                try:
                    return ExceptionClass(name, choice, body)
                except TypeError:  # e.g. bases whose layouts conflict once their mixins are left out
                    continue
            raise Refused("not an exception class")

        return self.rebuilt(key, make)


class ExceptionClass(type):
    """The metaclass of rebuilt exception classes: a plain class attribute of the program's class is data read
    here (``BankError.code``), never a class-body entry."""

    def __getattr__(cls, attr: str):
        if attr[:1] != "_":
            found = _class_data(cls, attr)
            return found[0] if found else _ask_home(cls, cls.__dict__.get("__murphy_home__"), attr)
        raise AttributeError(attr)


def _class_data(cls: type, attr: str) -> tuple:
    """(the plain class attribute `attr` of a rebuilt exception class or one of its bases,) or ()."""
    for c in type.__getattribute__(cls, "__mro__"):
        data = c.__dict__.get("__murphy_attrs__")
        if data is not None and attr in data:
            return (data[attr],)
    return ()


def _first_builtin(cls: type) -> type:
    return next((c for c in cls.__mro__ if _EXC_BASES.get(c.__name__) is c), Exception)


def rebuild_exception(decoder: Decoder, fields: tuple) -> BaseException:
    """The exception as ours: its class (`Decoder.exception_class`), its args, its plain attributes (data of ours,
    read through ``__getattr__``), the program's frames as data, its cause and context rebuilt alike."""
    if _len(fields) != 10:
        raise Refused("not an exception")
    desc, args, text, head, frames, attrs, cause, context, suppress, home = fields
    cls = decoder.exception_class(desc)
    if (
        _type(text) is not str
        or _type(head) is not str
        or _type(args) is not tuple
        or _type(attrs) is not dict
        or _type(suppress) is not bool
        or home is not None
        and _type(home) is not int
    ):
        raise Refused("not an exception")
    if _type(frames) is not tuple or not all(_frame(f) for f in frames):
        raise Refused("not an exception (malformed frames)")
    if not all(_type(k) is str and k.isidentifier() and k[:1] != "_" for k in attrs):
        raise Refused("not an exception (attribute names)")
    try:
        exc = cls(*args)
    except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError needs five arguments
        exc = cls.__new__(cls)
        exc.args = args
    exc.__murphy_remote__ = (frames, head[-2000:], text[:2000], attrs, (decoder, home))
    for link, linked in (("__cause__", cause), ("__context__", context)):
        if linked is not None:
            if _type(linked) is not tuple:
                raise Refused("not an exception (its cause)")
            setattr(exc, link, rebuild_exception(decoder, linked))
    exc.__suppress_context__ = suppress
    return exc


def _frame(f) -> bool:
    """(file, line number, function, line text), of plain types (the test side formats it)."""
    return (
        _type(f) is tuple
        and _len(f) == 4
        and _type(f[1]) is int
        and all(_type(f[i]) is str for i in (0, 2, 3))
    )


def _program_str(self) -> str:
    remote = getattr(self, "__murphy_remote__", None)
    return remote[2] if remote else BaseException.__str__(self)


def _program_attr(self, attr: str):
    """A plain attribute the program's exception had, or its class had (data, looked up only when nothing of ours
    has the name); any other, the program's, asked."""
    remote = self.__dict__.get("__murphy_remote__")
    if attr[:1] != "_":
        if remote is not None and attr in remote[3]:
            return remote[3][attr]
        found = _class_data(type(self), attr)  # its class's data, as the class has it
        return found[0] if found else _ask_home(self, remote[4] if remote is not None else None, attr)
    raise AttributeError(attr)


def _ask_home(x, home, attr: str):
    """Any other attribute of a program exception or exception class (a method, `e.hint()`): the program's own,
    asked of the object on the test side's channel (`channel.Channel` sets itself as its decoder's ``channel``)."""
    channel = getattr(home[0], "channel", None) if home is not None and home[1] is not None else None
    if channel is None:
        raise AttributeError(attr)
    return channel.op(x, "getattr", (attr,))


def same_set(kind: type, items: list, size: int):
    """A set (or frozenset) of `items` built with the table size the sender's had (`size`: its __sizeof__), so
    that it iterates in the sender's order where CPython's order depends on the table (sets of ints): as a set
    literal's (`set(frozenset(...))`: the smallest table), or as one grown item by item (`set(list)`)."""
    grown = kind(items)
    if size == kind.__sizeof__(grown):
        return grown
    merged = set(frozenset(items))
    merged = merged if kind is set else frozenset(merged)
    return merged if size == kind.__sizeof__(merged) else grown


def _zone(key: str):
    """`zoneinfo.ZoneInfo(key)`, the receiver's own, for a tz database key."""
    if _len(key) > 100 or not _ZONE_KEY.fullmatch(key):
        raise Refused("not a time zone key")
    return importlib.import_module("zoneinfo").ZoneInfo(key)


def _match(fields: tuple):
    string, spans, names, lastindex, pos, endpos = fields
    if (
        _type(string) not in (str, bytes)
        or _type(spans) is not tuple
        or _type(names) is not dict
        or not spans
    ):
        raise Refused("not a match")
    if not all(_type(s) is tuple and _len(s) == 2 and all(_type(i) is int for i in s) for s in spans):
        raise Refused("not a match")
    if not all(_type(k) is str and _type(v) is int and 0 < v < _len(spans) for k, v in names.items()):
        raise Refused("not a match")
    if (
        not (lastindex is None or _type(lastindex) is int)
        or _type(pos) is not int
        or _type(endpos) is not int
    ):
        raise Refused("not a match")
    return MatchValue(string, spans, names, lastindex, pos, endpos)


def _bounded_hashes(items: list) -> None:
    """Refuse a container with more than MAX_PER_HASH distinct values of one predictable hash (a stand-in of a
    program object is not counted: its equality runs in Python, where the timer reaches)."""
    groups: dict[int, list] = {}
    for v in items:
        t = _type(v)
        if t in _UNCHECKED or (t is int and -_SMALL < v < _SMALL) or getattr(t, "_murphy_python_eq", False):
            continue
        try:
            h = hash(v)
        except TypeError:
            continue
        group = groups.get(h)
        if group is None:
            groups[h] = [v]
        elif v not in group:
            group.append(v)
            if _len(group) > MAX_PER_HASH:
                raise Refused(f"a container with more than {MAX_PER_HASH} distinct values of one hash")
