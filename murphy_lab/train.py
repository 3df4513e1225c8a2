"""Train with MURPHY (or GRPO-MT / GRPO) from a config: `python -m murphy_lab.train` and `train(...)`.

    python -m murphy_lab.train --profile smoke --output-dir runs/smoke --threads 1
    python -m murphy_lab.train --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml --output-dir runs/q17-mars
    python -m murphy_lab.train --output-dir runs/q17-mars --resume                   # continue a killed run
    python -m murphy_lab.train --output-dir runs/q17-mars --resume --set max_steps=400 --allow-change max_steps
    python -m murphy_lab.train --profile smoke --set mode=grpo_mt g2=1                # override any field
    python -m murphy_lab.train --set model=./my-model tasks=jsonl task_args.path=train.jsonl  # your own tasks

This module only parses arguments; `train(config, output_dir, resume)` is murphy_lab.trainer.run's (re-exported
here), which writes config.yaml, checkpoint-N/, metrics.jsonl, trees/step_N.jsonl and final/ under the output
directory (that module's docstring says what each holds).

`--resume` continues the run the output directory records: without `--config` / `--profile` its config.yaml is
the config (the `--set` items apply on top of it); any field that then differs from the recorded run, or from a
`--config` / `--profile` given again, is refused unless `--allow-change` names it (`RESUME_SAFE` fields only).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import torch
import yaml

from murphy_lab import cli
from murphy_lab.config import MurphyConfig
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.suggest import did_you_mean
from murphy_lab.trainer.run import RESUME_SAFE, train  # the library (re-exported here)

__all__ = ["apply_nested", "config_from_args", "last_checkpoint", "main", "parse_sets", "train", "with_sets"]


def parse_sets(items: list[str]) -> tuple[dict, dict]:
    """`--set` items as (plain field overrides, dotted ones nested: ``task_args.path=x`` -> {task_args: {path: x}})."""
    plain: dict = {}
    nested: dict = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects field=value, got {item!r}")
        key, value = (part.strip() for part in item.split("=", 1))
        *parents, leaf = key.split(".")
        if not all(parents + [leaf]):
            raise ValueError(f"--set: bad field name {key!r}")
        target = nested if parents else plain
        for name in parents:
            target = target.setdefault(name, {})
            if not isinstance(target, dict):
                raise ValueError(f"--set {key}: {name!r} was already set to a value, not a mapping")
        target[leaf] = yaml.safe_load(value)
    return plain, nested


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def apply_nested(config: MurphyConfig, nested: dict) -> MurphyConfig:
    """Merge dotted `--set` values into the config's mapping fields (task_args, executor, trl, ...)."""
    names = {f.name for f in dataclasses.fields(config)}
    for name, values in nested.items():
        if name not in names:
            raise ValueError(f"--set {name}.*: unknown config field {name!r}{did_you_mean(name, names)}")
        current = getattr(config, name)
        if not isinstance(current, dict):
            raise ValueError(f"--set {name}.*: {name!r} is not a mapping field (got {current!r})")
        config = dataclasses.replace(config, **{name: _merge(current, values)})
    return config


def _file_field(path: str, name: str) -> Any:
    """The value of `name` in a YAML config file (None when absent or unreadable; from_yaml reports those)."""
    try:
        d = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return d.get(name) if isinstance(d, dict) else None


def config_from_args(config: str | None, profile: str | None, sets: list[str]) -> MurphyConfig:
    """The MurphyConfig that `--config`, `--profile` and `--set` describe (train() validates it).

    The file's presets come first, then `--set`; dotted items merge into mapping fields. Setting `tasks` to another
    loader than the file's drops the file's `task_args` (they are arguments of the file's loader).
    """
    overrides, nested = parse_sets(sets)
    if config and "tasks" in overrides and "task_args" not in overrides:
        if _file_field(config, "tasks") != overrides["tasks"]:
            overrides["task_args"] = {}
    if config:
        cfg = MurphyConfig.from_yaml(config, profile=profile, **overrides)
    else:
        cfg = MurphyConfig.for_profile(profile or "smoke", **overrides)
    return apply_nested(cfg, nested)


def with_sets(config: MurphyConfig, sets: list[str]) -> MurphyConfig:
    """`config` with `--set` items applied on top (a resumed run's recorded config, for instance)."""
    plain, nested = parse_sets(sets)
    return apply_nested(MurphyConfig.from_dict({**config.to_dict(), **plain}), nested)


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(prog="python -m murphy_lab.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML file of MurphyConfig fields (reproduce/configs/...)")
    p.add_argument("--profile", help="run profile: smoke | toy | paper (overrides the file's `profile:`)")
    p.add_argument("--output-dir", help="run folder (default: runs/<profile>-<mode>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run recorded in --output-dir (its config.yaml) from its newest checkpoint")
    p.add_argument("--allow-change", nargs="+", default=[], metavar="FIELD",
                   help=f"with --resume: fields that may differ from the recorded run ({', '.join(RESUME_SAFE)})")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                   help="override config fields; dotted names reach into mappings (task_args.path=x)")
    p.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a busy laptop/CI machine)")
    a = p.parse_args(argv)
    if a.allow_change and not a.resume:
        raise ValueError("--allow-change only goes with --resume (a new run takes any --set)")
    if a.threads:
        torch.set_num_threads(a.threads)
    config = config_from_args(a.config, a.profile, a.set)
    output_dir = a.output_dir or f"runs/{config.profile}-{config.mode}"
    recorded = recorded_config(output_dir) if a.resume else None
    if recorded is not None and not (a.config or a.profile):  # a bare resume: the run's own config, then --set
        config = with_sets(recorded, a.set)
    final = train(config, output_dir, resume=a.resume, allow_changes=a.allow_change)
    print(f"final model: {final}")
    return final


if __name__ == "__main__":
    cli.run(main)
