"""Your own tasks end to end: `python -m murphy_lab.train --set tasks=jsonl task_args.path=...` trains on the example
file, `python -m murphy_lab.eval_cli` scores the run on the held-out file, a bad file stops both before any model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from murphy_lab.config import MurphyConfig
from murphy_lab.eval_cli import main as eval_main
from murphy_lab.tasks.taskfile import TaskFileError
from murphy_lab.train import config_from_args
from murphy_lab.train import main as train_main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples" / "own_tasks"
BAD = [{"task_id": "a", "prompt": "x"}, {"task_id": "b", "tests": ["assert f(1) == 1"]}]


def bad_file(tmp_path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in BAD))
    return path


@pytest.mark.slow
def test_train_on_the_example_file_then_evaluate_the_run_on_the_heldout_file(tmp_path, tiny_model_path):
    run = tmp_path / "run"
    train_main(
        [
            "--profile",
            "smoke",
            "--output-dir",
            str(run),
            "--set",
            f"model={tiny_model_path}",
            "tasks=jsonl",
            f"task_args.path={EXAMPLES / 'train.jsonl'}",
            "max_steps=1",
        ]
    )
    resolved = MurphyConfig.from_yaml(run / "config.yaml")
    assert (resolved.tasks, resolved.task_args) == ("jsonl", {"path": str(EXAMPLES / "train.jsonl")})
    trained_on = {json.loads(line)["task_id"] for line in (run / "trees" / "step_000001.jsonl").open()}
    assert trained_on <= {"add", "reverse_words", "mean", "echo_twice", "sum_numbers"} and trained_on

    df = eval_main(
        [
            "--model",
            str(run),
            "--task-args",
            f"path={EXAMPLES / 'heldout.jsonl'}",
            "--iters",
            "1",
            "2",
            "--runs",
            "1",
        ]
    )
    out = run / "eval"
    assert pd.read_csv(out / "table.csv")[["difficulty", "k"]].values.tolist() == [
        ["all", 1],
        ["all", 2],
        ["easy", 1],
        ["easy", 2],
        ["medium", 1],
        ["medium", 2],
    ]
    assert len((out / "transcripts.jsonl").read_text().splitlines()) == 5 and len(df) == 6
    meta = json.loads((out / "eval.json").read_text())
    assert meta["model"] == str(run / "final") and meta["max_new_tokens"] == resolved.max_completion_length
    assert (
        meta["task_batch"] == 16 and (out / "table.png").stat().st_size > 0 and (run / "curves.png").exists()
    )


def test_a_bad_task_file_stops_training_before_the_model_is_built(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(TaskFileError) as err:  # the smoke profile would build its model under run/smoke-model
        train_main(
            [
                "--profile",
                "smoke",
                "--output-dir",
                str(run),
                "--set",
                "tasks=jsonl",
                f"task_args.path={bad_file(tmp_path)}",
            ]
        )
    assert [(p.row, p.field) for p in err.value.problems] == [(1, "tests"), (2, "prompt")]
    assert not (run / "smoke-model").exists()


def test_a_bad_task_file_stops_evaluation_before_the_model_loads(tmp_path, tiny_model_path):
    with pytest.raises(TaskFileError, match="row 2 \\(task_id 'b'\\): field 'prompt'"):
        eval_main(["--model", tiny_model_path, "--task-args", f"path={bad_file(tmp_path)}"])
    with pytest.raises(ValueError) as err:  # a missing model too: both, at once
        eval_main(["--model", str(tmp_path / "no-such-model"), "--task-args", f"path={bad_file(tmp_path)}"])
    assert "no such folder" in str(err.value) and "row 2 (task_id 'b'): field 'prompt'" in str(err.value)


def test_the_train_command_prints_every_bad_row_and_exits_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "murphy_lab.train",
            "--output-dir",
            str(tmp_path / "run"),
            "--set",
            "tasks=jsonl",
            f"task_args.path={bad_file(tmp_path)}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2
    assert (
        "row 1 (task_id 'a'): field 'tests'" in proc.stderr
        and "row 2 (task_id 'b'): field 'prompt'" in proc.stderr
    )


def test_dotted_set_merges_into_a_mapping_field(tmp_path):
    (tmp_path / "c.yaml").write_text("profile: smoke\ntasks: jsonl\ntask_args: {check_reference: warn}\n")
    cfg = config_from_args(str(tmp_path / "c.yaml"), None, ["task_args.path=t.jsonl", "executor.timeout=3"])
    assert cfg.task_args == {"check_reference": "warn", "path": "t.jsonl"}
    assert cfg.executor == {"timeout": 3, "workers": 1}


def test_setting_another_task_loader_drops_the_config_files_task_args():
    """The paper config's `task_args: {n: 1000, seed: 0}` are KodCode's; they must not reach the jsonl loader."""
    cfg = config_from_args(
        str(ROOT / "reproduce/configs/qwen3-1.7b/murphy_mars.yaml"),
        None,
        ["tasks=jsonl", "task_args.path=train.jsonl"],
    )
    assert (cfg.tasks, cfg.task_args) == ("jsonl", {"path": "train.jsonl"})


@pytest.mark.parametrize(
    "item, message", [("nope.x=1", "unknown field 'nope'"), ("mode.x=1", "'mode' is not a mapping field")]
)
def test_dotted_set_on_a_field_that_is_not_a_mapping_is_an_error(item, message):
    with pytest.raises(ValueError, match=message):
        config_from_args(None, "smoke", [item])


def run_tasks_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "murphy_lab.tasks", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


GOOD_ROW = {"task_id": "ok", "prompt": "Write f(x) returning x.", "tests": ["assert f(1) == 1"]}


@pytest.mark.parametrize(
    "second_row, field, message",
    [
        (
            json.dumps({**GOOD_ROW, "task_id": "latin", "prompt": "PLACE"})
            .encode()
            .replace(b"PLACE", b"caf\xe9"),
            "prompt",
            "not UTF-8",
        ),
        (
            json.dumps({**GOOD_ROW, "task_id": "expr", "tests": ["f(1) == 2"]}).encode(),
            "tests",
            "cannot fail",
        ),
        (
            json.dumps({**GOOD_ROW, "task_id": "big", "prompt": "x" * 200_000}).encode(),
            "prompt",
            "limits.prompt",
        ),
    ],
)
def test_the_tasks_command_exits_2_with_one_line_naming_file_row_and_field(
    tmp_path, second_row, field, message
):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(GOOD_ROW).encode() + b"\n" + second_row + b"\n")
    proc = run_tasks_cli("jsonl", f"path={path}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: task file {str(path)!r}: row 2 (task_id '")
    assert f"field {field!r}" in line and message in line


def test_the_tasks_command_prints_the_counts_of_a_good_file():
    proc = run_tasks_cli("jsonl", f"path={EXAMPLES / 'train.jsonl'}")
    assert proc.returncode == 0 and json.loads(proc.stdout)["tasks"] == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["jsonl", "pth=x.jsonl"], "no argument 'pth' (did you mean 'path'?)"),
        (["jsnl", "path=x.jsonl"], "unknown task source 'jsnl' (did you mean 'jsonl'?)"),
        (["jsonl"], "needs ['path']"),
        ([], "usage"),
    ],
)
def test_the_tasks_command_names_a_bad_loader_or_argument_in_one_line(args, message):
    proc = run_tasks_cli(*args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_a_typo_in_a_task_args_key_stops_training_with_the_nearest_name(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(ValueError, match="no argument 'pth' \\(did you mean 'path'\\?\\)"):
        train_main(
            ["--profile", "smoke", "--output-dir", str(run), "--set", "tasks=jsonl", "task_args.pth=t.jsonl"]
        )
    assert not (run / "smoke-model").exists()


# --- evaluation: what --model may be, and the errors when it is none of them -----------------------------------
def unfinished_run(tmp_path, model) -> Path:
    """A run folder killed after checkpoint-3: config.yaml and a checkpoint (the model's files), no final/."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    cfg = MurphyConfig.for_profile("smoke", model=str(model), max_completion_length=6, temperature=0.5)
    cfg.to_yaml(run / "config.yaml")
    shutil.copytree(model, run / "checkpoint-3")
    (run / "checkpoint-3" / "trainer_state.json").write_text('{"global_step": 3}')
    return run


def test_evaluating_a_run_that_did_not_finish_names_its_last_checkpoint(tmp_path, tiny_model_path):
    run = unfinished_run(tmp_path, tiny_model_path)
    with pytest.raises(
        ValueError,
        match=r"is a training run with no final model \(it did not finish\); its last "
        r"checkpoint is .*checkpoint-3.*--model .*checkpoint-3",
    ):
        eval_main(["--model", str(run), "--task-args", f"path={EXAMPLES / 'heldout.jsonl'}"])


@pytest.mark.slow
def test_a_checkpoint_of_a_run_is_evaluated_with_the_runs_defaults(tmp_path, tiny_model_path):
    run = unfinished_run(tmp_path, tiny_model_path)
    eval_main(
        [
            "--model",
            str(run / "checkpoint-3"),
            "--task-args",
            f"path={EXAMPLES / 'heldout.jsonl'}",
            "--iters",
            "1",
            "--runs",
            "1",
        ]
    )
    meta = json.loads((run / "eval-checkpoint-3" / "eval.json").read_text())
    assert (meta["model"], meta["max_new_tokens"], meta["temperature"]) == (str(run / "checkpoint-3"), 6, 0.5)
    assert (run / "eval-checkpoint-3" / "table.png").exists()


@pytest.mark.parametrize("model", ["{tmp}/no-such-model", "{tmp}/runs/x/final", "./nope"])
def test_evaluating_a_path_that_does_not_exist_says_so_not_repo_id_must_be(tmp_path, model):
    with pytest.raises(ValueError, match="no such folder") as err:
        eval_main(
            ["--model", model.format(tmp=tmp_path), "--task-args", f"path={EXAMPLES / 'heldout.jsonl'}"]
        )
    assert "Repo id" not in str(err.value)


def test_a_relative_path_beside_its_folder_is_local_and_a_hub_id_is_not(tmp_path, monkeypatch):
    from murphy_lab.preflight import looks_local

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert looks_local("runs/own") and looks_local("./m") and looks_local("a/b/c")
    assert not looks_local("Qwen/Qwen3-1.7B") and not looks_local("gpt2")


def test_the_eval_command_prints_a_missing_model_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "murphy_lab.eval_cli",
            "--model",
            str(tmp_path / "runs" / "own"),
            "--task-args",
            f"path={EXAMPLES / 'heldout.jsonl'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("error: --model")
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_every_command_of_the_page_runs_as_written(tmp_path):
    """docs/own_tasks.md walked in a scratch checkout (`pagewalk`): the tiny model built, trained on the example file,
    evaluated on the held-out one; the paper recipe, a GPU step, ends in its one line per problem and writes nothing."""
    from pagewalk import Walk, commands

    lines = commands(ROOT / "docs" / "own_tasks.md")
    assert len(lines) == 4 and not [line for line in lines if "<" in line]
    walk = Walk(tmp_path)
    walk.run("source .venv/bin/activate")  # `python` is the one murphy_lab is installed in
    for line in lines:
        result = walk.run(line)
        assert "Traceback" not in result.output, f"{line}\n{result.output[-3000:]}"
        if "--config reproduce/configs" in line:
            errors = [ln for ln in result.output.splitlines() if ln.startswith("error: ")]
            assert result.returncode == 2 and [e.split(":")[1].strip() for e in errors] == [
                "GPUs",
                "vllm",
                "deepspeed",
            ]
            assert not (walk.dir / "runs" / "own-gpu").exists()
        else:
            assert result.returncode == 0, f"{line}\n{result.output[-3000:]}"
    assert (walk.dir / "runs" / "own" / "final" / "config.json").is_file()
    assert pd.read_csv(walk.dir / "runs" / "own" / "eval" / "table.csv")["k"].tolist() == [1, 3, 1, 3, 1, 3]
