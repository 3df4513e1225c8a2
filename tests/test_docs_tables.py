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

# registry -> (its docs page, the first cells of its table's header row, names its rows may hold besides entries)
TABLES = {
    "credit rules": (lambda: credit.CREDIT_RULES, "docs/credit_rules.md", "| name (label) | credit", ()),
    "modes": (lambda: modes.MODES, "docs/training.md", "| mode | tree grown", ()),
    "task sources": (lambda: registry.SOURCES, "docs/benchmarks.md", "| source | loader", ("package.module:function",)),
    "profiles": (lambda: profiles.PROFILES, "docs/reproduce.md", "| profile | what runs", ()),
}


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


def drift(name: str) -> tuple[list[str], list[str]]:
    """(registered entries without a row, rows naming no registered entry) of one table."""
    entries, doc, header, extra = TABLES[name]
    rows = table_names(doc, header)
    return sorted(set(entries()) - rows), sorted(rows - set(entries()) - set(extra))


@pytest.mark.parametrize("name", TABLES)
def test_every_registry_entry_has_its_row_and_every_row_an_entry(name):
    missing, stale = drift(name)
    assert not missing, f"{TABLES[name][1]}: add a row for {missing} to the {name} table"
    assert not stale, f"{TABLES[name][1]}: the {name} table names {stale}, which are not registered"


def test_a_new_entry_without_its_row_is_caught(monkeypatch):
    monkeypatch.setitem(credit.CREDIT_RULES, "fake_rule", credit.CREDIT_RULES["mars"])
    monkeypatch.setitem(modes.MODES, "fake_mode", modes.MODES["grpo"])
    monkeypatch.setitem(registry.SOURCES, "fake_source", "x:y")
    monkeypatch.setitem(profiles.PROFILES, "fake-profile", profiles.PROFILES["smoke"])
    assert [drift(name)[0] for name in TABLES] == [["fake_rule"], ["fake_mode"], ["fake_source"], ["fake-profile"]]
