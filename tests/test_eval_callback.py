"""Iter-k evaluation on held-out tasks during training (murphy_lab.trainer.eval_callback): logged into the step's
metrics.jsonl line, every eval_every steps and after the last, without changing what the run trains."""

from __future__ import annotations

import json

import pytest

from murphy_lab.config import MurphyConfig
from murphy_lab.smoke import smoke_tasks
from murphy_lab.train import main, train
from murphy_lab.trainer.core import MurphyTrainer
from murphy_lab.trainer.eval_callback import IterKEval, evaluating


def lines(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def cfg(model, **kw):
    return MurphyConfig.for_profile(
        "smoke", model=model, max_steps=3, save_steps=10, eval_tasks="smoke", eval_iters=[1, 2], **kw
    )


def test_eval_fields_are_validated():
    with pytest.raises(ValueError, match="eval_tasks: must name the held-out tasks"):
        MurphyConfig.for_profile("smoke", eval_every=2).validate()
    with pytest.raises(ValueError, match="eval_every: must be an integer >= 0"):
        MurphyConfig.for_profile("smoke", eval_every=-1).validate()


@pytest.mark.slow
def test_iter_k_is_logged_every_eval_every_steps_and_after_the_last(tmp_path, tiny_model_path, executor):
    config = cfg(tiny_model_path, eval_every=2)
    cls = evaluating(MurphyTrainer, IterKEval(config, tasks=smoke_tasks()[:2]))
    train(config, tmp_path / "with", executor=executor, trainer_cls=cls)
    got = lines(tmp_path / "with")
    assert [line["step"] for line in got] == [1, 2, 3]  # still one line per step
    assert [("eval/iter1_pass@1" in line, "eval/iter2_pass@1" in line) for line in got] == [
        (False, False),
        (True, True),
        (True, True),
    ]
    assert got[1]["eval/n_tasks"] == 2 and 0.0 <= got[1]["eval/iter2_pass@1"] <= 100.0
    assert got[1]["eval/iter1_pass@1"] <= got[1]["eval/iter2_pass@1"]  # more attempts never solve fewer
    # the evaluation does not change what is trained: the same rewards as a run without it
    train(cfg(tiny_model_path), tmp_path / "without", executor=executor)
    keys = ("reward/turn1_mean", "trajectories/total", "trl/loss")
    assert [[line.get(k) for k in keys] for line in got] == [
        [line.get(k) for k in keys] for line in lines(tmp_path / "without")
    ]


@pytest.mark.slow
def test_the_cli_wires_it_from_the_config(tmp_path, tiny_model_path, monkeypatch, executor):
    import murphy_lab.executor as executor_pkg

    monkeypatch.setattr(executor_pkg, "Executor", lambda **kw: executor, raising=False)
    main(
        [
            "--profile",
            "smoke",
            "--output-dir",
            str(tmp_path / "run"),
            "--set",
            f"model={tiny_model_path}",
            "max_steps=2",
            "save_steps=10",
            "eval_every=2",
            "eval_tasks=smoke",
            "eval_n_tasks=1",
            "eval_iters=[1]",
        ]
    )
    assert "eval/iter1_pass@1" in lines(tmp_path / "run")[-1]


@pytest.mark.slow
def test_a_library_caller_of_train_gets_it_from_the_config_alone(tmp_path, tiny_model_path, executor):
    # the config field means the same for `python -m murphy_lab.train`, the experiments and a direct train(...) call
    config = cfg(tiny_model_path, eval_every=2, eval_n_tasks=1)
    train(config, tmp_path / "run", executor=executor)
    assert "eval/iter1_pass@1" in lines(tmp_path / "run")[-1]
