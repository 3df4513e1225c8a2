"""The docs' tables of the registries cannot drift: every credit rule (docs/credit_rules.md), mode
(docs/training.md), task source (docs/benchmarks.md) and run profile (docs/reproduce.md) has its row, named in the
table's first column, and every row names a registered entry. A fake entry, registered here, is caught missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from murphy_lab import credit, modes, profiles
from murphy_lab.tasks import registry

ROOT = Path(__file__).resolve().parents[1]

# registry -> (where it lives, its docs page, the first cells of its table's header, names rows may hold besides)
TABLES = {
    "credit rules": ((credit, "CREDIT_RULES"), "docs/credit_rules.md", "| name (label) | credit", ()),
    "modes": ((modes, "MODES"), "docs/training.md", "| mode | tree grown", ()),
    "task sources": (
        (registry, "SOURCES"),
        "docs/benchmarks.md",
        "| source | loader",
        ("package.module:function",),
    ),
    "profiles": ((profiles, "PROFILES"), "docs/reproduce.md", "| profile | what runs", ()),
}
# the registries as the package registers them, before any test registers its own (test_tasks adds a source)
SHIPPED = {name: dict(getattr(*where)) for name, (where, *_) in TABLES.items()}


def table_names(doc: str, header: str) -> set[str]:
    """The `backticked` names in the first cell of each row of the table under `header`."""
    lines = (ROOT / doc).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = set()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names |= set(re.findall(r"`\"?([^`\"]+)\"?`", line.split("|")[1]))
    return names


def drift(name: str, entries: dict | None = None) -> tuple[list[str], list[str]]:
    """(registered entries without a row, rows naming no registered entry) of one table; `entries`: the registry
    (default: as the package ships it)."""
    _, doc, header, extra = TABLES[name]
    rows, entries = table_names(doc, header), SHIPPED[name] if entries is None else entries
    return sorted(set(entries) - rows), sorted(rows - set(entries) - set(extra))


@pytest.mark.parametrize("name", TABLES)
def test_every_registry_entry_has_its_row_and_every_row_an_entry(name):
    missing, stale = drift(name)
    assert not missing, f"{TABLES[name][1]}: add a row for {missing} to the {name} table"
    assert not stale, f"{TABLES[name][1]}: the {name} table names {stale}, which are not registered"


def test_a_new_entry_without_its_row_is_caught(monkeypatch):
    fake = {
        "credit rules": "fake_rule",
        "modes": "fake_mode",
        "task sources": "fake_source",
        "profiles": "fake-profile",
    }
    for name, entry in fake.items():  # registered in each live registry, with no row for it
        where = TABLES[name][0]
        monkeypatch.setitem(getattr(*where), entry, next(iter(getattr(*where).values())))
        assert entry in drift(name, getattr(*where))[0]
        assert drift(name, {**SHIPPED[name], entry: None}) == ([entry], [])
