"""Every notebook's text matches its outputs, and the executed copies read well without a kernel.

A notebook's markdown marks the numbers it quotes from its own run between `<!-- measured -->` and
`<!-- /measured -->`, and numbers it quotes from a page of docs/ between `<!-- quoted: docs/<page> -->` and
`<!-- /quoted -->`. A notebook with measured numbers has an executed copy in docs/executed/ (made by
benchmarks/notebooks_executed.py) whose cells are the notebook's cells; each measured number must be among that
copy's outputs, each quoted one in its page. Numbers a text states about values the notebook computes without a
model run (notebook 09's table, 08's recorded tree) are asserted in a code cell beside the text instead, which the
smoke run of tests/test_notebooks.py executes.
"""

from __future__ import annotations

import importlib.util
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXECUTED = sorted((ROOT / "docs" / "executed").glob("*.ipynb"))
BLOCK = re.compile(
    r"<!-- (measured(?:: [^>]*)?|quoted: (\S+)[^>]*) -->(.*?)<!-- /(?:measured|quoted) -->", re.DOTALL
)
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def _tool():
    spec = importlib.util.spec_from_file_location(
        "notebooks_executed", ROOT / "benchmarks" / "notebooks_executed.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def numbers(text: str) -> set[str]:
    """The numbers of a text by value, written without thousands separators or trailing zeros (`2,514` -> `2514`,
    `0.0000` -> `0`, `87.0` -> `87`)."""
    return {format(Decimal(n.replace(",", "")).normalize(), "f") for n in NUMBER.findall(text)}


def blocks(nb: dict) -> list[tuple[str, str | None, str]]:
    """(kind, quoted page or None, text) of every marked block of the notebook's markdown."""
    md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return [("measured" if m[1].startswith("measured") else "quoted", m[2], m[3]) for m in BLOCK.finditer(md)]


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _sources(nb: dict) -> list[tuple[str, str]]:
    return [
        (c["cell_type"], "".join(c["source"]))
        for c in nb["cells"]
        if "injected-parameters" not in c.get("metadata", {}).get("tags", [])
    ]


def test_marked_blocks_are_found_with_or_without_a_note():
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "source": "a <!-- measured: a note --> 1.5 <!-- /measured --> 2 "
                "<!-- measured -->3<!-- /measured --> <!-- quoted: docs/x.md -->4<!-- /quoted -->",
            }
        ]
    }
    assert blocks(nb) == [("measured", None, " 1.5 "), ("measured", None, "3"), ("quoted", "docs/x.md", "4")]


def test_numbers_are_read_as_a_reader_reads_them():
    assert numbers("78.5 ± 2.9 | 1,280 | 10 / 20 | +8.5 and x2.5, step_3") == {
        "78.5",
        "2.9",
        "1280",
        "10",
        "20",
        "8.5",
    }
    assert numbers("0.0000, 87.0 and 90.50") == {"0", "87", "90.5"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_that_quotes_its_own_run_has_an_executed_copy_of_its_current_cells(path):
    nb = _load(path)
    if not any(kind == "measured" for kind, _, _ in blocks(nb)):
        pytest.skip("quotes no number of its own run")
    copy = ROOT / "docs" / "executed" / path.name
    assert copy.is_file(), (
        f"{path.stem} quotes its run but has no executed copy: benchmarks/notebooks_executed.py"
    )
    assert _sources(_load(copy)) == _sources(nb), (
        f"docs/executed/{path.name} is a run of an older version of the notebook: rerun "
        f"`.venv/bin/python benchmarks/notebooks_executed.py {path.stem}`"
    )


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.stem)
def test_every_measured_number_is_among_the_executed_copys_outputs(path):
    nb = _load(path)
    seen = numbers(_tool().outputs_text(nb))
    missing = {n for kind, _, text in blocks(nb) if kind == "measured" for n in numbers(text) - seen}
    assert missing == set(), f"{path.stem}: the text quotes {sorted(missing)}, which its outputs do not show"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_quoted_number_is_in_the_page_it_quotes(path):
    for kind, page, text in blocks(_load(path)):
        if kind == "quoted":
            missing = numbers(text) - numbers((ROOT / page).read_text())
            assert missing == set(), (
                f"{path.stem} quotes {sorted(missing)} from {page}, which does not hold them"
            )


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.stem)
def test_an_executed_copy_reads_well_without_a_kernel(path):
    tool, nb = _tool(), _load(path)
    text = tool.outputs_text(nb)
    assert tool.machine_paths(nb) == []
    assert not re.search(r"\b0/\d+ \[", text), (
        "a progress bar frozen at its start (benchmarks/notebooks_executed.py)"
    )
    assert "application/vnd.jupyter.widget-view+json" not in json.dumps(nb)
    assert not [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_freeze_bars_writes_each_bars_final_line():
    tool = _tool()
    ids = [f"{i:032x}" for i in range(4)]
    state = {
        ids[0]: {"model_name": "HBoxModel", "state": {"children": [f"IPY_MODEL_{i}" for i in ids[1:]]}},
        ids[1]: {"model_name": "HTMLModel", "state": {"value": "grpo seed 0:\u2007100%"}},
        ids[2]: {"model_name": "FloatProgressModel", "state": {"value": 40.0, "max": 40.0}},
        ids[3]: {"model_name": "HTMLModel", "state": {"value": "\u200740/40\u2007[00:20&lt;00:00]"}},
    }
    nb = {
        "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}},
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "data": {
                            "application/vnd.jupyter.widget-view+json": {"model_id": ids[0]},
                            "text/plain": ["0/40 [00:00<?]"],
                        },
                    }
                ],
            }
        ],
    }
    assert tool.freeze_bars(nb) == 1 and "widgets" not in nb["metadata"]
    assert nb["cells"][0]["outputs"][0]["data"] == {
        "text/plain": ["grpo seed 0: 100%|██████████| 40/40 [00:20<00:00]"]
    }


def test_the_browser_check_refuses_an_unknown_notebook_before_it_starts_anything(capsys):
    spec = importlib.util.spec_from_file_location(
        "notebooks_browser", ROOT / "benchmarks" / "notebooks_browser.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["99_no_such_notebook"]) == 2
    assert "no notebook 99_no_such_notebook" in capsys.readouterr().err


def test_the_executed_copies_tool_refuses_an_unknown_notebook(capsys):
    assert _tool().main(["99_no_such_notebook"]) == 2
    assert "no notebook 99_no_such_notebook" in capsys.readouterr().err
