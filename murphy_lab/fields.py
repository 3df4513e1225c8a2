"""A config dataclass's fields by name and type: what every command line's `--set` and every `validate()` share.

    unknown_fields(MurphyConfig, {"g3": 1})          -> ["unknown config field 'g3' (did you mean 'g1'?)"]
    type_problem("max_steps", 1.5, int)              -> "max_steps: must be an integer, got 1.5"
    type_problems(config)                            -> the same, for every field of a config dataclass
    field_problems(MurphyConfig, {"max_steps": 1.5}) -> the same, for every field of the mapping
    from_text("123", str)                            -> "123" (a value typed on a command line, read as YAML)

A field's type is its annotation (`int`, `float`, `bool`, `str`, `dict`, `list`, unions with `None`); a value is
checked against it before anything is built, so a wrong type is one line naming the field, not a traceback from
deep inside TRL after the models loaded.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

import yaml

from murphy_lab.suggest import did_you_mean

NAMES = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "a mapping",
    list: "a list",
    tuple: "a list",
    type(None): "null",
}


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """{field name: its resolved annotation} of a dataclass (string annotations resolved)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}


def _arms(tp: Any) -> tuple:
    """The plain types a value of annotation `tp` may have (a union's arms; `Any` -> ())."""
    if tp is Any:
        return ()
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return tuple(a for arm in typing.get_args(tp) for a in _arms(arm))
    origin = typing.get_origin(tp)
    return (origin or tp,)


def fits(value: Any, tp: Any) -> bool:
    """Whether `value` has the type annotation `tp` (a bool is no number; an int is a float)."""
    arms = _arms(tp)
    if not arms:
        return True
    for arm in arms:
        if arm is bool and isinstance(value, bool):
            return True
        if arm is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if arm is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if arm in (list, tuple) and isinstance(value, (list, tuple)):
            return True
        if arm is str and isinstance(value, str):
            return True
        if arm is dict and isinstance(value, dict):
            return True
        if arm is type(None) and value is None:
            return True
        if arm not in NAMES and isinstance(arm, type) and isinstance(value, arm):
            return True
    return False


def describe(tp: Any) -> str:
    """'an integer', 'an integer or null', ... (the words of a type error)."""
    names = list(dict.fromkeys(NAMES.get(arm, getattr(arm, "__name__", str(arm))) for arm in _arms(tp)))
    return " or ".join(names) or "anything"


def type_problem(name: str, value: Any, tp: Any) -> str | None:
    """One line when `value` does not have type `tp` ("max_steps: must be an integer, got 1.5"), else None."""
    if fits(value, tp):
        return None
    hint = ""
    if isinstance(value, str) and float in _arms(tp):
        try:
            number = repr(float(value))
        except ValueError:
            number = ""
        if "e" in number and "." not in number.split("e")[0]:
            number = number.replace("e", ".0e")  # 1.0e-06: a float to YAML 1.1, which reads 1e-06 as text
        hint = f" (YAML reads {value} as text: write {number})" if number else ""
    return f"{name}: must be {describe(tp)}, got {value!r}{hint}"


def unknown_fields(cls: type, names: typing.Iterable[str], what: str = "config field") -> list[str]:
    """One line per name that is not a field of `cls`, with the nearest field when one is close."""
    known = field_types(cls)
    return [f"unknown {what} {name!r}{did_you_mean(name, known)}" for name in names if name not in known]


def type_problems(config: Any) -> list[str]:
    """One line per field of the dataclass instance `config` whose value has the wrong type (a config's
    `problems()` reports these alone: its range checks would misread such a value)."""
    return [
        p
        for name, tp in field_types(type(config)).items()
        for p in [type_problem(name, getattr(config, name), tp)]
        if p
    ]


def field_problems(cls: type, values: dict) -> list[str]:
    """Every unknown field and every value of the wrong type in `values`, one line each."""
    types_ = field_types(cls)
    problems = unknown_fields(cls, [k for k in values if k not in types_])
    return problems + [
        p for k, v in values.items() if k in types_ for p in [type_problem(k, v, types_[k])] if p
    ]


def from_text(text: str, tp: Any = Any) -> Any:
    """A value typed on a command line: read as YAML (``4`` -> 4, ``true`` -> True, ``{a: 1}`` -> {"a": 1},
    ``null`` -> None); for a field that takes a string, text YAML would read as something else stays the text
    (``model=123`` is the folder '123'). Raises ValueError for text that is not YAML."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"cannot read {text!r} ({str(err).splitlines()[0]})") from None
    if fits(value, tp):
        return value
    if isinstance(value, str) and float in _arms(tp):
        try:
            return float(text)  # 1e-6, which YAML 1.1 reads as text
        except ValueError:
            pass
    return text if str in _arms(tp) else value
