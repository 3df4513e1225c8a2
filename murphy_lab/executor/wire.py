"""What crosses between a test and its program: plain data in a small binary tag-length-value format.

Loaded by path (stdlib only) by the test worker and by the program processes. One message is a 4-byte length, a
kind byte and one value. A value is a one-byte tag and its payload:

    N T F                  None, True, False
    i  len(1) bytes        int, two's complement, little-endian (I: a 4-byte length); no decimal text anywhere
    f  float64   c  2 x float64                 float (NaN and inf included), complex
    s b a  len(4) bytes    str (UTF-8, lone surrogates kept), bytes, bytearray
    l t S z  n(4) items    list, tuple, set, frozenset;   d  n(4) key value ...   dict
    Q  int int             Fraction          D  str            Decimal
    j  list                an iterator (program -> test: a generator or builtin iterator, drained)
    q  maxlen items        deque             r  int int int    range (at most MAX_ITEMS long)
    o  pairs   k  pairs    OrderedDict, Counter        e  factory pairs   defaultdict (a builtin factory or None)
    Y H W G Z  fields      date, time, datetime, timedelta, fixed-offset timezone (constructor arguments)
    m  string spans names  re.Match (a final C type)
    P  name fields values  namedtuple        U  class name flag value   enum member (Enum, Flag)
    X  name base args text head frames attrs   exception   K  name base   exception class
    B  name                a builtin class or function, by name (the receiver's own)
    L  module qualname     a standard-library function (test -> program only: the program side's own)
    A  dtype shape bytes   numeric numpy array (numpy scalars cross as their Python value)
    M  name                a module, by name (the test side never imports it because of this)
    R  id type text        a reference to an object that stays in the program process (program -> test)
    h  id                  one of those objects going home as an argument (test -> program)

The receiver rebuilds every value with its own constructors from a closed set of types: the builtin ones, the
standard library's above, and `values.py`'s (an enum member or namedtuple is a frozen value of ours holding its
class name, member or field names and items as data; no string a sender chose becomes an attribute, a class body
entry, a namespace key, a module name or a callable). An exception is its first builtin class, or our subclass of
it named like the program's (its name is only the class's ``__name__``; its plain attributes are data read through
``__getattr__``). Builtin subclasses cross as their base, read with the base's own methods (IntEnum and IntFlag
members as int, StrEnum as str). Decoding is total (any bytes: a value or `Refused`), linear in the message size
and bounded: `MAX_MESSAGE` bytes, `MAX_ITEMS` values (a range counts as its length), `MAX_DEPTH` levels, ints of
at most `MAX_INT_BYTES`, Decimals of exponent at most `MAX_DECIMAL_EXPONENT`, Fractions' parts together at most
`MAX_FRACTION_BYTES` (their normalizing gcd is quadratic), at most `MAX_CLASSES` rebuilt exception classes per
channel, at most `MAX_FIELDS` fields or attributes of one value, and no container of untrusted data with more than
`MAX_PER_HASH` distinct values of one hash (a set of equal-hash keys is quadratic to build; str and bytes hashes
are randomized per process, so only the hashes a sender can predict are counted). A message over a bound is
`Refused`.
"""

from __future__ import annotations

import builtins
import collections
import enum
import importlib
import importlib.util
import os
import struct
import sys
import traceback

MAX_MESSAGE = 64 << 20  # bytes in one message (a 32 MB string crosses)
MAX_ITEMS = 1 << 22  # values in one message (a list of 4 million items crosses)
MAX_DEPTH = 200  # nesting of a value
MAX_INT_BYTES = 1 << 18  # bytes of one int (about 631,000 decimal digits: factorial(100_000) crosses)
MAX_FRACTION_BYTES = 1 << 16  # bytes of all Fraction numerators and denominators of one message
MAX_DECIMAL_EXPONENT = (
    158_000  # |adjusted exponent| of a Decimal: about MAX_INT_BYTES' digits (int(), round()
)
# of Decimal('1e999999999') would build a billion-digit int in C, out of the timer's reach)
MAX_CLASSES = 256  # exception classes one channel rebuilds
MAX_FIELDS = 256  # fields of one namedtuple, plain attributes of one exception
MAX_PER_HASH = 8  # distinct values of one hash in one container of untrusted data
NUMERIC_KINDS = "biufc"  # numpy arrays of these dtype kinds cross as their bytes

_type, _len, _isinstance, _issubclass = type, len, isinstance, issubclass


def _sibling(name: str):
    """A module of ours next to this file, loaded by path (this file is loaded by path too)."""
    spec = importlib.util.spec_from_file_location(
        f"_murphy_{name}", os.path.join(os.path.dirname(__file__), f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


values = _sibling("values")
EnumValue, NamedTupleValue, ProgramModule = values.EnumValue, values.NamedTupleValue, values.ProgramModule
MatchValue = values.MatchValue
_F64, _C128, _U32 = struct.Struct("<d"), struct.Struct("<dd"), struct.Struct("<I")
_SMALL = 1 << 60  # ints this small hash to themselves: distinct ones never collide (but -1 and -2)
_BUILTIN_CLASSES = {n: v for n, v in vars(builtins).items() if _isinstance(v, type)}
_PURE = (
    "abs all any ascii bin callable chr divmod format hash hex id isinstance issubclass iter len max min next oct "
    "ord pow repr round sorted sum zip map filter reversed enumerate"
).split()  # builtin functions that may cross by name (never open, exec, eval, __import__, ...)
BUILTINS = dict(_BUILTIN_CLASSES, **{n: getattr(builtins, n) for n in _PURE})
_BUILTIN_NAMES = {id(v): n for n, v in BUILTINS.items()}
_EXC_BASES = {n: c for n, c in _BUILTIN_CLASSES.items() if _issubclass(c, BaseException)}
_SMALL_INTS = [b"i\x01" + i.to_bytes(1, "little", signed=True) for i in range(-128, 128)]
_UNCHECKED = frozenset(
    {str, bytes, bool, type(None), list, dict, set, bytearray}
)  # unhashable or unpredictable


class Fault(BaseException):
    """The channel cannot carry on: the program process ended, the limit struck, or a message was refused."""

    def __init__(self, status: str, detail: str = ""):
        super().__init__(status, detail)
        self.status, self.detail = status, detail


class Refused(ValueError):
    """A message that is not plain data, or over one of the bounds."""


class NotPlain(TypeError):
    """A value of the test side that is not plain data: it cannot cross (the test side serves nothing)."""


def not_plain(encoder: Encoder, x, depth: int) -> None:
    raise NotPlain(f"a {_type(x).__name__} object, which is not plain data")


class Encoder:
    """Values -> bytes. `other(encoder, x, depth)` writes (or refuses) a value that is not plain data: the program
    side makes it a reference (``R``), the test side sends one of the program's references home (``h``) and refuses
    anything else."""

    def __init__(self, other=not_plain, direct: frozenset = frozenset(), keep=None) -> None:
        self.out = bytearray()
        self.keep = (
            keep  # the program side's: keeps an object alive and returns its id (an enum member's home)
        )
        self.items = 0
        self.other = other
        self.direct = (
            direct  # types that go straight to `other` (the common references: no plain-type checks)
        )

    def value(self, x, depth: int = 0) -> None:
        t = _type(x)
        if t is int:
            if -128 <= x < 128:
                self.out += _SMALL_INTS[x + 128]
            else:
                self.int(x)
        elif t is str:
            data = x.encode("utf-8", "surrogatepass")
            self.out += b"s" + _U32.pack(_len(data)) + data
        elif t is float:
            self.out += b"f" + _F64.pack(x)
        elif x is None or t is bool:
            self.out += b"N" if x is None else (b"T" if x else b"F")
        elif t is list or t is tuple or t is set or t is frozenset:
            n = _len(x)
            if depth >= MAX_DEPTH:
                raise Refused(f"a value nested deeper than {MAX_DEPTH} levels")
            self.items += n
            self.out += _SEQ_TAGS[t] + _U32.pack(n)
            value, d = self.value, depth + 1
            for v in x:
                value(v, d)
        elif t is dict:
            self.container(b"d", _len(x), depth)
            value, d = self.value, depth + 1
            for k, v in dict.items(x):
                value(k, d)
                value(v, d)
        elif t is bytes or t is bytearray:
            self.blob(b"b" if t is bytes else b"a", bytes(x))
        elif t in self.direct:
            self.other(self, x, depth)
        elif t is complex:
            self.out += b"c" + _C128.pack(x.real, x.imag)
        else:
            self.rich(x, t, depth)

    def container(self, tag: bytes, n: int, depth: int) -> None:
        if depth >= MAX_DEPTH:
            raise Refused(f"a value nested deeper than {MAX_DEPTH} levels")
        self.items += n
        self.out += tag + _U32.pack(n)

    def check(self) -> None:
        """The whole message under the receiver's bounds (checked once it is built)."""
        if _len(self.out) > MAX_MESSAGE or self.items > MAX_ITEMS:
            raise Refused(f"a message over {MAX_MESSAGE:,} bytes or {MAX_ITEMS:,} values")

    def int(self, x: int) -> None:
        n = (int.bit_length(x) + 8) // 8
        if n > MAX_INT_BYTES:
            raise Refused(f"an int of {n:,} bytes (the limit is {MAX_INT_BYTES:,})")
        data = int.to_bytes(x, n, "little", signed=True)
        self.out += (b"i" + bytes((n,)) if n < 256 else b"I" + _U32.pack(n)) + data

    def blob(self, tag: bytes, data: bytes) -> None:
        self.out += tag + _U32.pack(_len(data)) + data

    def pairs(self, tag: bytes, mapping, depth: int) -> None:
        """A mapping's items, in its own order, read with dict's methods (never the program's)."""
        self.container(tag, dict.__len__(mapping), depth)
        value, d = self.value, depth + 1
        for k, v in dict.items(mapping):
            value(k, d)
            value(v, d)

    def seq(self, tag: bytes, items, n: int, depth: int) -> None:
        self.container(tag, n, depth)
        value, d = self.value, depth + 1
        for v in items:
            value(v, d)

    def rich(self, x, t, depth: int) -> None:
        """The plain types beyond the builtin containers, then builtin subclasses as their base."""
        out, d = self.out, depth + 1
        dates = sys.modules.get("datetime")
        if t is _loaded("fractions", "Fraction"):
            out += b"Q"
            self.int(x.numerator)
            self.int(x.denominator)
        elif t is _loaded("decimal", "Decimal"):
            decimal_in_bounds(x)
            self.blob(b"D", str(x).encode())
        elif t is collections.deque:
            out += b"q"
            self.value(x.maxlen, d)
            self.seq(b"l", collections.deque.__iter__(x), collections.deque.__len__(x), d)
        elif t is collections.OrderedDict or t is collections.Counter:
            self.pairs(b"o" if t is collections.OrderedDict else b"k", x, depth)
        elif t is collections.defaultdict:
            out += b"e"
            factory = x.default_factory
            self.value(
                factory
                if _type(factory) is type and _BUILTIN_CLASSES.get(factory.__name__) is factory
                else None,
                d,
            )
            self.pairs(b"d", x, d)
        elif t is range:
            n = range_length(x.start, x.stop, x.step)
            if n > MAX_ITEMS:
                raise Refused(f"a range of {n:,} items (the limit is {MAX_ITEMS:,} values)")
            self.items += n
            out += b"r"
            for v in (x.start, x.stop, x.step):
                self.int(v)
        elif dates is not None and t in (
            dates.date,
            dates.time,
            dates.datetime,
            dates.timedelta,
            dates.timezone,
        ):
            if t is dates.timezone:
                out += b"Z"
                return self.value((x.utcoffset(None), x.tzname(None)), d)
            if t not in (dates.date, dates.timedelta) and _type(x.tzinfo) not in (type(None), dates.timezone):
                return self.other(self, x, depth)  # a zone other than a fixed offset
            out += _DATE_TAGS[t.__name__]
            self.value(_date_fields(x), d)
        elif _isinstance(x, BaseException):
            out += b"X"
            self.value(exception_fields(x), d)
        elif _BUILTIN_NAMES.get(id(x)) is not None and BUILTINS[_BUILTIN_NAMES[id(x)]] is x:
            self.blob(b"B", _BUILTIN_NAMES[id(x)].encode())
        elif t is type and _issubclass(x, BaseException):
            out += b"K"
            self.value((x.__name__, _builtin_base(x).__name__), d)
        elif _isinstance(t, enum.EnumMeta) and not _isinstance(x, (int, str)):
            out += b"U"  # with its id, so that the member goes home as itself (`keep`: the program side's)
            home = self.keep(x) if self.keep is not None else None
            self.value((str(t.__name__), _isinstance(x, enum.Flag), x.name, x.value, home), d)
        elif t is EnumValue:
            out += b"U"
            self.value((x._class, x._flag, x.name, x.value, None), d)
        elif t is _loaded("re", "Match") or t is MatchValue:
            out += b"m"
            if t is MatchValue:
                spans, names = x._spans, x._names
            else:
                spans, names = tuple(x.span(i) for i in range(x.re.groups + 1)), dict(x.re.groupindex)
            self.value((x.string, spans, names), d)
        elif t is NamedTupleValue:
            out += b"P"
            self.value((*tuple.__getattribute__(x, "_murphy_meta"), tuple(tuple.__iter__(x))), d)
        elif _issubclass(t, tuple) and _type(getattr(t, "_fields", None)) is tuple:
            out += b"P"
            self.value((str(t.__name__), tuple(str(f) for f in t._fields), tuple(tuple.__iter__(x))), d)
        elif t is _ModuleType:
            self.blob(b"M", str(x.__name__).encode("utf-8", "surrogatepass"))
        else:
            base = next((b for b in _BASES if _issubclass(t, b)), None)
            if base is not None:
                return self.value(_as_base(x, base), depth)
            np = sys.modules.get("numpy")
            if np is not None and _isinstance(x, np.generic) and not _isinstance(x, np.object_):
                return self.value(np.generic.item(x), depth)
            if np is not None and t is np.ndarray and x.dtype.kind in NUMERIC_KINDS:
                out += b"A"
                return self.value((x.dtype.str, tuple(x.shape), np.ascontiguousarray(x).tobytes()), d)
            self.other(self, x, depth)


class Decoder:
    """bytes -> values, under the bounds. `ref(id, type, text)` builds a program reference (test side) and
    `home(id)` finds one of our objects (program side); either is None where that tag may not come."""

    def __init__(self, ref=None, home=None, untrusted: bool = True):
        self.ref, self.home, self.untrusted = ref, home, untrusted
        self.classes: dict[bytes, type] = {}  # rebuilt exception classes of this channel

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
            return items if tag == b"l" else _SEQ_BUILDERS[tag](items)
        if tag == b"d":
            return dict(self.pairs(depth))
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
        if (
            tag == b"L" and self.home is not None
        ):  # the program side: a stdlib function the test passed, by name
            module, qualname = self.value(d)
            x = importlib.import_module(module)
            for part in qualname.split("."):
                x = getattr(x, part)
            return x
        if tag == b"R" and self.ref is not None:
            fields = self.value(d)
            if _type(fields) is not tuple:
                raise Refused("not a reference")
            return self.ref(*fields)
        if tag == b"I":
            self.pos -= 1
            return self.int()
        if tag in (b"b", b"a", b"D", b"B", b"M"):
            data = bytes(self.take(self.count()))
            if tag == b"b" or tag == b"a":
                return data if tag == b"b" else bytearray(data)
            if tag == b"D":
                return decimal_in_bounds(importlib.import_module("decimal").Decimal(data.decode("ascii")))
            name = data.decode("utf-8", "surrogatepass")
            if tag == b"M":
                return ProgramModule(name)
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
        fields = self.value(d)
        if _type(fields) is not tuple:
            raise Refused(f"a malformed {tag!r} value")
        if tag in _DATE_NAMES:
            return getattr(importlib.import_module("datetime"), _DATE_NAMES[tag])(*fields)
        if tag == b"Z":
            return importlib.import_module("datetime").timezone(*fields)
        if tag == b"X":
            return rebuild_exception(self, *fields)
        if tag == b"K":
            return self.exception_class(*fields)
        if tag == b"P":
            name, names, items = fields
            if _type(name) is not str or _type(names) is not tuple or _type(items) is not tuple:
                raise Refused("not a namedtuple")
            if (
                _len(names) > MAX_FIELDS
                or _len(names) != _len(items)
                or not all(_type(f) is str for f in names)
            ):
                raise Refused(f"not a namedtuple (or one of more than {MAX_FIELDS} fields)")
            return NamedTupleValue(name, names, items)
        if tag == b"m":
            string, spans, names = fields
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
            return MatchValue(string, spans, names)
        if tag == b"U":
            name, flag, member, value, home = fields
            if _type(name) is not str or _type(flag) is not bool or _type(member) not in (str, type(None)):
                raise Refused("not an enum member")
            if home is not None and _type(home) is not int:
                raise Refused("not an enum member")
            if self.home is not None and home is not None:
                return self.home(home)  # the program side: its own member, going home
            return EnumValue(name, member, value, flag, home)
        if tag == b"A":
            return _ndarray(*fields)
        raise Refused(f"not a value (tag {tag!r})")

    def rebuilt(self, key: bytes, make, *args) -> type:
        """The class of this channel for `key` (its description), made once."""
        cls = self.classes.get(key)
        if cls is None:
            if _len(self.classes) >= MAX_CLASSES:
                raise Refused(f"more than {MAX_CLASSES} namedtuple, enum and exception classes")
            cls = self.classes[key] = make(*args)
        return cls

    def exception_class(self, name, base) -> type:
        if _type(name) is not str or base not in _EXC_BASES:
            raise Refused("not an exception class")
        if name == base:
            return _EXC_BASES[base]
        key = b"K" + f"{name}\0{base}".encode("utf-8", "surrogatepass")
        body = {"__str__": _program_str, "__getattr__": _program_attr}
        return self.rebuilt(key, lambda: type(name, (_EXC_BASES[base],), body))


# --- messages -----------------------------------------------------------------------------------------------------
def send(fd: int, kind: bytes, payload: bytes) -> None:
    """One message: its length, its kind, its value (written whole, however many writes it takes)."""
    data = _U32.pack(_len(payload) + 1) + kind + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Reader:
    """Reads whole messages from a file descriptor (one read brings most messages whole)."""

    def __init__(self, fd: int):
        self.fd, self.buf = fd, bytearray()

    def _fill(self, want: int) -> None:
        while _len(self.buf) < want:
            chunk = os.read(self.fd, max(1 << 16, want - _len(self.buf)))
            if not chunk:
                raise Fault("lost", "the other side of the channel closed it")
            self.buf += chunk

    def message(self) -> tuple[bytes, bytes]:
        """(kind, the value's bytes)."""
        if _len(self.buf) < 4:
            self._fill(4)
        n = _U32.unpack_from(self.buf)[0]
        if n > MAX_MESSAGE or n == 0:
            raise Refused(f"a message of {n:,} bytes (the limit is {MAX_MESSAGE:,})")
        if _len(self.buf) < 4 + n:
            self._fill(4 + n)
        kind, payload = bytes(self.buf[4:5]), bytes(self.buf[5 : 4 + n])
        del self.buf[: 4 + n]
        return kind, payload


def encode(value, other=not_plain, direct: frozenset = frozenset(), keep=None) -> bytes:
    enc = Encoder(other, direct, keep)
    enc.value(value)
    enc.check()
    return bytes(enc.out)


# --- exceptions ---------------------------------------------------------------------------------------------------
def _builtin_base(cls: type) -> type:
    return next((c for c in cls.__mro__ if _EXC_BASES.get(c.__name__) is c), Exception)


def exception_fields(e: BaseException, trace_file: str = "solution.py") -> tuple:
    """(class name, first builtin class, args, str(e), the one-line summary, program frames, plain attributes)."""
    base = _builtin_base(_type(e)).__name__
    args = BaseException.args.__get__(e)
    try:
        attrs = {k: v for k, v in vars(e).items() if _type(k) is str and k.isidentifier() and k[:1] != "_"}
    except TypeError:  # no __dict__
        attrs = {}
    if _len(attrs) > MAX_FIELDS:
        attrs = {}
    try:
        text = str(e)[:2000]
        head = "".join(traceback.format_exception_only(_type(e), e)).strip()[-2000:]
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        text, head = "", base
    frames = tuple(
        (f.filename, f.lineno, f.name, f.line or "")
        for f in traceback.extract_tb(e.__traceback__)
        if f.filename == trace_file
    )[-5:]
    return (str(_type(e).__name__), base, args, text, head, frames, attrs)


def rebuild_exception(decoder: Decoder, name, base, args, text, head, frames, attrs) -> BaseException:
    """The exception as ours: its builtin class (or our subclass of it named like the program's), its args, its
    plain attributes (data of ours, read through our subclass's ``__getattr__``), the program's frames as data."""
    cls = decoder.exception_class(name, base)
    if (
        _type(text) is not str
        or _type(head) is not str
        or _type(args) is not tuple
        or _type(attrs) is not dict
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
    exc.__murphy_remote__ = (frames, head[-2000:], text[:2000], attrs)
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
    """A plain attribute the program's exception had (data, looked up only when nothing of ours has the name)."""
    remote = self.__dict__.get("__murphy_remote__")
    if remote is not None and attr[:1] != "_" and attr in remote[3]:
        return remote[3][attr]
    raise AttributeError(attr)


# --- rebuilding ---------------------------------------------------------------------------------------------------
def _ndarray(dtype, shape, data):
    """A numeric numpy array built here, with our own numpy, from its bytes (never an object array)."""
    import numpy as np

    if _type(dtype) is not str or _len(dtype) > 8 or _type(data) is not bytes:
        raise Refused("not a numeric array")
    kind = np.dtype(dtype)
    if kind.kind not in NUMERIC_KINDS or not all(_type(n) is int and 0 <= n <= _len(data) + 1 for n in shape):
        raise Refused("not a numeric array")
    return np.frombuffer(data, kind).reshape(shape).copy()


def _bounded_hashes(items: list) -> None:
    """Refuse a container with more than MAX_PER_HASH distinct values of one predictable hash."""
    groups: dict[int, list] = {}
    for v in items:
        t = _type(v)
        if t in _UNCHECKED or (t is int and -_SMALL < v < _SMALL):
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


def _date_fields(x) -> tuple:
    """The constructor arguments of a date, time, datetime or timedelta (`fold` is not kept)."""
    t = _type(x)
    if t.__name__ == "timedelta":
        return (x.days, x.seconds, x.microseconds)
    if t.__name__ == "date":
        return (x.year, x.month, x.day)
    clock = (x.hour, x.minute, x.second, x.microsecond, x.tzinfo)
    return (x.year, x.month, x.day) + clock if t.__name__ == "datetime" else clock


def range_length(start: int, stop: int, step: int) -> int:
    """len(range(start, stop, step)), for any size (len() of a range past sys.maxsize raises)."""
    if step == 0:
        raise Refused("a range of step 0")
    n = (stop - start + step - (1 if step > 0 else -1)) // step
    return n if n > 0 else 0


def decimal_in_bounds(x):
    """`x` if its exponent is within `MAX_DECIMAL_EXPONENT` (NaN and infinities are), else `Refused`."""
    if x.is_finite() and x and abs(x.adjusted()) > MAX_DECIMAL_EXPONENT:
        raise Refused(f"a Decimal of exponent {x.adjusted():,} (the limit is {MAX_DECIMAL_EXPONENT:,})")
    return x


def _loaded(module: str, name: str):
    """`module.name` if the module is loaded here, else None (a value of a type never loaded cannot exist)."""
    m = sys.modules.get(module)
    return getattr(m, name, None) if m is not None else None


def _as_base(x, base):
    if base is int:
        return int.__int__(x)
    if base is float:
        return float.__float__(x)
    if base is complex:
        return complex.__complex__(x)
    if base is str:
        return str.__str__(x)
    if base is bytes:
        return bytes.__bytes__(x)
    if base is dict:
        return dict(dict.items(x))
    return base(base.__iter__(x))


_BASES = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_SEQ_TAGS = {list: b"l", tuple: b"t", set: b"S", frozenset: b"z"}
_SEQ_BUILDERS = {b"l": list, b"t": tuple, b"S": set, b"z": frozenset}
_TAGS = [bytes((i,)) for i in range(256)]
_DATE_TAGS = {"date": b"Y", "time": b"H", "datetime": b"W", "timedelta": b"G"}
_DATE_NAMES = {v: k for k, v in _DATE_TAGS.items()}
_ModuleType = type(sys)
