"""`python -m murphy_lab.train` and `train(...)`: outputs written, a killed run resumes, bad configs fail early."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import murphy_lab.executor as executor_pkg
from murphy_lab.cli import Refused
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import PROFILES
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.train import config_from_args, main, train


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

    # one task per step: step 2 is mid-epoch
    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=4, save_steps=2, per_device_train_batch_size=4
    )
    whole = train(cfg, tmp_path / "whole", executor=executor)
    killed = tmp_path / "killed"  # the same run, killed after step 3 (checkpoint-2 on disk, step 3 logged)
    shutil.copytree(tmp_path / "whole", killed, ignore=shutil.ignore_patterns("checkpoint-4", "final"))
    (killed / "metrics.jsonl").write_text(
        "".join((killed / "metrics.jsonl").read_text().splitlines(True)[:3])
    )
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
    main(
        [
            "--config",
            str(tmp_path / "c.yaml"),
            "--output-dir",
            str(tmp_path / "run"),
            "--set",
            "g1=2",
            "per_device_train_batch_size=4",
        ]
    )
    resolved = MurphyConfig.from_yaml(tmp_path / "run" / "config.yaml")
    assert (resolved.mode, resolved.g1, resolved.model) == ("grpo", 2, str(model))


# --- --resume continues the recorded run ---------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
TRAIN_FILE = ROOT / "docs" / "examples" / "own_tasks" / "train.jsonl"


def own_run_args(out, model, *extra):
    """A run with --set overrides a bare resume must keep: the model, the task file, max_steps, one task per step
    (`extra` FIELD=VALUE items replace these; a field is given once)."""
    sets = dict(
        item.split("=", 1)
        for item in (
            f"model={model}",
            "tasks=jsonl",
            f"task_args.path={TRAIN_FILE}",
            "max_steps=4",
            "save_steps=2",
            "per_device_train_batch_size=4",
            *extra,
        )
    )
    return [
        "--profile",
        "smoke",
        "--threads",
        "1",
        "--output-dir",
        str(out),
        "--set",
        *(f"{k}={v}" for k, v in sets.items()),
    ]


def metrics_of(out):
    return [
        {k: v for k, v in json.loads(line).items() if not k.startswith(("time/", "memory/"))}
        for line in (out / "metrics.jsonl").read_text().splitlines()
    ]


@pytest.mark.slow
def test_a_killed_run_with_overrides_resumed_bare_ends_where_the_uninterrupted_run_ends(
    tmp_path, tiny_model_path
):
    from safetensors.torch import load_file

    whole, killed = tmp_path / "whole", tmp_path / "killed"
    main(own_run_args(whole, tiny_model_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "murphy_lab.train", *own_run_args(killed, tiny_model_path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # SIGKILL as soon as checkpoint-2 is complete: mid-run, with steps 3-4 still to train
        deadline = time.monotonic() + 600
        while last_checkpoint(killed) is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not (killed / "final").exists(), "the run finished before it could be killed"
    recorded = (killed / "config.yaml").read_bytes()
    ckpt = last_checkpoint(killed).name

    # bare: no --profile, no --set
    resumed = main(["--output-dir", str(killed), "--resume", "--threads", "1"])

    assert (killed / "config.yaml").read_bytes() == recorded  # never rewritten by a resume
    cfg = MurphyConfig.from_yaml(killed / "config.yaml")
    assert (cfg.model, cfg.tasks, cfg.task_args, cfg.max_steps) == (
        tiny_model_path,
        "jsonl",
        {"path": str(TRAIN_FILE)},
        4,
    )
    assert [json.loads(line) for line in (killed / "resumes.jsonl").read_text().splitlines()] == [
        {"checkpoint": ckpt, "changes": {}}
    ]
    assert steps_in(killed) == [1, 2, 3, 4] and metrics_of(killed) == metrics_of(whole)
    a, b = load_file(whole / "final" / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)
    assert (killed / "curves.png").stat().st_size > 0


def test_a_resume_that_changes_the_recorded_run_is_refused_and_changes_nothing(tmp_path, tiny_model_path):
    out = tmp_path / "run"
    main(own_run_args(out, tiny_model_path, "max_steps=1", "save_steps=1"))
    before = {p.name: p.read_bytes() for p in (out / "config.yaml", out / "metrics.jsonl")}
    with pytest.raises(ValueError, match=r"records another run: learning_rate \(recorded 0.01, given 0.5\)"):
        main(["--output-dir", str(out), "--resume", "--set", "learning_rate=0.5"])
    with pytest.raises(ValueError, match=r"max_steps \(recorded 1, given 3\).*--allow-change max_steps"):
        main(["--output-dir", str(out), "--resume", "--set", "max_steps=3"])
    # the bare profile
    with pytest.raises(ValueError, match=r"tasks \(recorded 'jsonl', given ''\).*alone \(a resume"):
        main(["--profile", "smoke", "--output-dir", str(out), "--resume"])
    with pytest.raises(ValueError, match=r"\['learning_rate'\] cannot change"):
        main(
            [
                "--output-dir",
                str(out),
                "--resume",
                "--set",
                "learning_rate=0.5",
                "--allow-change",
                "learning_rate",
            ]
        )
    with pytest.raises(ValueError, match="only goes with --resume"):
        main(["--output-dir", str(tmp_path / "new"), "--allow-change", "max_steps"])
    assert {p.name: p.read_bytes() for p in (out / "config.yaml", out / "metrics.jsonl")} == before
    assert not (out / "resumes.jsonl").exists()


@pytest.mark.slow
def test_an_allowed_change_extends_the_run_and_later_resumes_keep_it(tmp_path, tiny_model_path):
    out = tmp_path / "run"
    main(own_run_args(out, tiny_model_path, "max_steps=2"))
    recorded = (out / "config.yaml").read_bytes()
    main([*own_run_args(out, tiny_model_path, "max_steps=3"), "--resume", "--allow-change", "max_steps"])
    assert steps_in(out) == [1, 2, 3] and (out / "config.yaml").read_bytes() == recorded
    assert json.loads((out / "resumes.jsonl").read_text())["changes"] == {
        "max_steps": {"recorded": 2, "given": 3}
    }
    # config.yaml + the allowed change: what a bare resume continues
    assert recorded_config(out).max_steps == 3


def test_tensorboard_logs_go_under_the_run_folders_runs_directory(
    tmp_path, tiny_model_path, executor, monkeypatch
):
    """What docs/training.md says: <output_dir>/runs/<date>_<host>/events.out.tfevents.* (TENSORBOARD_LOGGING_DIR
    moves them)."""
    pytest.importorskip("tensorboard")
    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=1, save_steps=1, report_to="tensorboard"
    )
    train(cfg, tmp_path / "run", executor=executor)
    assert list((tmp_path / "run" / "runs").glob("*/events.out.tfevents.*"))


# --- the command line: every problem at once, before anything heavy loads or anything is written -------------------
def refused_without_imports(argv: list[str], cwd: Path) -> tuple[list[str], list[str]]:
    """(the refusal's lines, the heavy modules imported) of `python -m murphy_lab.train ARGV`, in a fresh process."""
    code = (
        "import sys\nfrom murphy_lab import cli, train\ntry:\n    train.main(sys.argv[1:])\nexcept cli.Refused as e:\n"
        "    print('\\n'.join(e.problems))\nprint('IMPORTED', [m for m in ('torch', 'trl', 'transformers') if m in "
        "sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    *lines, imported = done.stdout.strip().splitlines()
    return lines, eval(imported.removeprefix("IMPORTED "))


def test_every_problem_of_the_command_line_is_one_line_before_any_heavy_import(tmp_path):
    """A profile typo, a wrong type, an unknown field and a field given twice: all listed, in ~1 s, before torch or
    TRL is imported (a profile typo cost ~18 s of imports before), and nothing is written."""
    lines, imported = refused_without_imports(
        [
            "--profile",
            "smok",
            "--output-dir",
            "runs/x",
            "--set",
            "max_steps=1.5",
            "g3=1",
            "--set",
            "g2=2",
            "--set",
            "g2=4",
        ],
        tmp_path,
    )
    assert lines == [
        "--set g2 is given twice ('2', then '4'); give it once",
        "max_steps: must be an integer, got 1.5",
        "--set g3: unknown field 'g3'",
        "--profile: unknown 'smok' (did you mean 'smoke'?); known: " + " | ".join(PROFILES),
    ]
    assert imported == [] and not list(tmp_path.iterdir())


def test_a_repeated_set_list_is_merged_not_replaced(capsys):
    """`--set model=./nosuch --set g2=2` checks both items (the last list alone used to win, silently: "ok")."""
    with pytest.raises(SystemExit) as err:
        main(["--check", "--profile", "smoke", "--set", "model=./nosuch", "--set", "g2=4"])
    assert (
        err.value.code == 2
        and "model: './nosuch' is a local path that does not exist" in capsys.readouterr().out
    )
    cfg = config_from_args(None, "smoke", ["g2=3", "model=m", "g1=6"])
    assert (cfg.g2, cfg.model, cfg.g1) == (3, "m", 6)


def test_a_wrong_type_is_refused_before_loading_and_a_resume_does_not_repeat_it(tmp_path, tiny_model_path):
    out = tmp_path / "run"
    lines, imported = refused_without_imports(
        [
            "--profile",
            "smoke",
            "--output-dir",
            str(out),
            "--set",
            f"model={tiny_model_path}",
            "max_steps=1.5",
        ],
        tmp_path,
    )
    assert lines == ["max_steps: must be an integer, got 1.5"] and imported == [] and not out.exists()
    main(own_run_args(out, tiny_model_path, "max_steps=1", "save_steps=1"))
    lines, imported = refused_without_imports(
        ["--output-dir", str(out), "--resume", "--set", "max_steps=1.5"], tmp_path
    )
    assert lines == ["max_steps: must be an integer, got 1.5"] and imported == []
    with pytest.raises(ValueError, match="max_steps: must be an integer, got 2.5"):  # a YAML file's value too
        MurphyConfig.for_profile("smoke", max_steps=2.5).validate()


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_a_bare_resume_of_a_folder_that_records_no_run_is_refused_in_one_line(tmp_path, folder):
    """A typo in --output-dir, or the empty folder a refused run left: refused, never the smoke default trained."""
    out = tmp_path / folder
    if folder == "empty":
        out.mkdir()
    with pytest.raises(Refused) as err:
        main(["--output-dir", str(out), "--resume"])
    assert err.value.problems == [
        f"--resume: {str(out)!r} records no run (no config.yaml); check the folder, or start "
        "a run there without --resume"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == (["empty"] if folder == "empty" else [])
    assert not out.exists() or not list(out.iterdir())


def test_a_refused_task_file_leaves_no_run_folder(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "prompt": "x"}\n')
    with pytest.raises(ValueError, match="field 'tests'"):
        main(
            [
                "--profile",
                "smoke",
                "--output-dir",
                str(tmp_path / "run"),
                "--set",
                "tasks=jsonl",
                f"task_args.path={bad}",
            ]
        )
    assert not (tmp_path / "run").exists()


def test_a_baseline_recipe_is_refused_naming_its_own_entry_point(capsys):
    for name, entry in (("mucode", "murphy_lab.baselines.mucode"), ("reveal", "murphy_lab.baselines.reveal")):
        recipe = f"reproduce/configs/qwen3-1.7b/{name}.yaml"
        with pytest.raises(Refused, match=f"is a recipe of {entry}: check or train it there") as err:
            main(["--check", "--config", str(ROOT / recipe), "--gpus", "8"])
        assert "unknown" not in str(err.value)
