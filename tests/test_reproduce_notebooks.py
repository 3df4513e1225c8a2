"""reproduce/*.ipynb: stored without outputs, one `parameters` cell, and each runs under papermill (smoke profile).

The smoke runs share one results folder in the order below, as a user would run them: the ablations and the
cross-scaffold notebook reuse the main table's cached runs and checkpoints, through the real trainer and evaluation.
"""

import json
import os
from pathlib import Path

import pytest

REPRO = Path(__file__).resolve().parents[1] / "reproduce"
NOTEBOOKS = ["main_table", "ablation_credit", "ablation_pruning", "lcb_difficulty", "cross_scaffold"]
REQUIRED_PARAMETERS = (
    "profile",
    "models",
    "methods",
    "seeds",
    "output_dir",
    "train",
    "from_cache_only",
    "backend",
)


def cells(name):
    return json.loads((REPRO / f"{name}.ipynb").read_text())["cells"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_stored_without_outputs(name):
    code = [c for c in cells(name) if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_has_one_parameters_cell_with_the_agreed_names(name):
    tagged = [c for c in cells(name) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    source = "".join(tagged[0]["source"])
    assert all(f"\n{p} = " in "\n" + source for p in REQUIRED_PARAMETERS)


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
    pytest.importorskip("papermill")
    old = os.environ.get("MURPHY_LAB_CODE_VERSION")
    # one key space for the whole session (see module doc)
    os.environ["MURPHY_LAB_CODE_VERSION"] = "test-session"
    yield tmp_path_factory.mktemp("reproduce")
    if old is None:
        os.environ.pop("MURPHY_LAB_CODE_VERSION", None)
    else:
        os.environ["MURPHY_LAB_CODE_VERSION"] = old


def run_notebook(name, out_dir, **params):
    import papermill as pm

    return pm.execute_notebook(
        str(REPRO / f"{name}.ipynb"),
        str(out_dir / f"{name}.ipynb"),
        parameters=dict(output_dir=str(out_dir / "results"), cache_dir=str(out_dir / "cache"), **params),
        cwd=str(REPRO),
        kernel_name="python3",
        progress_bar=False,
    )


# lcb_difficulty plans a subset of main_table's runs, so it is run from the cache alone: that checks the
# rebuild-from-cache path without paying for another notebook.
FROM_CACHE = {"lcb_difficulty"}


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_smoke_profile_writes_the_tables(name, smoke_dir):
    run_notebook(name, smoke_dir, profile="smoke", backend="real", from_cache_only=name in FROM_CACHE)
    out = smoke_dir / "results" / "smoke"
    for ext in ("csv", "md", "tex"):
        assert (out / f"{name}.{ext}").stat().st_size > 0
    assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    if name in FROM_CACHE:
        assert "from cache:" not in (smoke_dir / f"{name}.ipynb").read_text()  # every planned run was found
    # the smoke profile trains and evaluates µCode and ReVeal like every other column
    if name == "main_table":
        import pandas as pd

        table = pd.read_csv(out / "main_table.csv")
        for column in ("µCode", "ReVeal"):
            assert len(table) and all(float(str(c).split(" ± ")[0]) >= 0 for c in table[column]), table[
                column
            ]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_resources_are_checked_before_anything_runs(name):
    """The paper profile must stop in `X.setup` (tests/test_experiments.py checks that it does, and its message),
    which every notebook calls once, with its parameters, before it plans or runs anything."""
    code = ["".join(c["source"]) for c in cells(name) if c["cell_type"] == "code"]
    setups = [i for i, src in enumerate(code) if "X.setup(profile," in src]
    first_plan = next(i for i, src in enumerate(code) if "S.plan(" in src)
    first_run = next(i for i, src in enumerate(code) if "S.run(" in src)
    assert len(setups) == 1 and setups[0] < first_plan <= first_run
    call = code[setups[0]][code[setups[0]].index("X.setup(profile,") :]
    assert all(f"{p}={p}" in call for p in ("train", "from_cache_only", "backend", "model_paths"))
