"""`python -m murphy_lab.train` and `train(...)`: outputs written, a killed run resumes, bad configs fail early."""

from __future__ import annotations

import json
import shutil

import pytest

import murphy_lab.executor as executor_pkg
from murphy_lab.config import MurphyConfig
from murphy_lab.train import main, train


@pytest.fixture
def use_executor(monkeypatch, executor):
    """Make the CLI's default `Executor(**config.executor)` the session's executor (real one, or stand-in)."""
    monkeypatch.setattr(executor_pkg, "Executor", lambda **kw: executor, raising=False)
    return executor


def steps_in(path):
    return [json.loads(line)["step"] for line in (path / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_cli_smoke_run_writes_config_checkpoint_metrics_trees_and_final_model(tmp_path, use_executor):
    out = tmp_path / "run"
    final = main(["--profile", "smoke", "--output-dir", str(out), "--set", "max_steps=2", "save_steps=2"])
    assert (final / "config.json").exists() and (out / "checkpoint-2" / "optimizer.pt").exists()
    assert MurphyConfig.from_yaml(out / "config.yaml").model == str(out / "smoke-model")
    assert steps_in(out) == [1, 2] and len(list((out / "trees").glob("step_*.jsonl"))) == 2


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_weights_as_an_uninterrupted_run(tmp_path, tiny_model_path, executor):
    """Optimizer, scheduler and RNG state come back from the checkpoint: resuming mid-epoch is bit-exact."""
    from safetensors.torch import load_file

    cfg = MurphyConfig.for_profile("smoke", model=tiny_model_path, max_steps=4, save_steps=2,
                                   per_device_train_batch_size=4)  # one task per step: step 2 is mid-epoch
    whole = train(cfg, tmp_path / "whole", executor=executor)
    killed = tmp_path / "killed"  # the same run, killed after step 3 (checkpoint-2 on disk, step 3 logged)
    shutil.copytree(tmp_path / "whole", killed, ignore=shutil.ignore_patterns("checkpoint-4", "final"))
    (killed / "metrics.jsonl").write_text("".join((killed / "metrics.jsonl").read_text().splitlines(True)[:3]))
    resumed = train(cfg, killed, resume=True, executor=executor)
    a, b = load_file(whole / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert all(bool((a[k] == b[k]).all()) for k in a)
    assert steps_in(killed) == [1, 2, 3, 4]


def test_existing_run_is_not_overwritten_without_resume(tmp_path, tiny_model_path, executor):
    out = tmp_path / "run"
    cfg = MurphyConfig.for_profile("smoke", model=tiny_model_path, max_steps=1, save_steps=1)
    train(cfg, out, executor=executor)
    with pytest.raises(ValueError, match="resume"):
        train(cfg, out, executor=executor)


def test_invalid_config_fails_before_any_model_is_built(tmp_path, use_executor):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="beta"):
        main(["--profile", "smoke", "--output-dir", str(out), "--set", "beta=-1"])
    assert not out.exists()


def test_cli_reads_a_yaml_file_and_set_overrides_it(tmp_path, use_executor, tiny_model_path):
    model = tmp_path / "m"
    shutil.copytree(tiny_model_path, model)
    (tmp_path / "c.yaml").write_text(f"profile: smoke\nmode: grpo\nturns: 1\nmodel: {model}\nmax_steps: 1\n")
    main(["--config", str(tmp_path / "c.yaml"), "--output-dir", str(tmp_path / "run"), "--set", "g1=2",
          "per_device_train_batch_size=4"])
    resolved = MurphyConfig.from_yaml(tmp_path / "run" / "config.yaml")
    assert (resolved.mode, resolved.g1, resolved.model) == ("grpo", 2, str(model))
