"""The run lifecycle every trainer shares: a run folder, resume from its newest checkpoint, metrics.jsonl kept exact.

    train(config, output_dir)               MURPHY / GRPO-MT / GRPO (MurphyTrainer)
    train(config, output_dir, trainer_cls=ReVealTrainer, trainer_kwargs={"reveal": rv}, files={...})   a baseline

Writes under the output directory:
    config.yaml          the resolved MurphyConfig (model path filled in), plus any `files` the caller names
    checkpoint-N/        TRL checkpoints (model, optimizer, scheduler, RNG state, trainer_state.json)
    metrics.jsonl        one line per optimizer step (docs/training.md lists every key)
    trees/step_N.jsonl   the step's rollout trees (a baseline may write its own folder, e.g. ReVeal's chains/)
    final/               the trained model and tokenizer (returned by `train`)

A killed run resumed with `resume=True` continues from its newest checkpoint and first drops the metrics.jsonl
lines logged after that checkpoint's step, so every step has exactly one line.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any

from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback

from murphy_lab import executor as executor_pkg
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import resolve
from murphy_lab.trainer.core import MurphyTrainer
from murphy_lab.trainer.stats import StepProgress

log = logging.getLogger(__name__)


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest `checkpoint-N` folder under `output_dir`, or None."""
    ckpts = [p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(ckpts, key=lambda p: int(p.name.split("-")[-1])) if ckpts else None


def truncate_metrics(output_dir: Path, step: int) -> None:
    """Drop metrics.jsonl lines written after `step` (a killed run may have logged past its last checkpoint)."""
    path = output_dir / "metrics.jsonl"
    if path.exists():
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and json.loads(ln).get("step", 0) <= step]
        path.write_text("".join(ln + "\n" for ln in lines))


def open_run(output_dir: str | Path, resume: bool) -> Path | None:
    """Prepare `output_dir` for a new or resumed run; return the checkpoint to resume from (None: from scratch).

    A folder that already holds a checkpoint is only continued with `resume`; metrics.jsonl starts empty for a new
    run and loses the lines past the checkpoint's step for a resumed one (main process only).
    """
    output_dir = Path(output_dir)
    checkpoint = last_checkpoint(output_dir) if output_dir.exists() else None
    if checkpoint is not None and not resume:
        raise ValueError(f"output_dir {str(output_dir)!r} already holds a run ({checkpoint.name}); "
                         "pass resume=True (--resume) or choose a new directory")  # fmt: skip
    if resume and checkpoint is None:
        log.warning("resume: no checkpoint under %s, starting from scratch", output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        if checkpoint is None:
            (output_dir / "metrics.jsonl").unlink(missing_ok=True)
        else:
            truncate_metrics(output_dir, json.loads((checkpoint / "trainer_state.json").read_text())["global_step"])
    return checkpoint


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0  # under `accelerate launch` every rank runs the lifecycle


def train(
    config: MurphyConfig | str | Path,
    output_dir: str | Path,
    resume: bool = False,
    *,
    executor: Any = None,
    tasks: list | None = None,
    callbacks: list | None = None,
    trainer_cls: type = MurphyTrainer,
    trainer_kwargs: dict | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """Run one training job and return the folder of the final model.

    Args:
        config: a MurphyConfig, or the path of a YAML file (MurphyConfig.from_yaml).
        output_dir: where config.yaml, checkpoints, metrics.jsonl, trees/ and final/ go.
        resume: continue from the newest checkpoint in `output_dir` (optimizer, scheduler and RNG state restored).
        executor: an object with `run_many(jobs)`; default murphy_lab.executor.Executor(**config.executor).
        tasks: Task list to train on instead of the config's source (notebooks, tests).
        callbacks: extra transformers TrainerCallbacks.
        trainer_cls, trainer_kwargs: the trainer (a MurphyTrainer subclass, e.g. ReVealTrainer) and its own arguments.
        files: extra text files written beside config.yaml (name -> content), e.g. a baseline's own config.
    """
    if not isinstance(config, MurphyConfig):
        config = MurphyConfig.from_yaml(config)
    config.validate()  # before anything is built or loaded
    output_dir = Path(output_dir)
    checkpoint = open_run(output_dir, resume)
    if tasks is None:
        model, tasks = resolve(config, output_dir)
    else:  # the caller brings its own tasks; the model still comes from the config or the profile
        model = config.model or resolve(config, output_dir)[0]
    resolved = dataclasses.replace(config, model=str(model))
    if is_main_process():
        resolved.to_yaml(output_dir / "config.yaml")
        for name, text in (files or {}).items():
            (output_dir / name).write_text(text)
    own_executor = executor is None
    if own_executor:
        executor = executor_pkg.Executor(**config.executor)
    try:
        trainer = trainer_cls(model=str(model), args=config.to_grpo_config(output_dir), murphy=resolved, tasks=tasks,
                              executor=executor, callbacks=callbacks, **(trainer_kwargs or {}))  # fmt: skip
        for cb in (ProgressCallback, NotebookProgressCallback, PrinterCallback):  # TRL's bar / per-step tables
            trainer.remove_callback(cb)
        trainer.add_callback(StepProgress(trainer, trainer.run_log, f"{config.mode} seed {config.seed}"))
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        if own_executor and hasattr(executor, "close"):
            executor.close()
    final = output_dir / "final"
    trainer.save_model(str(final))
    return final


__all__ = ["last_checkpoint", "open_run", "train", "truncate_metrics"]
