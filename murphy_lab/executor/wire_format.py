"""The wire format's vocabulary: its tags, its bounds, and the errors of a channel.

Loaded by `wire.py` (by path, stdlib only) and handed to `wire_encode.py` and `wire_decode.py`, which both read it.
One message is a 4-byte length, a kind byte and one value. A value is a one-byte tag and its payload:

    N T F                  None, True, False
    i  len(1) bytes        int, two's complement, little-endian (I: a 4-byte length); no decimal text anywhere
    f  float64   c  2 x float64                 float (NaN and inf included), complex
    s b a  len(4) bytes    str (UTF-8, lone surrogates kept), bytes, bytearray
    l t  n(4) items        list, tuple;   d  n(4) key value ...   dict
    S z  n(4) size(4) items    set, frozenset, with the sender's table size (the receiver builds the same size:
                           a set of ints iterates in the order the sender's did, as in one process)
    Q  int int             Fraction          D  str            Decimal
    j  list                an iterator over a container, drained (program -> test: a list, tuple, str, dict, set
                           or range iterator; one that runs program code is a reference, stepped lazily)
    q  maxlen items        deque             r  int int int    range (at most MAX_ITEMS long)
    o  pairs   k  pairs    OrderedDict, Counter        e  factory pairs   defaultdict (a builtin factory or None)
    v  kind dict           a dict's keys, values or items view (kind 0, 1, 2), of that dict
    Y H W G  fields        date, time, datetime, timedelta (constructor arguments; a tzinfo is Z or w)
    Z  offset name         fixed-offset timezone     w  key     zoneinfo.ZoneInfo (the receiver's own, by key)
    m  string spans names lastindex pos endpos      re.Match (a final C type)
    P  id type name fields items   namedtuple (id and type: the program's object, or None)
    X  class args text head frames attrs cause context suppress id      exception (class: K's fields)
    K  id name module bases attrs  exception class (bases: builtin class names or K fields; attrs: plain class
                           attributes)
    B  name                a builtin class or function, by name (the receiver's own)
    L  module qualname     a standard-library function (test -> program only: the program side's own)
    A  dtype shape bytes   numpy array of a numeric, bool, date or fixed-width text dtype
    n  dtype bytes         numpy scalar of such a dtype (np.int64, np.bool_, np.float32 stay themselves)
    p  kind fields         pandas Index, RangeIndex, Series or DataFrame of such columns (rebuilt by the receiver's
                           pandas from dtype names, arrays and plain values)
    M  name                a module, by name (the test side never imports it because of this)
    R  id type text note hash   a reference to an object that stays in the program process (program -> test);
                           type = (id, name, module, protocol bits): the special methods its stand-in forwards
    O  id type value str repr truth   an instance of a program subclass of int, float, complex, str or bytes (an
                           IntEnum or a (str, Enum) member too): its base value, with its own str, repr and truth
    h  id                  one of those objects going home as an argument (test -> program)

The receiver rebuilds every value with its own constructors from a closed set of types: the builtin ones, the
standard library's above, numpy's and pandas' (from dtype names and bytes, never object arrays), and `values.py`'s
(a namedtuple or match is a frozen value of ours holding its class name, field names and items as data; no string
a sender chose becomes an attribute, a class body entry, a namespace key, a module name or a callable). An
exception class is our subclass of its builtin bases and of its program bases, rebuilt the same way, named like
the program's (its name is only the class's ``__name__``; its plain attributes, and its class's, are data read
through ``__getattr__``). Container subclasses cross as the nearest container of the format (an OrderedDict
subclass as an OrderedDict), read with that type's own methods; scalar subclasses as ``O``. Decoding is total (any bytes: a value or `Refused`), linear in the message size
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
import struct
import sys

MAX_MESSAGE = 64 << 20  # bytes in one message (a 32 MB string crosses)
MAX_ITEMS = 1 << 22  # values in one message (a list of 4 million items crosses)
MAX_DEPTH = 200  # nesting of a value
MAX_INT_BYTES = 1 << 18  # bytes of one int (about 631,000 decimal digits: factorial(100_000) crosses)
MAX_FRACTION_BYTES = 1 << 16  # bytes of all Fraction numerators and denominators of one message
# |adjusted exponent| of a Decimal: about MAX_INT_BYTES' digits (int(), round()
MAX_DECIMAL_EXPONENT = 158_000
# of Decimal('1e999999999') would build a billion-digit int in C, out of the timer's reach)
MAX_CLASSES = 256  # exception classes, and stand-in classes of program types, one channel makes
MAX_FIELDS = 256  # fields of one namedtuple, plain attributes of one exception
MAX_PER_HASH = 8  # distinct values of one hash in one container of untrusted data
NUMERIC_KINDS = "biufcmMUS"  # numpy arrays and scalars of these dtype kinds cross as their bytes
MAX_CAUSES = 5  # links of an exception's __cause__/__context__ chain that cross

_type, _len, _isinstance, _issubclass = type, len, isinstance, issubclass
F64, C128, U32 = struct.Struct("<d"), struct.Struct("<dd"), struct.Struct("<I")
SMALL = 1 << 60  # ints this small hash to themselves: distinct ones never collide (but -1 and -2)
BUILTIN_CLASSES = {n: v for n, v in vars(builtins).items() if _isinstance(v, type)}
# builtin functions that may cross by name (never open, exec, eval, __import__, ...)
PURE = (
    "abs all any ascii bin callable chr divmod format hash hex id isinstance issubclass iter len max min next oct "
    "ord pow repr round sorted sum zip map filter reversed enumerate"
).split()
BUILTINS = dict(BUILTIN_CLASSES, **{n: getattr(builtins, n) for n in PURE})
BUILTIN_NAMES = {id(v): n for n, v in BUILTINS.items()}
EXC_BASES = {n: c for n, c in BUILTIN_CLASSES.items() if _issubclass(c, BaseException)}
SMALL_INTS = [b"i\x01" + i.to_bytes(1, "little", signed=True) for i in range(-128, 128)]
# unhashable or unpredictable
UNCHECKED = frozenset({str, bytes, bool, type(None), list, dict, set, bytearray})


class Fault(BaseException):
    """The channel cannot carry on: the program process ended, the limit struck, or a message was refused."""

    def __init__(self, status: str, detail: str = ""):
        super().__init__(status, detail)
        self.status, self.detail = status, detail


class Refused(ValueError):
    """A message that is not plain data, or over one of the bounds."""


class NotPlain(TypeError):
    """A value of the test side that is not plain data: it cannot cross (the test side serves nothing)."""


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


# The special methods of a program type that its stand-in on the test side has, forwarding each to the program
# (`channel.py`): bit k of a type's description is PROTOCOLS[k]. A stand-in has exactly those its program type has,
# so `callable()`, `len()`, `iter()` and the `collections.abc` checks say what the program's type is.
# "__hash__": the program defines its own hash (sent with each reference); "__hash__ None": unhashable.
BINARY_OPS = (
    "add",
    "sub",
    "mul",
    "matmul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "lshift",
    "rshift",
    "and",
    "xor",
    "or",
)
PROTOCOLS = (
    "__len__",
    "__iter__",
    "__next__",
    "__reversed__",
    "__contains__",
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__bool__",
    "__call__",
    "__enter__",
    "__exit__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__hash__ None",
    "__neg__",
    "__pos__",
    "__abs__",
    "__invert__",
    "__int__",
    "__float__",
    "__complex__",
    "__index__",
    "__round__",
    "__bytes__",
    "__instancecheck__",
    "__subclasscheck__",
    *(f"__{p}{op}__" for op in BINARY_OPS for p in ("", "r", "i")),
)
SCALARS = (int, float, complex, str, bytes)  # a program subclass of one of these crosses as ``O``

# the builtin bases a subclass crosses as; the tags of the containers and the date types, both ways
BASES = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
SEQ_TAGS = {list: b"l", tuple: b"t", set: b"S", frozenset: b"z"}
SEQ_BUILDERS = {b"l": list, b"t": tuple}
TAGS = [bytes((i,)) for i in range(256)]
DATE_TAGS = {"date": b"Y", "time": b"H", "datetime": b"W", "timedelta": b"G"}
DATE_NAMES = {v: k for k, v in DATE_TAGS.items()}
MODULE_TYPE = type(sys)
