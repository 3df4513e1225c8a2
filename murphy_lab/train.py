"""Train with MURPHY (or GRPO-MT / GRPO) from a config: `python -m murphy_lab.train` and `train(...)`.

    python -m murphy_lab.train --profile smoke --output-dir runs/smoke --threads 1
    python -m murphy_lab.train --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml --output-dir runs/q17-mars
    python -m murphy_lab.train --config ... --output-dir runs/q17-mars --resume       # continue a killed run
    python -m murphy_lab.train --profile smoke --set mode=grpo_mt g2=1                # override any field
    python -m murphy_lab.train --set model=./my-model tasks=jsonl task_args.path=train.jsonl  # your own tasks

Writes under the output directory:
    config.yaml          the resolved MurphyConfig (model path filled in)
    checkpoint-N/        TRL checkpoints (model, optimizer, scheduler, RNG state, trainer_state.json)
    metrics.jsonl        one line per optimizer step (docs/training.md lists every key)
    trees/step_N.jsonl   the step's rollout trees, one JSON line each (murphy_lab.tree.load_trees reads them)
    final/               the trained model and tokenizer (returned by `train`)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from murphy_lab.config import MurphyConfig, resolve

log = logging.getLogger(__name__)


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest `checkpoint-N` folder under `output_dir`, or None."""
    ckpts = [p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(ckpts, key=lambda p: int(p.name.split("-")[-1])) if ckpts else None


def _truncate_metrics(output_dir: Path, step: int) -> None:
    """Drop metrics.jsonl lines written after `step` (a killed run may have logged past its last checkpoint)."""
    path = output_dir / "metrics.jsonl"
    if path.exists():
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and json.loads(ln).get("step", 0) <= step]
        path.write_text("".join(ln + "\n" for ln in lines))


def train(
    config: MurphyConfig | str | Path,
    output_dir: str | Path,
    resume: bool = False,
    *,
    executor: Any = None,
    tasks: list | None = None,
    callbacks: list | None = None,
) -> Path:
    """Run one training job and return the folder of the final model.

    Args:
        config: a MurphyConfig, or the path of a YAML file (MurphyConfig.from_yaml).
        output_dir: where config.yaml, checkpoints, metrics.jsonl, trees/ and final/ go.
        resume: continue from the newest checkpoint in `output_dir` (optimizer, scheduler and RNG state restored).
        executor: an object with `run_many(jobs)`; default murphy_lab.executor.Executor(**config.executor).
        tasks: Task list to train on instead of the config's source (notebooks, tests).
        callbacks: extra transformers TrainerCallbacks.
    """
    from murphy_lab.trainer import MurphyTrainer

    if not isinstance(config, MurphyConfig):
        config = MurphyConfig.from_yaml(config)
    config.validate()  # before anything is built or loaded
    output_dir = Path(output_dir)
    checkpoint = last_checkpoint(output_dir) if output_dir.exists() else None
    if checkpoint is not None and not resume:
        raise ValueError(f"output_dir {str(output_dir)!r} already holds a run ({checkpoint.name}); "
                         "pass resume=True (--resume) or choose a new directory")
    if resume and checkpoint is None:
        log.warning("resume: no checkpoint under %s, starting from scratch", output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    main_process = int(os.environ.get("RANK", "0")) == 0  # under `accelerate launch` every rank runs this function
    if main_process and checkpoint is None:
        (output_dir / "metrics.jsonl").unlink(missing_ok=True)
    elif main_process:
        step = json.loads((checkpoint / "trainer_state.json").read_text())["global_step"]
        _truncate_metrics(output_dir, step)

    if tasks is None:
        model, tasks = resolve(config, output_dir)
    else:  # the caller brings its own tasks; the model still comes from the config or the profile
        model = config.model or resolve(config, output_dir)[0]
    resolved = dataclasses.replace(config, model=str(model))
    if main_process:
        resolved.to_yaml(output_dir / "config.yaml")
    own_executor = executor is None
    if own_executor:
        from murphy_lab.executor import Executor

        executor = Executor(**config.executor)
    try:
        trainer = MurphyTrainer(model=str(model), args=config.to_grpo_config(output_dir), murphy=resolved,
                                tasks=tasks, executor=executor, callbacks=callbacks)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        if own_executor and hasattr(executor, "close"):
            executor.close()
    final = output_dir / "final"
    trainer.save_model(str(final))
    return final


def _parse_sets(items: list[str]) -> tuple[dict, dict]:
    """`--set` items as (plain field overrides, dotted ones nested: ``task_args.path=x`` -> {task_args: {path: x}})."""
    import yaml

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


def _apply_nested(config: MurphyConfig, nested: dict) -> MurphyConfig:
    """Merge dotted `--set` values into the config's mapping fields (task_args, executor, trl, ...)."""
    names = {f.name for f in dataclasses.fields(config)}
    for name, values in nested.items():
        if name not in names:
            raise ValueError(f"--set {name}.*: unknown config field {name!r}")
        current = getattr(config, name)
        if not isinstance(current, dict):
            raise ValueError(f"--set {name}.*: {name!r} is not a mapping field (got {current!r})")
        config = dataclasses.replace(config, **{name: _merge(current, values)})
    return config


def _file_field(path: str, name: str) -> Any:
    """The value of `name` in a YAML config file (None when absent or unreadable; from_yaml reports those)."""
    import yaml

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
    overrides, nested = _parse_sets(sets)
    if config and "tasks" in overrides and "task_args" not in overrides:
        if _file_field(config, "tasks") != overrides["tasks"]:
            overrides["task_args"] = {}
    if config:
        cfg = MurphyConfig.from_yaml(config, profile=profile, **overrides)
    else:
        cfg = MurphyConfig.for_profile(profile or "smoke", **overrides)
    return _apply_nested(cfg, nested)


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(prog="python -m murphy_lab.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML file of MurphyConfig fields (reproduce/configs/...)")
    p.add_argument("--profile", help="run profile: smoke | toy | paper (overrides the file's `profile:`)")
    p.add_argument("--output-dir", help="run folder (default: runs/<profile>-<mode>)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --output-dir")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                   help="override config fields; dotted names reach into mappings (task_args.path=x)")
    p.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a busy laptop/CI machine)")
    a = p.parse_args(argv)
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    config = config_from_args(a.config, a.profile, a.set)
    output_dir = a.output_dir or f"runs/{config.profile}-{config.mode}"
    final = train(config, output_dir, resume=a.resume)
    print(f"final model: {final}")
    return final


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    try:
        main()
    except ValueError as e:  # configuration errors: one clear line, no traceback
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
