"""The values of the program's own classes that cross as data: fixed types of ours, built from plain fields.

Loaded by `wire.py` (stdlib only). A program's namedtuple or match reaches the other side as one of these frozen
values, never as a class made from the program's description: the class name and field names the program sends
are data held in slots, never attributes, class-body entries or names looked up anywhere, and equality is defined
here (a namedtuple's is the tuple's).

- `NamedTupleValue`: a tuple (equal to a tuple of the same items, as a namedtuple is) whose fields are readable by
  name (``p.x``, ahead of the tuple's own methods: a field named ``count`` is the field, as in the program), with
  ``_fields``, ``_asdict()`` and ``_replace()``; its class name shows in ``repr``. On the test side the channel
  makes it an instance of a subclass named like the program's class, which goes home as the program's own object
  (`channel.py`).
- `MatchValue`: a `re.Match` (true; ``group``, ``groups``, ``groupdict``, ``span``, ``start``, ``end``,
  ``lastindex``, ``lastgroup``, ``pos``, ``endpos``).
- `ProgramModule`: a module of the program, by name only (the test side imports its own copy of a module the
  test's names bind, `harness.own_module`, and never this one).
"""

from __future__ import annotations


class NamedTupleValue(tuple):
    """A namedtuple of the program: its items, with its class name and field names kept as data."""

    def __new__(cls, class_name: str, fields: tuple, items: tuple):
        self = tuple.__new__(cls, items)
        object.__setattr__(self, "_murphy_meta", (class_name, fields))
        return self

    def __getattribute__(self, attr: str):
        # a field first, as the program's class has it (a field `count` is not tuple.count)
        if attr[:1] != "_":
            fields = object.__getattribute__(self, "__dict__")["_murphy_meta"][1]
            if attr in fields:
                return tuple.__getitem__(self, fields.index(attr))
        return object.__getattribute__(self, attr)

    def __setattr__(self, attr: str, value) -> None:
        raise AttributeError("a namedtuple of the program is frozen")

    __delattr__ = __setattr__

    @property
    def _fields(self) -> tuple:
        return self._murphy_meta[1]

    def _asdict(self) -> dict:
        return dict(zip(self._murphy_meta[1], self))

    def _replace(self, **changes):
        items = [changes.pop(f, v) for f, v in zip(self._murphy_meta[1], self)]
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return NamedTupleValue(self._murphy_meta[0], self._murphy_meta[1], tuple(items))

    def __repr__(self) -> str:
        name, fields = self._murphy_meta
        return f"{name}({', '.join(f'{f}={v!r}' for f, v in zip(fields, self))})"

    def __reduce__(self):
        return (NamedTupleValue, (*self._murphy_meta, tuple(self)))


class MatchValue:
    """A `re.Match` of the program (a final C type: no program code in it): its string, the span of each group
    (0 first; (-1, -1) for a group that did not take part) and the group names. Always true, as a match is."""

    __slots__ = ("string", "_spans", "_names", "lastindex", "pos", "endpos")

    def __init__(
        self, string, spans: tuple, names: dict, lastindex=None, pos: int = 0, endpos: int | None = None
    ):
        endpos = len(string) if endpos is None else endpos
        for slot, v in zip(MatchValue.__slots__, (string, spans, names, lastindex, pos, endpos)):
            object.__setattr__(self, slot, v)

    @property
    def lastgroup(self):
        return next((n for n, i in self._names.items() if i == self.lastindex), None)

    def __setattr__(self, attr: str, value) -> None:
        raise AttributeError("a match of the program is frozen")

    def _index(self, g) -> int:
        i = self._names.get(g, g) if type(g) is str else g
        if type(i) is not int or not 0 <= i < len(self._spans):
            raise IndexError("no such group")
        return i

    def group(self, *groups):
        found = [self[g] for g in groups or (0,)]
        return found[0] if len(found) == 1 else tuple(found)

    def __getitem__(self, g):
        start, end = self._spans[self._index(g)]
        return None if start < 0 else self.string[start:end]

    def groups(self, default=None) -> tuple:
        return tuple(default if s < 0 else self.string[s:e] for s, e in self._spans[1:])

    def groupdict(self, default=None) -> dict:
        return {n: (self[i] if self._spans[i][0] >= 0 else default) for n, i in self._names.items()}

    def span(self, g=0) -> tuple:
        return self._spans[self._index(g)]

    def start(self, g=0) -> int:
        return self.span(g)[0]

    def end(self, g=0) -> int:
        return self.span(g)[1]

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<re.Match object; span={self.span()!r}, match={self.group()!r}>"


class ProgramModule:
    """A module of the program process, by name only (a test never uses it: it imports what it needs)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        object.__setattr__(self, "name", name)

    def __getattr__(self, attr: str):
        raise NameError(
            f"the test uses the program's module {self.name!r}, which it does not import itself: tests use only the "
            "modules they import (or, by the name in the test's own text, one of the standard library)"
        )

    def __repr__(self) -> str:
        return f"<module {self.name!r} of the program>"
