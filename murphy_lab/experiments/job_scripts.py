"""The cluster array script of a plan (SLURM `sbatch`, or `bash` on one machine) and the command lines in it that
re-run one job by its key (`python -m murphy_lab.experiments.jobs script` writes it; the module docstring of
`murphy_lab.experiments.jobs` shows the whole flow)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from pathlib import Path

from murphy_lab.experiments.checkpoints import run_label
from murphy_lab.experiments.plan import Experiment, run_key, train_key
from murphy_lab.profiles import get_profile


def unique_key(exp: Experiment, experiments: Sequence[Experiment]) -> str:
    """The run's label when it names only this run in the plan, else its run_key."""
    label = run_label(exp)
    return label if sum(run_label(e) == label for e in experiments) == 1 else run_key(exp)


def _plan_args(a: argparse.Namespace, repo: Path | None = None) -> list[str]:
    """The options that define the plan, as a `run` command repeats them (its folders absolute under `repo`)."""
    folders = (
        [a.output_dir, a.cache_dir]
        if repo is None
        else [_absolute(a.output_dir, repo), _absolute(a.cache_dir, repo)]
    )
    args = [
        "--profile",
        a.profile,
        "--notebook",
        a.notebook,
        "--backend",
        a.backend,
        "--output-dir",
        folders[0],
        "--cache-dir",
        folders[1],
    ]
    for name in ("methods", "models", "seeds"):
        if getattr(a, name):
            args += [f"--{name}", *map(str, getattr(a, name))]
    if a.set:
        args += ["--set", *a.set]
    if a.knobs:
        args += ["--knobs", *a.knobs]
    if not a.train:
        args += ["--no-train"]
    for item in a.model_path:
        args += ["--model-path", item]
    return args


def run_command(a: argparse.Namespace, key: str) -> str:
    return shlex.join(["python", "-m", "murphy_lab.experiments.jobs", "run", *_plan_args(a), "--key", key])


def job_groups(experiments: Sequence[Experiment]) -> list[list[Experiment]]:
    """The array's tasks: the runs that share a checkpoint (one train_key: the same training evaluated under other
    scaffolds or benchmarks, the ablations' MaRS rows) go in one task, in plan order, so two nodes never train the
    same checkpoint folder at once; every other run (the base model's evaluations) is a task of its own."""
    groups: dict[object, list[Experiment]] = {}
    for i, exp in enumerate(experiments):
        groups.setdefault(train_key(exp) or i, []).append(exp)
    return list(groups.values())


def eval_script(path: str | Path) -> Path:
    """Where `jobs script --out PATH` writes the evaluation-only tasks: PATH with `-eval` before its suffix."""
    path = Path(path)
    return path.with_name(f"{path.stem}-eval{path.suffix}")


def _absolute(path: str | Path, repo: Path) -> str:
    path = Path(path).expanduser()
    return str(path if path.is_absolute() else repo / path)


def write_scripts(path: str | Path, experiments: Sequence[Experiment], a: argparse.Namespace) -> list[Path]:
    """The array scripts of a plan: `path` for the tasks that train (a whole node each: 8 GPUs for a GPU profile),
    `eval_script(path)` for the evaluation-only tasks (the base model's runs, every run with --no-train), which ask
    for `--eval-gpus` GPUs each (default 1: one model evaluated on one GPU). A script is written only when it has
    tasks. The log folder is made now, before any submission (SLURM opens `--output` before the job's first line
    runs), and every path in the scripts is absolute."""
    repo = Path(a.repo).expanduser().resolve()
    groups = job_groups(experiments)
    gpu_profile = get_profile(a.profile).needs_gpu
    trains = [g for g in groups if a.train and train_key(g[0])]
    evals = [g for g in groups if not (a.train and train_key(g[0]))]
    logs = Path(_absolute(a.logs, repo))
    logs.mkdir(parents=True, exist_ok=True)
    out = []
    for target, chosen, gpus, what in (
        (Path(path), trains, 8, "trains (and evaluates) one checkpoint"),
        (eval_script(path), evals, a.eval_gpus, "evaluates without training"),
    ):
        if chosen:
            node = (
                [
                    f"#SBATCH --gpus-per-node={gpus}",
                    "#SBATCH --exclusive" if gpus == 8 else "#SBATCH --cpus-per-task=8",
                ]
                if gpu_profile
                else ["#SBATCH --cpus-per-task=2"]
            )
            out.append(
                _write_script(
                    target,
                    chosen,
                    experiments,
                    a,
                    repo,
                    logs,
                    node,
                    f"each task {what} on {f'{gpus} GPU(s)' if gpu_profile else 'CPUs'}",
                )
            )
    return out


def _write_script(
    path: Path,
    groups: list[list[Experiment]],
    experiments: Sequence[Experiment],
    a: argparse.Namespace,
    repo: Path,
    logs: Path,
    node: list[str],
    what: str,
) -> Path:
    """One bash script that is a SLURM array (`#SBATCH --array=0-(N-1)`) and a plain loop: `bash it N` runs task
    N, `bash it` every task in turn. It activates the venv and `cd`s into the checkout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tasks = [" ".join(unique_key(e, experiments) for e in group) for group in groups]
    own = ["--eval-gpus", str(a.eval_gpus)] if a.eval_gpus != 1 else []
    written_by = shlex.join(
        ["python", "-m", "murphy_lab.experiments.jobs", "script", *_plan_args(a), "--out", a.out, *own]
    )
    lines = [
        "#!/usr/bin/env bash",
        f"#SBATCH --job-name=murphy-{a.profile}-{a.notebook}{'-eval' if path.stem.endswith('-eval') else ''}",
        f"#SBATCH --array=0-{len(tasks) - 1}",
        "#SBATCH --nodes=1",
        *node,
        f"#SBATCH --output={logs}/%x-%A_%a.out",
        f"# {sum(map(len, groups))} runs of reproduce/{a.notebook} on the {a.profile} profile in {len(tasks)} array tasks;",
        f"# {what}; the runs of one checkpoint (train_key) share a task. Written, with its twin, by:",
        f"# {written_by}",
        f"# Submit: sbatch {path}   (logs: {logs}/)   Or here: bash {path} N (task N), bash {path} (every task).",
        "set -euo pipefail",
        f"cd {shlex.quote(str(repo))}",
        f"source {shlex.quote(_absolute(a.venv, repo))}/bin/activate  # the project's venv: python, accelerate, trl",
        "TASKS=(",
        *[
            f"  {shlex.quote(t)}  # {i}: {', '.join(run_label(e) for e in g)}"
            for i, (t, g) in enumerate(zip(tasks, groups))
        ],
        ")",
        "run() {",
        "  for key in ${TASKS[$1]}; do",
        "    python -m murphy_lab.experiments.jobs run " + shlex.join(_plan_args(a, repo)) + ' --key "$key"',
        "  done",
        "}",
        'if [[ -n "${SLURM_ARRAY_TASK_ID:-}" ]]; then run "$SLURM_ARRAY_TASK_ID"',
        'elif [[ $# -ge 1 ]]; then run "$1"',
        'else for i in "${!TASKS[@]}"; do run "$i"; done',
        "fi",
    ]
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
    return path
