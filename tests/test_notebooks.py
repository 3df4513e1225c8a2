"""The teaching notebooks: stored without outputs, one `parameters` cell each, and every one runs top to bottom
under papermill with small parameters (exercise answers filled in, so their check cells are exercised too)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))

# Smoke-size parameters per notebook (each must name a variable of that notebook's parameters cell).
SMALL = {
    "01_rollout_tree": dict(g1=3, g2=2, n_trees=4, toy_size="smoke", toy_tasks=1),
    "02_executor_feedback": dict(timeout=0.5, n_batch=8),
    "03_retrospective_credit": dict(),
    "04_pruning": dict(seq_len=16, repeats=1),
    "05_grpo_step": dict(hidden=16, layers=1),
    "06_training_toy_world": dict(
        policy_size="smoke", max_steps=2, tasks_per_step=2, eval_tasks=2, eval_every=1
    ),
    "07_ablation_playground": dict(n_trees=3),
    "08_real_model": dict(max_new_tokens=48),
    "09_credit_rules": dict(g1=4, g2=2),
    "10_real_run": dict(),  # reads the committed real-cpu run (trains nothing)
    "11_reward_hacking": dict(max_steps=2, tasks_per_step=2, g1=2, hack_sft_steps=10, eval_tasks=4),
    "12_benchmark_protocol": dict(),
}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _parameters_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]


def _parameter_names(nb: dict) -> set[str]:
    source = "".join(_parameters_cells(nb)[0]["source"])
    return {
        line.split("=")[0].strip() for line in source.splitlines() if "=" in line and not line.startswith("#")
    }


def test_every_notebook_of_the_course_is_present_with_its_small_parameters():
    assert [p.stem for p in NOTEBOOKS] == list(SMALL)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    code = [c for c in _load(path)["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_exactly_one_parameters_cell(path):
    assert len(_parameters_cells(_load(path))) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_summary_exercises_and_check_cells(path):
    nb = _load(path)
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "## Summary" in text and "## Exercises" in text and "check_answer(" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_small_parameters_name_variables_of_the_parameters_cell(path):
    names = _parameter_names(_load(path))
    assert set(SMALL[path.stem]) | {"solve_exercises"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom_with_small_parameters(path, tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    params = dict(SMALL[path.stem], solve_exercises=True)
    if "out_dir" in _parameter_names(_load(path)):
        params["out_dir"] = str(tmp_path / "runs")
    out = tmp_path / path.name
    papermill.execute_notebook(
        str(path), str(out), parameters=params, kernel_name="python3", cwd=str(tmp_path), progress_bar=False
    )
    executed = _load(out)
    text = json.dumps(executed["cells"], ensure_ascii=False)
    assert "image/png" in text  # every notebook draws at least one figure
    assert "correct ✓" in text  # and its exercise checks ran with the filled-in answers


def test_every_notebook_has_a_row_in_the_readme_and_in_docs_notebooks():
    root = NOTEBOOKS_DIR.parent
    for page in ("README.md", "docs/notebooks.md"):
        text = (root / page).read_text()
        missing = [p.stem for p in NOTEBOOKS if f"| `{p.stem}` |" not in text]
        assert missing == [], f"{page} has no row for {missing}"
