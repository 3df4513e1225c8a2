"""Base and trained models are evaluated at the same generation settings unless told otherwise; a differing
setting is warned about and written into the eval output (eval.json, the run store's done.json)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from murphy_lab import experiments as X
from murphy_lab.config import MurphyConfig
from murphy_lab.eval_cli import GENERATION_DEFAULTS, generation_settings
from murphy_lab.eval_cli import main as eval_main

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples" / "own_tasks"


def test_a_plain_model_gets_a_training_runs_default_budget_not_512():
    used, differs = generation_settings({}, {}, "MurphyConfig defaults")
    assert (
        used["max_new_tokens"]
        == MurphyConfig().max_completion_length
        == GENERATION_DEFAULTS["max_new_tokens"]
    )
    assert used["temperature"] == MurphyConfig().temperature and differs == {}


def test_a_run_and_its_base_use_the_same_recorded_settings():
    recorded = {"max_new_tokens": 6, "temperature": 0.5, "chat": False}
    assert generation_settings({}, recorded, "run")[0] == recorded


def test_a_differing_flag_wins_is_warned_about_and_returned(caplog):
    with caplog.at_level(logging.WARNING):
        used, differs = generation_settings({"max_new_tokens": 512}, {"max_new_tokens": 1024}, "runs/q")
    assert used["max_new_tokens"] == 512 and differs == {"max_new_tokens": {"recorded": 1024, "used": 512}}
    assert "max_new_tokens=512 differs from runs/q's 1024" in caplog.text
    # same: quiet
    assert generation_settings({"max_new_tokens": 1024}, {"max_new_tokens": 1024}, "r")[1] == {}


@pytest.mark.slow
def test_like_evaluates_a_base_model_at_a_runs_settings_and_records_a_difference(tmp_path, tiny_model_path):
    run = tmp_path / "run"
    run.mkdir()
    MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_completion_length=6, temperature=0.5
    ).to_yaml(run / "config.yaml")
    common = [
        "--task-args",
        f"path={EXAMPLES / 'heldout.jsonl'}",
        "--n-tasks",
        "1",
        "--iters",
        "1",
        "--runs",
        "1",
    ]
    eval_main(["--model", tiny_model_path, "--like", str(run), "--output-dir", str(tmp_path / "a"), *common])
    meta = json.loads((tmp_path / "a" / "eval.json").read_text())
    assert (meta["max_new_tokens"], meta["temperature"], meta["settings_from"]) == (6, 0.5, str(run))
    assert meta["differs_from_recorded"] == {}
    eval_main(
        [
            "--model",
            tiny_model_path,
            "--like",
            str(run),
            "--max-new-tokens",
            "4",
            "--output-dir",
            str(tmp_path / "b"),
            *common,
        ]
    )
    meta = json.loads((tmp_path / "b" / "eval.json").read_text())
    assert meta["differs_from_recorded"] == {"max_new_tokens": {"recorded": 6, "used": 4}}


def test_like_needs_a_run_folder(tmp_path):
    with pytest.raises(ValueError, match="is not a training run folder"):
        eval_main(
            ["--model", "x", "--like", str(tmp_path), "--task-args", f"path={EXAMPLES / 'heldout.jsonl'}"]
        )


def test_the_run_store_records_the_settings_and_a_given_checkpoint_trained_at_others(
    tmp_path, tiny_model_path
):
    def evaluate(exp, model_dir, bench):
        import pandas as pd

        return pd.DataFrame({"k": list(exp.iters), "pass@1": 1.0})

    fns = dict(evaluate_fn=evaluate, base_model_fn=lambda e, c: "base", train_fn=None)
    run = tmp_path / "elsewhere"
    shutil.copytree(tiny_model_path, run / "final")
    MurphyConfig.for_profile("smoke", model=tiny_model_path, max_completion_length=32).to_yaml(
        run / "config.yaml"
    )
    exp = X.Experiment("smoke", "tiny", "murphy", iters=(1, 2))
    res = X.run_experiment(
        exp, tmp_path / "r", train=False, model_paths={"tiny/murphy/mars/seed0": str(run / "final")}, **fns
    )
    assert res.info["generation"]["max_new_tokens"] == 8  # the smoke profile's, for every model of its table
    assert res.info["generation_differs"] == {"max_new_tokens": {"recorded": 32, "used": 8}}
    base = X.run_experiment(X.Experiment("smoke", "tiny", "base", iters=(1, 2)), tmp_path / "r", **fns)
    assert base.info["generation"] == res.info["generation"] and "generation_differs" not in base.info
