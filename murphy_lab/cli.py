"""The one command-line parser of every `python -m murphy_lab.<x>` entry point (train, eval_cli, merge, the data
step, jobs, µCode's and ReVeal's trainers), built on the standard library's `argparse`:

    p = cli.Parser("python -m murphy_lab.train", __doc__)
    cli.add_set(p, "override config fields")      # --set F=V ...; repeated --set lists are merged
    a = p.parse(argv)                                # every unknown option at once, each with its nearest name
    plain, nested, problems = cli.sets(a.set, field_types(MurphyConfig))   # names and types, before any import
    cli.refuse(problems)                            # one line per problem, exit status 2 (under cli.run)

Why argparse and not typer or fire (both installed): argparse is what every entry point already spoke and needs no
dependency; `action="extend"` merges a repeated option's lists, `parse_known_args` hands back every unknown option
at once, and the checks argparse does not do — a `--set` field against the config's dataclass, its value against the
field's type, a profile or method name with a did-you-mean — are plain functions here, run on the parsed strings
before any heavy import. typer would type options from annotations but not `FIELD=VALUE` items against a dataclass,
and fire turns any attribute into a flag, with no error for a misspelt one.

What every entry point does around its `main` (`run`): INFO logging, and a bad input — a `Refused` (its problems,
one line each), any other `ValueError` (malformed task file, impossible config) or a `FileNotFoundError` (a data
source or file that is not there) — printed as `error: ...` with exit status 2 instead of a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from murphy_lab.fields import fits, from_text, type_problem
from murphy_lab.suggest import did_you_mean


class Refused(ValueError):
    """Bad input, every problem at once: one line each (`str()` joins them)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


def refuse(problems: Iterable[str]) -> None:
    """Raise `Refused` when there is any problem (deduplicated, in order)."""
    problems = list(dict.fromkeys(p for p in problems if p))
    if problems:
        raise Refused(problems)


class Parser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` whose problems are `Refused` lines instead of a usage text and an exit: an unknown
    option names the nearest known one, and `parse` reports every unknown option at once. No abbreviations (a
    misspelt option is an error with a suggestion, never silently another option)."""

    def __init__(self, prog: str, doc: str | None = None, **kw: Any):
        super().__init__(
            prog=prog,
            description=(doc or "").split("\n")[0],
            allow_abbrev=False,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kw,
        )

    def error(self, message: str):
        raise Refused([message])

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        args, extra = self.parse_known_args(argv)
        options = [s for a in self._actions for s in a.option_strings]
        problems, after_unknown = [], False
        for token in extra:
            if token.startswith("-"):
                name = token.split("=")[0]
                problems.append(f"unknown option {name!r}{did_you_mean(name, options)}")
                after_unknown = True
            elif not after_unknown:  # a value after an unknown option is that option's
                problems.append(f"unexpected argument {token!r}")
        refuse(problems)
        return args


def add_set(
    parser: argparse.ArgumentParser, help: str, option: str = "--set", dest: str | None = None
) -> None:
    """`--set FIELD=VALUE ...`: given more than once, its lists are merged (a field given twice with different
    values is refused by `sets`)."""
    parser.add_argument(
        option, nargs="+", action="extend", default=[], metavar="FIELD=VALUE", help=help, dest=dest
    )


def pairs(items: Iterable[str], option: str) -> tuple[dict[str, str], list[str]]:
    """(NAME -> VALUE text, problems) of `NAME=VALUE` items; a name given twice with different values is a
    problem, the same value twice is one item."""
    out: dict[str, str] = {}
    problems = []
    for item in items:
        if "=" not in item:
            problems.append(f"{option} expects NAME=VALUE, got {item!r}")
            continue
        name, value = (part.strip() for part in item.split("=", 1))
        if not name:
            problems.append(f"{option}: no name before '=' in {item!r}")
        elif name in out and out[name] != value:
            problems.append(f"{option} {name} is given twice ({out[name]!r}, then {value!r}); give it once")
        else:
            out[name] = value
    return out, problems


def values(items: Iterable[str], option: str) -> dict[str, Any]:
    """`NAME=VALUE` items read as YAML values (`--task-args n=5 split=test`); `Refused` on a malformed item."""
    texts, problems = pairs(items, option)
    out = {}
    for name, text in texts.items():
        try:
            out[name] = from_text(text)
        except ValueError as err:
            problems.append(f"{option} {name}: {err}")
    refuse(problems)
    return out


def sets(items: Iterable[str], schema: dict[str, Any], option: str = "--set") -> tuple[dict, dict, list[str]]:
    """(plain field values, dotted values nested, problems) of `--set` items against `schema` ({field: type}, e.g.
    `fields.field_types(MurphyConfig)`): an unknown field (with its nearest name), a value of the wrong type, a
    dotted name into a field that is not a mapping, a field given twice with different values. Nothing is imported
    or built: the names and types are checked on the strings themselves."""
    texts, problems = pairs(items, option)
    plain: dict = {}
    nested: dict = {}
    for key, text in texts.items():
        top, *rest = key.split(".")
        if not all([top, *rest]):
            problems.append(f"{option}: bad field name {key!r}")
            continue
        if top not in schema:
            problems.append(f"{option} {key}: unknown field {top!r}{did_you_mean(top, schema)}")
            continue
        try:
            value = from_text(text, schema[top] if not rest else Any)
        except ValueError as err:
            problems.append(f"{option} {key}: {err}")
            continue
        if not rest:
            line = type_problem(top, value, schema[top])
            if line:
                problems.append(line)
            else:
                plain[top] = value
            continue
        if not fits({}, schema[top]):
            problems.append(f"{option} {key}: {top!r} is not a mapping field; set it whole ({top}=...)")
            continue
        target = nested.setdefault(top, {})
        for name in rest[:-1]:
            target = target.setdefault(name, {})
            if not isinstance(target, dict):
                problems.append(f"{option} {key}: {name!r} was already set to a value, not a mapping")
                break
        else:
            target[rest[-1]] = value
    return plain, nested, problems


def merged(base: dict, extra: dict) -> dict:
    """`base` with `extra` merged in, mapping by mapping (a dotted `--set` adds to a mapping field, keeps the rest)."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def apply_nested(config: Any, nested: dict) -> Any:
    """The dataclass `config` with dotted `--set` values (`sets`' second value) merged into its mapping fields."""
    return dataclasses.replace(
        config, **{name: merged(getattr(config, name) or {}, values) for name, values in nested.items()}
    )


def choice(value: str | None, known: Iterable[str], option: str) -> str | None:
    """One line when `value` is not among `known` (with the nearest one), else None."""
    known = list(known)
    if value is None or value in known:
        return None
    return f"{option}: unknown {value!r}{did_you_mean(value, known)}; known: {' | '.join(known)}"


def report_problems(problems: list[str], ok: str) -> None:
    """A check's verdict: one line per problem and exit status 2, or the `ok` line (--check, jobs check)."""
    for line in problems:
        print(line)
    if problems:
        raise SystemExit(2)
    print(ok)


def run(main: Callable[[], object]) -> None:
    logging.basicConfig(level=logging.INFO)
    try:
        main()
    except Refused as e:  # every problem of the input, one line each
        for line in e.problems:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(2)
    except (ValueError, FileNotFoundError) as e:  # bad arguments, tasks, configuration or paths: one line
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
