"""The test side's stand-ins of the program's objects: one per object, of a class made per program type.

Loaded by the test worker (`worker.py`) by path, fresh for every job with `channel.py` (`worker.fresh_harness`),
with `wire` set before it runs; `channel.Channel` makes the classes and the objects (`Channel.stand_in`). What a
stand-in does, and the rule that keeps the verdict ours, is `channel.py`'s docstring (docs/executor.md, "Program
objects answer for themselves"):

- `StandIn`: the metaclass of the classes made per program type (named like it; calling one makes an object in the
  program; `isinstance` asks the program about its own objects).
- `Ref`: an object that stays in the program process; its class has exactly the special methods its program type
  has (`wire.PROTOCOLS`), each forwarded (`forwarder`) as a request the program serves with the object's own
  method; ``==`` and order never against the test's plain data; `batches`: a loop over a program iterator.
- `value_class(int)` (`IntValue`), ... (`FloatValue`, `ComplexValue`, `StrValue`, `BytesValue`): a program subclass of
  a scalar (an IntEnum or ``(str, Enum)`` member), its base value with the program's str, repr and truth.
"""

from __future__ import annotations

wire = globals().get("wire")  # the channel's format (`wire.py`): the worker sets it before this file runs
_REF_DUNDERS = frozenset({"__name__", "__qualname__", "__module__", "__dict__", "__wrapped__", "__self__"})
_BINARY_OPS = wire.BINARY_OPS if wire is not None else ()
RULE = (
    "a program object is never equal to, ordered against, or computed with into plain data by, the test's own "
    "plain data"
)


class StandIn(type):
    """The metaclass of the classes made per program type: such a class stands for the program's class. Calling
    it makes an object in the program; its other attributes are the program class's; `isinstance` asks the
    program about its own objects (plain data is never an instance of a program class here)."""

    def __call__(cls, *args, **kwargs):
        return cls.__dict__["_murphy_owner"].call(cls, args, kwargs)

    def __getattr__(cls, name: str):
        owner = type.__getattribute__(cls, "__dict__").get("_murphy_owner")
        if owner is None or name[:2] == "__" or name.startswith("_murphy"):
            raise AttributeError(name)
        return owner.op(cls, "getattr", (name,))

    def __instancecheck__(cls, obj) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        owner = cls.__dict__.get("_murphy_owner")
        if owner is None or owner.home_id(obj) is None:
            return False
        return owner.op(cls, "instancecheck", (obj,))


class Ref:
    """An object that stays in the program process and answers for itself there (the module docstring)."""

    __slots__ = ("_murphy_channel", "_murphy_id", "_murphy_text", "_murphy_note", "_murphy_hash")
    _murphy_python_eq = True  # its == is Python code (the decoder's hash bound leaves it out)

    def __getattr__(self, name: str):
        if name[:2] == "__" and name[-2:] == "__" and name not in _REF_DUNDERS:
            raise AttributeError(name)  # protocols the program's type lacks (__array__, __fspath__, ...)
        return self._murphy_channel.op(self, "getattr", (name,))

    def __setattr__(self, name: str, value) -> None:
        self._murphy_channel.op(self, "setattr", (name, value))

    def __delattr__(self, name: str) -> None:
        self._murphy_channel.op(self, "delattr", (name,))

    def __repr__(self) -> str:
        channel = self._murphy_channel
        return self._murphy_text if channel.fault is not None else channel.op(self, "repr", ())

    def __str__(self) -> str:
        return self._murphy_channel.op(self, "str", ())

    def __format__(self, spec: str) -> str:
        return self._murphy_channel.op(self, "format", (spec,))

    def __dir__(self):
        return self._murphy_channel.op(self, "dir", ())

    def __copy__(self):
        return self._murphy_channel.op(self, "copy", ())

    def __deepcopy__(self, memo):
        return self._murphy_channel.op(self, "deepcopy", ())

    def __reduce_ex__(self, protocol):
        self._murphy_channel.fail(
            f"the test pickled a {type(self).__name__} object of the program, which stays there"
        )

    # identity, and the stand-in class of the program class this is (type(x) == Point)
    def __eq__(self, other):
        if other is self:
            return True
        owner = other.__dict__.get("_murphy_owner") if isinstance(other, StandIn) else None
        return (
            True
            if owner is self._murphy_channel and other._murphy_type_id == self._murphy_id
            else NotImplemented
        )

    __hash__ = object.__hash__


def _unary(op: str):
    def forwarded(self):
        return self._murphy_channel.op(self, op, ())

    return forwarded


def _keyed(op: str):
    def forwarded(self, *args):
        return self._murphy_channel.op(self, op, args)

    return forwarded


def _compare(op: str):
    def forwarded(self, other):
        channel = self._murphy_channel
        if channel.decoding or channel.home_id(other) is None:  # never against the test's own data (RULE)
            return NotImplemented
        return channel.op(self, op, (other,))

    return forwarded


def _operator(op: str):
    def forwarded(self, other):
        channel = self._murphy_channel
        result = channel.op(self, op, (other,))
        if channel.home_id(other) is None and not isinstance(result, Ref):
            channel.fail(
                f"the test combined a {type(self).__name__} object of the program with its own plain data "
                f"({op}), and the program's answer is plain data: {RULE}"
            )
        return result

    return forwarded


def _call(self, *args, **kwargs):
    return self._murphy_channel.call(self, args, kwargs)


def _iter(self):
    """``iter(x)``: the program's answer; a program iterator that is its own iterator (a generator, ``map``) is
    looped over in batches (`batches`)."""
    it = self._murphy_channel.op(self, "iter", ())
    return batches(self) if it is self and "__next__" in type(self).__dict__ else it


def batches(ref: Ref):
    """A loop over one of the program's iterators (``for``, ``list()``, ``sum()``: what calls ``iter()``): its items
    fetched in growing batches, 1, 2, 4, ... up to 1,024 per request (an item per request cost ~80 µs: a generator
    of 100,000 items took 8 s). A batch stops where the iterator ended or raised, and the loop meets that end at that
    item; the program's iterator runs at most one batch ahead of the loop (a limit: docs/executor.md). ``next(g)``
    the test calls itself steps one item, as in one process."""
    channel, size = ref._murphy_channel, 1
    while True:
        got = channel.op(ref, "next_many", (size,))
        items, error, ended = got if type(got) is tuple and len(got) == 3 else (None, None, None)
        if type(items) is not list or not (error is None or isinstance(error, BaseException)):
            channel.fail("protocol violation: a batch of an iterator's items is not (items, error, ended)")
        yield from items
        if error is not None:
            raise error
        if ended:
            return
        size = min(2 * size, 1024)


def _check(op: str):
    def forwarded(self, other) -> bool:
        channel = self._murphy_channel
        return False if channel.home_id(other) is None else channel.op(self, op, (other,))

    return forwarded


def _exit(self, kind, value, tb):
    """``with`` a program object: its ``__exit__`` sees what the block raised (an AssertionError without its text,
    a test's own exception as its builtin class), and may swallow an `Exception` the block raised, as in one
    process, but never a verdict: an AssertionError, or what is not an `Exception` (pytest's fail and skip, the
    timer's fault, SystemExit)."""
    channel = self._murphy_channel
    if value is None:
        return channel.op(self, "exit", (None, None, None))
    if isinstance(value, wire.Fault):
        return False
    sent = value if channel.home_id(value) is not None else _plain_exception(value)
    answer = channel.op(self, "exit", (type(sent), sent, None))
    return answer if isinstance(value, Exception) and not isinstance(value, AssertionError) else False


def _plain_exception(e: BaseException) -> BaseException:
    base = next(c for c in type(e).__mro__ if wire.BUILTINS.get(c.__name__) is c)
    if base is AssertionError:
        return AssertionError()
    try:
        wire.encode(e.args)
        return base(*e.args)
    except Exception:  # noqa: BLE001 - arguments that are not plain data
        return base()


def cached_hash(self) -> int:
    if type(self._murphy_hash) is not int:
        raise TypeError(f"unhashable type: {type(self).__name__!r}")
    return self._murphy_hash


_MADE = {  # a special method's forwarder: (its factory, the operation), or (None, the method itself)
    "__len__": (_unary, "len"),
    "__iter__": (None, _iter),
    "__next__": (_unary, "next"),
    "__reversed__": (_unary, "reversed"),
    "__contains__": (_keyed, "contains"),
    "__getitem__": (_keyed, "getitem"),
    "__setitem__": (_keyed, "setitem"),
    "__delitem__": (_keyed, "delitem"),
    "__bool__": (_unary, "bool"),
    "__call__": (None, _call),
    "__enter__": (_unary, "enter"),
    "__exit__": (None, _exit),
    **{f"__{op}__": (_compare, op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{
        f"__{op}__": (_unary, op)
        for op in ("neg", "pos", "abs", "invert", "int", "float", "complex", "index", "bytes")
    },
    "__round__": (_keyed, "round"),
    "__instancecheck__": (_check, "instancecheck"),
    "__subclasscheck__": (_check, "subclasscheck"),
    **{f"__{p}{op}__": (_operator, p + op) for op in _BINARY_OPS for p in ("", "r", "i")},
}
FORWARDERS: dict = {}  # a special method's name -> this job's forwarder, made on first use (`forwarder`)


def forwarder(name: str):
    """The forwarding method of special method `name` (None when there is none): made once per job, when a program
    type that has it first crosses (most jobs meet only functions)."""
    method = FORWARDERS.get(name)
    if method is None and name in _MADE:
        factory, arg = _MADE[name]
        method = FORWARDERS[name] = arg if factory is None else factory(arg)
    return method


def value_class(base: type) -> type:
    """This job's class of values of a program subclass of `base` (int, float, complex, str or bytes): its base's
    value and comparisons, the program's str, repr and truth (computed there when it crossed), and the program's
    other attributes (``.name`` of an enum member). Made on first use (most jobs meet none)."""
    cls = VALUES.get(base)
    if cls is None:
        cls = VALUES[base] = type(f"{base.__name__.title()}Value", (base,), {"_murphy_base": base, **_VALUE})
    return cls


def _value_attr(self, name: str):
    if name[:2] == "__" and name[-2:] == "__" or name.startswith("_murphy"):
        raise AttributeError(name)
    return self.__dict__["_murphy"][0].op(self, "getattr", (name,))


def _value_text(index: int, of_base: str):
    def text(self) -> str:
        own = self.__dict__["_murphy"][index]
        return getattr(self._murphy_base, of_base)(self) if own is None else own

    return text


_VALUE = {
    "_murphy_python_eq": False,
    "__getattr__": _value_attr,
    "__setattr__": lambda self, name, value: self.__dict__["_murphy"][0].op(self, "setattr", (name, value)),
    "__str__": _value_text(2, "__str__"),
    "__repr__": _value_text(3, "__repr__"),
    "__format__": lambda self, spec: str(self) if spec == "" else self._murphy_base.__format__(self, spec),
    "__bool__": lambda self: self.__dict__["_murphy"][4],
    "__copy__": lambda self: self,
    "__deepcopy__": lambda self, memo: self,
    "__reduce_ex__": lambda self, protocol: (self._murphy_base, (self._murphy_base(self),)),
}
VALUES: dict[type, type] = {}  # base -> this job's value class (`value_class`)


def tuple_attr(self, name: str):  # a namedtuple's attribute that is not a field: the program's (a method)
    if name[:2] == "__" or name.startswith("_murphy"):
        raise AttributeError(name)
    return type(self).__dict__["_murphy_owner"].op(self, "getattr", (name,))


def ref_text(ref: Ref) -> str:
    """A reference in feedback: the program's repr of its object, and why it did not cross."""
    why = ref._murphy_note or "not plain data: it answers for itself, and equals no value of the test's"
    name = type(ref).__name__
    article = "an" if name[:1].lower() in ("a", "e", "i", "o", "u") else "a"
    # the why fits
    text = ref._murphy_text if len(ref._murphy_text) <= 150 else ref._murphy_text[:150] + "..."
    return f"{text} ({article} {name} object of the program: {why})"
