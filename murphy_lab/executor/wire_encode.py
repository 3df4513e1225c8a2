"""Values -> bytes: the encoder of the wire format (`wire_format.py`), for both sides of a channel.

Loaded by `wire.py` by path. The encoder writes plain data with the tags of `wire_format`, checks the bounds the
receiver will apply (depth as it goes, size and item count once the message is built: `Encoder.check`), and hands
everything that is not plain data to its `other` hook: the program side makes it a reference, the test side sends
one of the program's references home and refuses the rest. Subclasses of builtin types cross as their base, read
with the base's own methods (never a method of the program's).
"""

from __future__ import annotations

import collections
import enum
import sys
import traceback

fmt = globals()["wire_format"]  # set by wire.py before this file runs
values = globals()["values"]
# the format's names this module reads, bound here once (module globals: the hot loops read no attribute)
(MAX_DEPTH, MAX_FIELDS, MAX_INT_BYTES, MAX_ITEMS, MAX_MESSAGE, NUMERIC_KINDS, Refused, NotPlain) = (
    fmt.MAX_DEPTH, fmt.MAX_FIELDS, fmt.MAX_INT_BYTES, fmt.MAX_ITEMS, fmt.MAX_MESSAGE, fmt.NUMERIC_KINDS, fmt.Refused,
    fmt.NotPlain,
)  # fmt: skip
_type, _len, _isinstance, _issubclass = type, len, isinstance, issubclass
_F64, _C128, _U32, _SMALL_INTS = fmt.F64, fmt.C128, fmt.U32, fmt.SMALL_INTS
BUILTINS, _BUILTIN_CLASSES, _BUILTIN_NAMES, _EXC_BASES = (
    fmt.BUILTINS,
    fmt.BUILTIN_CLASSES,
    fmt.BUILTIN_NAMES,
    fmt.EXC_BASES,
)
_SEQ_TAGS, _DATE_TAGS, _BASES, _ModuleType = fmt.SEQ_TAGS, fmt.DATE_TAGS, fmt.BASES, fmt.MODULE_TYPE
range_length, decimal_in_bounds = fmt.range_length, fmt.decimal_in_bounds
EnumValue, NamedTupleValue, MatchValue = values.EnumValue, values.NamedTupleValue, values.MatchValue


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


def _date_fields(x) -> tuple:
    """The constructor arguments of a date, time, datetime or timedelta (`fold` is not kept)."""
    t = _type(x)
    if t.__name__ == "timedelta":
        return (x.days, x.seconds, x.microseconds)
    if t.__name__ == "date":
        return (x.year, x.month, x.day)
    clock = (x.hour, x.minute, x.second, x.microsecond, x.tzinfo)
    return (x.year, x.month, x.day) + clock if t.__name__ == "datetime" else clock


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
