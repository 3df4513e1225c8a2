"""Values -> bytes: the encoder of the wire format (`wire_format.py`), for both sides of a channel.

Loaded by `wire.py` by path. The encoder writes plain data with the tags of `wire_format`, checks the bounds the
receiver will apply (depth as it goes, size and item count once the message is built: `Encoder.check`), and hands
everything that is not plain data to its `other` hook: the program side makes it a reference, the test side sends
one of the program's objects home and refuses the rest. Subclasses of the format's containers cross as the nearest
container of the format (an OrderedDict subclass as an OrderedDict), read with that type's own methods (never a
method of the program's); a program subclass of a scalar (int, float, complex, str, bytes: an IntEnum or
``(str, Enum)`` member too) crosses as ``O``: its base value, read with the base's methods, and its own str, repr
and truth.
"""

from __future__ import annotations

import collections
import sys
import traceback

fmt = globals()["wire_format"]  # set by wire.py before this file runs
values = globals()["values"]
libraries = globals()["libraries"]  # numpy's and pandas' values (`wire_libraries.py`)
# the format's names this module reads, bound here once (module globals: the hot loops read no attribute)
(
    MAX_CAUSES,
    MAX_DEPTH,
    MAX_FIELDS,
    MAX_INT_BYTES,
    MAX_ITEMS,
    MAX_MESSAGE,
    NUMERIC_KINDS,
    Refused,
    NotPlain,
) = (
    fmt.MAX_CAUSES,
    fmt.MAX_DEPTH,
    fmt.MAX_FIELDS,
    fmt.MAX_INT_BYTES,
    fmt.MAX_ITEMS,
    fmt.MAX_MESSAGE,
    fmt.NUMERIC_KINDS,
    fmt.Refused,
    fmt.NotPlain,
)
_type, _len, _isinstance, _issubclass = type, len, isinstance, issubclass
_F64, _C128, _U32, _SMALL_INTS = fmt.F64, fmt.C128, fmt.U32, fmt.SMALL_INTS
BUILTINS, _BUILTIN_CLASSES, _BUILTIN_NAMES, _EXC_BASES = (
    fmt.BUILTINS,
    fmt.BUILTIN_CLASSES,
    fmt.BUILTIN_NAMES,
    fmt.EXC_BASES,
)
_SEQ_TAGS, _DATE_TAGS, _BASES, _SCALARS, _ModuleType = (
    fmt.SEQ_TAGS,
    fmt.DATE_TAGS,
    fmt.BASES,
    fmt.SCALARS,
    fmt.MODULE_TYPE,
)
range_length, decimal_in_bounds = fmt.range_length, fmt.decimal_in_bounds
NamedTupleValue, MatchValue = values.NamedTupleValue, values.MatchValue
_DICT_VIEWS = {type({}.keys()): 0, type({}.values()): 1, type({}.items()): 2}
_PLAIN_ATTRS = (int, float, str, bool, type(None), bytes)  # an exception class's attributes that cross


def not_plain(encoder: Encoder, x, depth: int) -> None:
    raise NotPlain(f"a {_type(x).__name__} object, which is not plain data")


class Encoder:
    """Values -> bytes. `other(encoder, x, depth)` writes (or refuses) a value that is not plain data: the program
    side makes it a reference (``R``), the test side sends one of the program's objects home (``h``) and refuses
    anything else. `homed(x)` (the test side's) is the program id of a stand-in of the program's object, or None;
    `keep(x)` (the program side's) keeps an object alive and returns its id (what goes home as it);
    `describe(type)` (the program side's) is a program type's description for its stand-in."""

    def __init__(
        self, other=not_plain, direct: frozenset = frozenset(), keep=None, homed=None, describe=None
    ) -> None:
        self.out = bytearray()
        self.keep, self.homed, self.describe = keep, homed, describe
        self.items = 0
        self.other = other
        # types that go straight to `other` (the common references: no plain-type checks)
        self.direct = direct

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
        elif t is list or t is tuple:
            n = _len(x)
            if depth >= MAX_DEPTH:
                raise Refused(f"a value nested deeper than {MAX_DEPTH} levels")
            self.items += n
            self.out += _SEQ_TAGS[t] + _U32.pack(n)
            value, d = self.value, depth + 1
            for v in x:
                value(v, d)
        elif t is set or t is frozenset:
            self.set(x, t, depth)
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

    def set(self, x, base, depth: int) -> None:
        """A set or frozenset: its items in its own order, and the size of its table, which the receiver builds
        alike (`wire_decode.same_set`): its iteration order is then the sender's, as in one process."""
        n = base.__len__(x)
        self.container(_SEQ_TAGS[base], n, depth)
        self.out += _U32.pack(base.__sizeof__(x) & 0xFFFFFFFF)
        value, d = self.value, depth + 1
        for v in base.__iter__(x):
            value(v, d)

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
        """The plain types beyond the builtin containers, then builtin subclasses."""
        out, d = self.out, depth + 1
        # the test side: a stand-in of one of the program's objects goes home as it
        if self.homed is not None:
            home = self.homed(x)
            if home is not None:
                out += b"h"
                return self.int(home)
        if t is _loaded("fractions", "Fraction"):
            out += b"Q"
            self.int(x.numerator)
            self.int(x.denominator)
        elif t is _loaded("decimal", "Decimal"):
            decimal_in_bounds(x)
            self.blob(b"D", str(x).encode())
        elif _issubclass(t, collections.deque):
            out += b"q"
            self.value(x.maxlen, d)
            self.seq(b"l", collections.deque.__iter__(x), collections.deque.__len__(x), d)
        elif _issubclass(t, collections.OrderedDict):  # its subclasses too: order counts in their ==
            self.pairs(b"o", x, depth)
        elif _issubclass(t, collections.Counter):
            self.pairs(b"k", x, depth)
        elif _issubclass(t, collections.defaultdict):
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
        elif t in _DICT_VIEWS:
            out += b"v"
            self.value(_DICT_VIEWS[t], d)
            self.value(dict(x.mapping), d)
        elif self.dates(x, t, d):
            pass
        elif _issubclass(t, BaseException):
            out += b"X"
            self.value(exception_fields(x, self.keep), d)
        elif _BUILTIN_NAMES.get(id(x)) is not None and BUILTINS[_BUILTIN_NAMES[id(x)]] is x:
            self.blob(b"B", _BUILTIN_NAMES[id(x)].encode())
        elif _issubclass(t, type) and _issubclass(x, BaseException):
            out += b"K"
            self.value(exception_class(x, self.keep), d)
        elif t is _loaded("re", "Match") or t is MatchValue:
            out += b"m"
            self.value(_match_fields(x, t), d)
        elif _issubclass(t, NamedTupleValue):
            out += b"P"
            self.value((None, None, *tuple.__getattribute__(x, "_murphy_meta"), tuple(tuple.__iter__(x))), d)
        elif _issubclass(t, tuple) and _type(getattr(t, "_fields", None)) is tuple:
            out += b"P"
            home, described = (self.keep(x), self.describe(t)) if self.keep is not None else (None, None)
            fields = tuple(str(f) for f in t._fields)
            self.value((home, described, str(t.__name__), fields, tuple(tuple.__iter__(x))), d)
        elif t is _ModuleType:
            self.blob(b"M", str(x.__name__).encode("utf-8", "surrogatepass"))
        elif not self.libraries(x, t, d):
            base = next((b for b in _BASES if _issubclass(t, b)), None)
            if base is None:
                return self.other(self, x, depth)
            if base in _SCALARS and self.keep is not None:  # the program's own subclass: ``O``
                out += b"O"
                return self.value(self.scalar_fields(x, t, base), d)
            if base is set or base is frozenset:
                return self.set(x, base, depth)
            self.value(_as_base(x, base), depth)

    def dates(self, x, t, d: int) -> bool:
        """The datetime family and time zones (a fixed offset ``Z``, a `zoneinfo.ZoneInfo` by its key ``w``); a
        date or time with another tzinfo stays a reference. Whether `x` was one of them."""
        dates = sys.modules.get("datetime")
        if dates is None:
            return False
        if t is dates.timezone:
            self.out += b"Z"
            self.value((x.utcoffset(None), x.tzname(None)), d)
            return True
        if t is _loaded("zoneinfo", "ZoneInfo") and _type(x.key) is str:
            self.blob(b"w", x.key.encode("utf-8", "surrogatepass"))
            return True
        if t not in (dates.date, dates.time, dates.datetime, dates.timedelta):
            return False
        if t is not dates.date and t is not dates.timedelta:
            zone = _type(x.tzinfo)
            if (
                zone is not type(None)
                and zone is not dates.timezone
                and zone is not _loaded("zoneinfo", "ZoneInfo")
            ):
                self.other(self, x, d - 1)
                return True
        self.out += _DATE_TAGS[t.__name__]
        self.value(_date_fields(x), d)
        return True

    def libraries(self, x, t, d: int) -> bool:
        """numpy's scalars and arrays, pandas' frames, series and indexes (`wire_libraries.encode`)."""
        return libraries.encode(self, x, t, d)

    def scalar_fields(self, x, t, base) -> tuple:
        """``O``'s fields: (id, the type's description, the base value, its str and repr if not the base's, its
        truth), each computed by the program's own methods, in its process."""
        plain = _as_base(x, base)
        texts = []
        for fn, of_base in ((str, base.__str__), (repr, base.__repr__)):
            try:
                text = fn(x)
                text = str.__str__(text) if _isinstance(text, str) else None
            except Exception:  # noqa: BLE001 - a broken __str__ is the program's: the base's text stands
                text = None
            texts.append(None if text == of_base(plain) else text)
        try:
            truth = bool(x)
        except Exception:  # noqa: BLE001
            truth = bool(plain)
        return (self.keep(x), self.describe(t), plain, *texts, truth)


def encode(
    value, other=not_plain, direct: frozenset = frozenset(), keep=None, homed=None, describe=None
) -> bytes:
    enc = Encoder(other, direct, keep, homed, describe)
    enc.value(value)
    enc.check()
    return bytes(enc.out)


# --- exceptions ---------------------------------------------------------------------------------------------------
def _builtin_base(cls: type) -> type:
    return next((c for c in cls.__mro__ if _EXC_BASES.get(c.__name__) is c), Exception)


def exception_class(cls: type, keep=None, depth: int = 0):
    """A builtin exception class by its name; any other as (its id when `keep` is given, else None, its name, its
    module, its exception bases described alike, its plain class attributes)."""
    if _EXC_BASES.get(cls.__name__) is cls:
        return str(cls.__name__)
    if depth > 8:  # deeper hierarchies cross as their first builtin class
        return _builtin_base(cls).__name__
    bases = tuple(
        exception_class(b, keep, depth + 1) for b in cls.__bases__ if _issubclass(b, BaseException)
    ) or ("Exception",)
    try:
        attrs = {
            k: v
            for k, v in vars(cls).items()
            if _type(k) is str and k.isidentifier() and k[:1] != "_" and _type(v) in _PLAIN_ATTRS
        }
    except TypeError:
        attrs = {}
    if _len(attrs) > MAX_FIELDS:
        attrs = {}
    home = keep(cls) if keep is not None else None
    return (home, str(cls.__name__), str(getattr(cls, "__module__", "") or ""), bases, attrs)


def exception_fields(e: BaseException, keep=None, trace_file: str = "solution.py", depth: int = 0) -> tuple:
    """(its class (`exception_class`), args, str(e), the one-line summary, program frames, plain attributes, its
    __cause__ and __context__ (alike, `MAX_CAUSES` deep), __suppress_context__, its id when `keep` is given)."""
    args = BaseException.args.__get__(e)
    try:
        attrs = {k: v for k, v in vars(e).items() if _type(k) is str and k.isidentifier() and k[:1] != "_"}
    except TypeError:  # no __dict__
        attrs = {}
    if _len(attrs) > MAX_FIELDS:
        attrs = {}
    base = _builtin_base(_type(e)).__name__
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
    chain = []
    for linked in (e.__cause__, e.__context__):
        ok = _isinstance(linked, BaseException) and depth < MAX_CAUSES
        chain.append(exception_fields(linked, keep, trace_file, depth + 1) if ok else None)
    home = keep(e) if keep is not None else None
    cls = exception_class(_type(e), keep)
    return (cls, args, text, head, frames, attrs, *chain, bool(e.__suppress_context__), home)


def _date_fields(x) -> tuple:
    """The constructor arguments of a date, time, datetime or timedelta (`fold` is not kept)."""
    t = _type(x)
    if t.__name__ == "timedelta":
        return (x.days, x.seconds, x.microseconds)
    if t.__name__ == "date":
        return (x.year, x.month, x.day)
    clock = (x.hour, x.minute, x.second, x.microsecond, x.tzinfo)
    return (x.year, x.month, x.day) + clock if t.__name__ == "datetime" else clock


def _match_fields(x, t) -> tuple:
    if t is MatchValue:
        return (x.string, x._spans, x._names, x.lastindex, x.pos, x.endpos)
    spans = tuple(x.span(i) for i in range(x.re.groups + 1))
    return (x.string, spans, dict(x.re.groupindex), x.lastindex, x.pos, x.endpos)


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
