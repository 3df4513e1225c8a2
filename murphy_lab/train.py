"""Train with MURPHY (or GRPO-MT / GRPO) from a config: `python -m murphy_lab.train` and `train(...)`.

    python -m murphy_lab.train --profile smoke --output-dir runs/smoke --threads 1
    python -m murphy_lab.train --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml --output-dir runs/q17-mars
    python -m murphy_lab.train --output-dir runs/q17-mars --resume                   # continue a killed run
    python -m murphy_lab.train --output-dir runs/q17-mars --resume --set max_steps=400 --allow-change max_steps
    python -m murphy_lab.train --profile smoke --set mode=grpo_mt g2=1                # override any field
    python -m murphy_lab.train --set model=./my-model tasks=jsonl task_args.path=train.jsonl  # your own tasks
    python -m murphy_lab.train --check --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml  # before the GPUs spin

This module only parses arguments; `train(config, output_dir, resume)` is murphy_lab.trainer.run's (importable from
here, loaded on first use), which writes config.yaml, checkpoint-N/, metrics.jsonl, trees/step_N.jsonl and final/ under the output
directory (that module's docstring says what each holds).

Every input is checked before anything heavy is imported or anything is written: the options, each `--set` field's
name (with its nearest one) and type against MurphyConfig (a repeated `--set` list is merged; a field given twice
with different values is refused), the profile's name, `--config`'s file, and a `--resume`'s run folder; then the
config is checked whole (`murphy_lab.preflight.check`, the same as `--check`) and the training tasks are loaded, so
a bad task file or an impossible config leaves no run folder behind. Every problem is one line (exit status 2).

`--check` validates a config without loading a weight or a dataset (`preflight.check(config)`, the same for notebooks): its
fields, its training data (a local path that exists, the bundled HumanEval, or a hub dataset that is cached here or
a reachable hub), its model (a local folder, or a hub id cached here or on a reachable hub), the GPUs the recipe's
layout needs (`--gpus N` checks for another machine), and vLLM / DeepSpeed where the config uses them. It prints one
line per problem and exits with status 2 when there is any (0 and "ok" otherwise). An offline node (HF_HUB_OFFLINE=1,
or no route to the hub within 3 s) is told so in one line that names the local-folder alternative.

`--resume` continues the run the output directory records: without `--config` / `--profile` its config.yaml is
the config (the `--set` items apply on top of it), and a folder that records no run is refused; any field that then
differs from the recorded run, or from a `--config` / `--profile` given again, is refused unless `--allow-change`
names it (`trainer.run.RESUME_SAFE` fields only). With `--config` / `--profile`, a folder with no checkpoint yet
starts the run (a launch script's `--resume` on its first start).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from murphy_lab import cli
from murphy_lab.config import MurphyConfig
from murphy_lab.fields import field_types, unknown_fields
from murphy_lab.preflight import check
from murphy_lab.profiles import PROFILES, config_tasks
from murphy_lab.runfolder import recorded_config

__all__ = ["accepted", "config_from_args", "main", "parser"]  # and `train`, loaded on first use (__getattr__)

OTHER_ENTRIES = {"mucode": "murphy_lab.baselines.mucode", "reveal": "murphy_lab.baselines.reveal"}
"""A recipe's `method:` (µCode's) or `reveal:` mapping -> the entry point that reads it (never this one)."""


def __getattr__(name: str) -> Any:
    """`from murphy_lab.train import train` (the trainer's run lifecycle) without importing TRL on every command."""
    if name == "train":
        from murphy_lab.trainer.run import train

        return train
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _file_field(path: str, name: str) -> Any:
    """The value of `name` in a YAML config file (None when absent or unreadable; from_yaml reports those)."""
    try:
        d = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return d.get(name) if isinstance(d, dict) else None


def config_from_args(
    config: str | None, profile: str | None, sets: list[str], recorded: MurphyConfig | None = None
) -> MurphyConfig:
    """The MurphyConfig that `--config`, `--profile` and `--set` describe (not yet validated; `MurphyConfig.layered`,
    the one way to a config); `recorded`: a run's recorded config, the base of a bare `--resume` instead of a file
    or a profile.

    The profile's presets come first, then the file, then `--set`; dotted items merge into mapping fields; setting
    `tasks` to another loader than the file's drops the file's `task_args` (arguments of the file's loader).
    `cli.Refused` lists every unknown field, wrong type or twice-given field of `sets` at once.
    """
    overrides, nested, problems = cli.sets(sets, field_types(MurphyConfig))
    cli.refuse(problems)
    if recorded is not None:
        return MurphyConfig.layered(recorded.profile, recorded.to_dict(), overrides, nested=nested)
    base = [config] if config else []
    return MurphyConfig.layered(profile or (None if config else "smoke"), *base, overrides, nested=nested)


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.train", __doc__)
    p.add_argument("--config", help="YAML file of MurphyConfig fields (reproduce/configs/...)")
    p.add_argument("--profile", help=f"run profile: {' | '.join(PROFILES)} (overrides the file's `profile:`)")
    p.add_argument("--output-dir", help="run folder (default: runs/<profile>-<mode>)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run recorded in --output-dir (its config.yaml) from its newest checkpoint",
    )
    p.add_argument(
        "--allow-change",
        nargs="+",
        action="extend",
        default=[],
        metavar="FIELD",
        help="with --resume: fields that may differ from the recorded run (max_steps, num_train_epochs, the "
        "save and log settings, report_to, executor: trainer.run.RESUME_SAFE)",
    )
    cli.add_set(
        p, "override config fields; dotted names reach into mappings (task_args.path=x); repeat freely"
    )
    p.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a busy laptop/CI machine)")
    p.add_argument(
        "--check",
        action="store_true",
        help="validate the config, data, model, GPUs and packages without loading anything; one line per "
        "problem, exit status 2 on any",
    )
    p.add_argument("--gpus", type=int, help="with --check: the GPUs of the machine the run will start on")
    return p


def accepted(a: Any) -> tuple[MurphyConfig, MurphyConfig | None]:
    """(the config the command line describes, the run --resume continues or None), once the options are accepted;
    `cli.Refused` lists every problem of the options at once. Reads files only."""
    _, _, problems = cli.sets(a.set, field_types(MurphyConfig))
    problems.append(cli.choice(a.profile, PROFILES, "--profile"))
    problems += [f"--allow-change: {line}" for line in unknown_fields(MurphyConfig, a.allow_change)]
    if a.allow_change and not a.resume:
        problems.append("--allow-change only goes with --resume (a new run takes any --set)")
    if a.config and not Path(a.config).is_file():
        problems.append(f"--config: no such file {a.config!r}")
    elif a.config:
        entry = OTHER_ENTRIES.get(_file_field(a.config, "method")) or (
            OTHER_ENTRIES["reveal"] if _file_field(a.config, "reveal") is not None else None
        )
        if entry:  # a baseline's recipe: its fields are not all MurphyConfig's
            problems.append(
                f"--config {a.config!r} is a recipe of {entry}: check or train it there "
                f"(python -m {entry} --check --config {a.config})"
            )
    if a.gpus is not None and not a.check:
        problems.append("--gpus only goes with --check (a run uses this machine's GPUs)")
    recorded = None
    if a.resume and not a.check:
        if not a.output_dir:
            problems.append("--resume needs --output-dir, the run folder to continue")
        else:
            recorded = recorded_config(a.output_dir)
            if recorded is None and not (a.config or a.profile):
                problems.append(
                    f"--resume: {a.output_dir!r} records no run (no config.yaml); check the folder, or "
                    "start a run there without --resume"
                )
    cli.refuse(problems)
    bare = recorded if recorded is not None and not (a.config or a.profile) else None  # the run's own config
    return config_from_args(a.config, a.profile, a.set, recorded=bare), recorded


def main(argv: list[str] | None = None) -> Path | None:
    a = parser().parse(argv)
    config, _ = accepted(a)
    if a.check:
        cli.report_problems(
            check(config, a.gpus),
            f"ok: {a.config or config.profile} passes the checks (config, data, model, GPUs, packages)",
        )
        return None
    cli.refuse(check(config))  # this machine: every problem of the config, its model, data and GPUs at once
    output_dir = a.output_dir or f"runs/{config.profile}-{config.mode}"
    if a.threads:
        import torch  # heavy: once the inputs are accepted

        torch.set_num_threads(a.threads)
    from murphy_lab.trainer.run import train

    tasks = config_tasks(config)  # before the run folder: a bad task file stops here, with nothing written
    final = train(config, output_dir, resume=a.resume, allow_changes=a.allow_change, tasks=tasks)
    print(f"final model: {final}")
    return final


if __name__ == "__main__":
    cli.run(main)
