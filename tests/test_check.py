"""`python -m murphy_lab.train --check` / `murphy_lab.preflight.check`: every problem of a recipe in one line each,
before a weight or a row loads, fast on an offline node."""

from __future__ import annotations

import dataclasses
import importlib.util
import socket

import pytest

from murphy_lab import eval_cli, preflight
from murphy_lab import train as T
from murphy_lab.cli import Refused
from murphy_lab.config import MurphyConfig
from murphy_lab.policy import REAL_MODEL
from murphy_lab.preflight import check

RECIPE = "reproduce/configs/qwen3-1.7b/murphy_mars.yaml"


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """An offline node with empty caches."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setattr(preflight, "_hub_cache", lambda: tmp_path / "hub")

    # a download attempt (or a retry loop) fails the test at once, under any load
    def no_network(*args, **kwargs):
        raise AssertionError(f"a network connection was attempted: {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)


def smoke(**kw):
    return MurphyConfig.for_profile("smoke", **kw)


def one_line(problems, start):
    hits = [p for p in problems if p.startswith(start)]
    assert len(hits) == 1 and "\n" not in hits[0], problems
    return hits[0]


def test_a_good_config_has_no_problem(offline):
    assert check(smoke()) == []


def test_a_bad_field_is_one_line(offline):
    assert "must be an integer >= 2" in one_line(check(smoke(g1=1)), "g1:")


def test_a_missing_local_data_file_is_one_line(offline, tmp_path):
    line = one_line(
        check(smoke(tasks="kodcode", task_args={"source": str(tmp_path / "nope.jsonl")})), "tasks:"
    )
    assert "does not exist" in line


def test_an_unknown_loader_is_one_line(offline):
    assert "unknown task source 'kodkode' (did you mean 'kodcode'?)" in one_line(
        check(smoke(tasks="kodkode")), "tasks:"
    )


def test_a_task_argument_the_loader_does_not_take_or_needs_is_one_line(offline):
    line = one_line(check(smoke(tasks="toy", task_args={"splt": "test"})), "task_args:")
    assert "the 'toy' loader has no argument 'splt' (did you mean 'split'?)" in line
    assert "the 'jsonl' loader needs ['path']" in one_line(check(smoke(tasks="jsonl")), "task_args:")


def test_an_offline_hub_dataset_is_one_fast_line_naming_the_data_step(offline):
    # no connection tried (fixture)
    line = one_line(check(smoke(tasks="kodcode", task_args={"n": 10})), "tasks:")
    assert (
        "HF_HUB_OFFLINE=1" in line and "murphy_lab.experiments.data" in line and "task_args.source=" in line
    )


def test_an_offline_hub_model_id_is_one_line_naming_a_local_folder(offline):
    line = one_line(check(smoke(model="Qwen/Qwen3-1.7B")), "model:")
    assert "not cached" in line and "set model=models/Qwen3-1.7B" in line


def test_a_cached_hub_model_and_dataset_pass_offline(offline, tmp_path):
    (tmp_path / "hub" / "models--Qwen--Qwen3-1.7B" / "snapshots" / "abc").mkdir(parents=True)
    (tmp_path / "datasets" / "KodCode___KodCode-V1").mkdir(parents=True)
    assert check(smoke(model="Qwen/Qwen3-1.7B", tasks="kodcode")) == []


def test_a_local_model_folder_without_config_is_one_line(offline, tmp_path):
    (tmp_path / "m").mkdir()
    assert "no config.json" in one_line(check(smoke(model=str(tmp_path / "m"))), "model:")
    assert "does not exist" in one_line(check(smoke(model="./no-such-model")), "model:")


def test_too_few_gpus_for_the_layout_is_one_line(offline):
    cfg = dataclasses.replace(smoke(), use_vllm=True, vllm_mode="server")
    assert "at least 3" in one_line(check(cfg, gpus=2), "GPUs:")
    assert not [
        p for p in check(dataclasses.replace(cfg, vllm_mode="colocate"), gpus=1) if p.startswith("GPUs")
    ]


def test_vllm_and_deepspeed_not_importable_are_one_line_each(offline, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n in ("vllm", "deepspeed") else real(n, *a)
    )
    problems = check(dataclasses.replace(smoke(), use_vllm=True, vllm_mode="colocate"), gpus=1)
    assert "pip install -e '.[gpu]'" in one_line(problems, "vllm:")
    one_line(problems, "deepspeed:")


def test_cli_check_prints_one_line_per_problem_and_exits_2(offline, capsys):
    with pytest.raises(SystemExit) as err:
        T.main(["--check", "--config", RECIPE, "--gpus", "8", "--set", "g1=1"])
    assert err.value.code == 2
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out if line.split(":")[0] in ("g1", "model", "tasks")] == [
        "g1",
        "model",
        "tasks",
    ]
    assert not [line for line in out if line.startswith("GPUs")]  # 8 GPUs fit the recipe


def test_cli_check_ok_exits_0(offline, capsys):
    assert T.main(["--check", "--profile", "smoke"]) is None
    assert capsys.readouterr().out.startswith("ok:")


def test_help_lists_every_profile(capsys):
    with pytest.raises(SystemExit):
        T.main(["--help"])
    assert "smoke | toy | toy-full | paper" in capsys.readouterr().out


def test_training_on_an_offline_node_fails_at_once_in_one_line_per_problem(offline, tmp_path):
    with pytest.raises(Refused, match="^model: 'Qwen/Qwen3-1.7B' is a hub id that is not cached") as err:
        T.main(
            [
                "--profile",
                "smoke",
                "--output-dir",
                str(tmp_path / "r"),
                "--set",
                "model=Qwen/Qwen3-1.7B",
                "tasks=kodcode",
            ]
        )
    assert [p.split(":")[0] for p in err.value.problems] == ["model", "tasks"]
    assert "tasks: 'kodcode' reads the hub dataset" in err.value.problems[1]
    assert not (tmp_path / "r").exists()  # nothing started, no connection tried (fixture)


def test_evaluating_a_hub_id_on_an_offline_node_is_one_fast_line(offline):
    with pytest.raises(ValueError, match="^--model: 'Qwen/Qwen3-1.7B' is a hub id that is not cached") as err:
        eval_cli.policy_of("Qwen/Qwen3-1.7B")
    assert "\n" not in str(err.value)  # and no connection tried (fixture)
    assert preflight.model_problem(REAL_MODEL) is None  # the PyPI package's model is local


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_report_to_wandb_without_the_extra_names_it(offline):
    line = one_line(check(smoke(report_to="wandb")), "report_to:")
    assert "pip install -e '.[wandb]'" in line


def test_a_local_model_folder_that_a_failed_download_never_made_is_not_called_a_hub_id(offline):
    line = one_line(check(smoke(model="models/Qwen3-1.7B")), "model:")
    assert "is no folder here (no models/ folder)" in line and "hf download models/" not in line
