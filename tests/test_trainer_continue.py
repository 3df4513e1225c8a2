"""A run of hours killed midway continues where it was: inside `trainer.run.continuing_interrupted` (the experiment
store trains through it), `train(config, output_dir)` resumes the interrupted run `output_dir` records, to the
state an uninterrupted run reaches (weights and logged metrics); the store keeps such a folder instead of starting
it over (the real-cpu profile's runs: docs/real_model.md)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

from murphy_lab.config import MurphyConfig
from murphy_lab.trainer.run import _CONTINUING, continuing_interrupted, train

TIMES = ("time/", "memory/", "trl/learning_rate")  # wall / CPU times and memory differ between any two runs


def weights(final):
    files = sorted(final.glob("*.safetensors"))
    return {k: v for f in files for k, v in load_file(f).items()}


def logged(run):
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(TIMES)} for r in rows]


@pytest.mark.slow
def test_a_killed_run_continues_to_the_uninterrupted_runs_state(tmp_path, tiny_model_path, executor):
    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=3, save_steps=1, per_device_train_batch_size=4
    )
    train(cfg, tmp_path / "whole", executor=executor)
    # killed during step 3: checkpoints 1 and 2 on disk, metrics logged past step 2
    killed = tmp_path / "killed"
    shutil.copytree(tmp_path / "whole", killed, ignore=shutil.ignore_patterns("checkpoint-3", "final"))
    with pytest.raises(ValueError, match="already holds a run"):  # outside the context: refused, as before
        train(cfg, killed, executor=executor)
    with continuing_interrupted():
        train(cfg, killed, executor=executor)
    assert [json.loads(x)["checkpoint"] for x in (killed / "resumes.jsonl").read_text().splitlines()] == [
        "checkpoint-2"
    ]
    whole, resumed = weights(tmp_path / "whole" / "final"), weights(killed / "final")
    assert whole.keys() == resumed.keys() and all(torch.equal(whole[k], resumed[k]) for k in whole)
    assert logged(killed) == logged(tmp_path / "whole")


def test_the_store_keeps_an_interrupted_run_and_trains_it_inside_the_context(tmp_path):
    from murphy_lab.experiments.plan import Experiment, train_key
    from murphy_lab.experiments.store import run_experiment

    exp = Experiment("smoke", "tiny", "murphy", benchmarks=("toy",), iters=(1,), runs=1, n_eval_tasks=2)
    ckpt = tmp_path / "cache" / "checkpoints" / train_key(exp)
    (ckpt / "checkpoint-1").mkdir(parents=True)
    # a complete checkpoint of an interrupted run
    (ckpt / "checkpoint-1" / "trainer_state.json").write_text("{}")
    (ckpt / "partial.txt").write_text("written before the kill")
    seen = {}

    def train_fn(e, base, out):
        seen.update(kept=(out / "partial.txt").is_file(), continuing=_CONTINUING.get())
        (out / "final").mkdir()
        return out / "final"

    def evaluate_fn(e, model_dir, bench):
        return pd.DataFrame({"k": [1], "pass@1": [50.0], "std": [0.0], "n_tasks": [2]})

    run_experiment(
        exp,
        tmp_path / "results",
        tmp_path / "cache",
        train_fn=train_fn,
        evaluate_fn=evaluate_fn,
        base_model_fn=lambda e, c: "base",
    )
    assert seen == {"kept": True, "continuing": True} and _CONTINUING.get() is False
    # a folder without a complete checkpoint (killed before its first one) still starts clean
    exp2 = Experiment(
        "smoke", "tiny", "murphy", seed=1, benchmarks=("toy",), iters=(1,), runs=1, n_eval_tasks=2
    )
    ckpt2 = tmp_path / "cache" / "checkpoints" / train_key(exp2)
    ckpt2.mkdir(parents=True)
    (ckpt2 / "partial.txt").write_text("no checkpoint yet")
    run_experiment(
        exp2,
        tmp_path / "results",
        tmp_path / "cache",
        train_fn=train_fn,
        evaluate_fn=evaluate_fn,
        base_model_fn=lambda e, c: "base",
    )
    assert seen["kept"] is False
