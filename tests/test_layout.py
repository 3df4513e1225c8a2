"""The formatter owns the layout (CONTRIBUTING.md, "Layout"): `ruff format --check` and `ruff check` pass on the
whole tree with the ruff release pyproject.toml pins, `# fmt: skip` stands only on the tables of numbers named here,
and every module of the package is under 500 lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The only statements the formatter leaves alone (CONTRIBUTING.md states the count): the paper's numbers, one row of
# its table per line, and the profiles' presets, a few knobs per line (one knob a line would spread each over a page).
TABLES_OF_NUMBERS = {
    "murphy_lab/experiments/paper.py": ["_MAIN", "PRUNING_TIME"],
    "murphy_lab/profiles.py": [
        "SMOKE_PRESETS",
        "TOY_PRESETS",
        "MUCODE_SMOKE",
        "MUCODE_TOY",
        "REAL_CPU_PRESETS",
    ],
}


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_the_release_pyproject_pins():
    pin = re.search(r'"ruff==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin, "pyproject.toml's dev extra pins ruff==X"
    assert _ruff("--version").stdout.split() == ["ruff", pin[1]]


@pytest.mark.parametrize("command", [("format", "--check", "."), ("check", ".")], ids=["format", "check"])
def test_the_tree_is_as_ruff_leaves_it(command):
    res = _ruff(*command)
    assert res.returncode == 0, (
        f"`ruff {' '.join(command)}` (make format fixes the layout):\n{res.stdout}{res.stderr}"
    )


def test_fmt_skip_stands_only_on_the_tables_of_numbers():
    found = {}
    for top in ("murphy_lab", "tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            lines = path.read_text().splitlines()
            for i, line in enumerate(lines):
                if line.rstrip().endswith("# fmt: skip"):
                    start = next(j for j in range(i, -1, -1) if re.match(r"[A-Za-z_]\w* = ", lines[j]))
                    found.setdefault(str(path.relative_to(ROOT)), []).append(lines[start].split(" = ")[0])
    assert found == TABLES_OF_NUMBERS


def test_every_module_is_under_500_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "murphy_lab").rglob("*.py")
        if (n := len(p.read_text().splitlines())) >= 500
    }
    assert not long, f"one concept per module, under 500 lines: split {long}"
