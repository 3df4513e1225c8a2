"""Every notebook is paired with a jupytext `py:percent` file that reviewers read: the two must hold the same cells.

Compared: the cells' type, source and tags (papermill's `parameters` tag among them), not outputs. A pair that
disagrees fails with the command that re-syncs it.
"""

import re
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted([*ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), *ROOT.glob("reproduce/*.ipynb")])
PAIR_FORMATS = "ipynb,py:percent"


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _resync_hint(ipynb: Path) -> str:
    py = ipynb.with_suffix(".py")
    newer = py if py.exists() and py.stat().st_mtime > ipynb.stat().st_mtime else ipynb
    return (
        f"Re-sync the pair: `jupytext --to py:percent {_rel(ipynb)}` if you edited the .ipynb, "
        f"`jupytext --update --to ipynb {_rel(py)}` if you edited the .py. (`make notebooks` runs "
        f"`jupytext --sync` on every pair, which copies the more recently modified file over the other: here "
        f"{_rel(newer)}.)"
    )


def _cells(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def _first_difference(want: list, got: list) -> str | None:
    for i, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f"cell {i} differs in " + " and ".join(
                k for k, x, y in zip(("type", "source", "tags"), a, b) if x != y
            )
    if len(want) != len(got):
        return f"{len(want)} cells in the .ipynb, {len(got)} in the .py"
    return None


def test_every_notebook_directory_holds_notebooks():
    assert {p.parent.name for p in NOTEBOOKS} == {"notebooks", "reproduce"}


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=_rel)
def test_notebook_declares_its_py_percent_pair(ipynb):
    formats = nbformat.read(ipynb, as_version=4).metadata.get("jupytext", {}).get("formats")
    assert formats == PAIR_FORMATS, (
        f"{_rel(ipynb)} is not paired (jupytext formats {formats!r}): run "
        f"`jupytext --set-formats {PAIR_FORMATS} {_rel(ipynb)}` and commit the new {_rel(ipynb.with_suffix('.py'))}."
    )


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=_rel)
def test_notebook_and_its_py_percent_file_hold_the_same_cells(ipynb):
    py = ipynb.with_suffix(".py")
    assert py.exists(), f"{_rel(py)} is missing. {_resync_hint(ipynb)}"
    difference = _first_difference(
        _cells(nbformat.read(ipynb, as_version=4)), _cells(jupytext.read(py, fmt="py:percent"))
    )
    assert difference is None, f"{_rel(py)} and {_rel(ipynb)} disagree ({difference}). {_resync_hint(ipynb)}"


def _percent_files() -> list[Path]:
    """The .py files under notebooks/ and reproduce/ that are jupytext notebooks (any other module is left alone)."""
    files = [*ROOT.glob("notebooks/*.py"), *ROOT.glob("reproduce/*.py")]
    return sorted(p for p in files if re.search(r"^# %%", p.read_text(encoding="utf-8"), re.MULTILINE))


@pytest.mark.parametrize("py", _percent_files(), ids=_rel)
def test_every_py_percent_file_has_its_notebook(py):
    assert py.with_suffix(".ipynb").exists(), (
        f"{_rel(py)} has no {_rel(py.with_suffix('.ipynb'))}: create it with "
        f"`jupytext --set-formats {PAIR_FORMATS} {_rel(py)}`, or delete the .py."
    )
