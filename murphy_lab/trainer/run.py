"""The run lifecycle every trainer shares: a run folder, resume from its newest checkpoint, metrics.jsonl kept exact.

    train(config, output_dir)               MURPHY / GRPO-MT / GRPO (MurphyTrainer)
    train(config, output_dir, trainer_cls=ReVealTrainer, trainer_kwargs={"reveal": rv}, files={...})   a baseline

Writes under the output directory:
    config.yaml          the resolved MurphyConfig (model path filled in), plus any `files` the caller names
    checkpoint-N/        TRL checkpoints (model, optimizer, scheduler, RNG state, trainer_state.json)
    metrics.jsonl        one line per optimizer step (docs/training.md lists every key)
    trees/step_N.jsonl   the step's rollout trees (a baseline may write its own folder, e.g. ReVeal's chains/)
    curves.png           reward and solved fractions per step, drawn from metrics.jsonl when the run ends
    resumes.jsonl        one line per resume: the checkpoint it continued from and the changes it was allowed
                         (murphy_lab.runfolder reads a run folder back: recorded_config, last_checkpoint)
    final/               the trained model and tokenizer (returned by `train`)

A killed run resumed with `resume=True` continues its *recorded* run: the config is config.yaml's (with the
changes earlier resumes were allowed, `recorded_config`), and a config given at resume time that differs from it
is refused, field by field, unless each differing field is named in `allow_changes` and is one of `RESUME_SAFE`
(e.g. max_steps, to extend a run). config.yaml is never rewritten by a resume. The run continues from its newest
complete checkpoint (one whose trainer_state.json was written: a run killed while saving leaves a partial folder)
and first drops the metrics.jsonl lines logged after that checkpoint's step, so every step has exactly one line.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import dataclasses
import json
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback

from murphy_lab import executor as executor_pkg
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import resolve
from murphy_lab.runfolder import held, last_checkpoint, record_resume, recorded_config
from murphy_lab.trainer.core import MurphyTrainer
from murphy_lab.trainer.eval_callback import IterKEval, evaluating
from murphy_lab.trainer.metrics import StepProgress
from murphy_lab.viz.curves import plot_training_curves

log = logging.getLogger(__name__)

RESUME_SAFE = (
    "max_steps",
    "num_train_epochs",
    "save_steps",
    "save_total_limit",
    "logging_steps",
    "report_to",
    "executor",
)
"""Fields a resume may change when `allow_changes` names them: how long the run goes on (a longer max_steps also
stretches a decaying learning-rate schedule from the checkpoint on), what it saves and logs, and the executor (e.g.
its workers on another machine; a new timeout or memory limit changes which programs pass from then on)."""


def differences(recorded: MurphyConfig, given: MurphyConfig) -> dict[str, dict]:
    """``{field: {"recorded": r, "given": g}}`` for every field where `given` differs from `recorded`. An empty
    `model` in `given` (the profile builds it) matches the model the run recorded."""
    out = {}
    for f in dataclasses.fields(MurphyConfig):
        r, g = getattr(recorded, f.name), getattr(given, f.name)
        if r != g and not (f.name == "model" and not g):
            out[f.name] = {"recorded": r, "given": g}
    return out


def resumed_config(
    output_dir: Path, config: MurphyConfig | None, allow_changes: Sequence[str] = ()
) -> tuple[MurphyConfig, dict]:
    """(the config a resume of `output_dir` runs, the changes it makes to the recorded one); raises ValueError,
    naming every differing field, when `config` differs from the recorded run in fields `allow_changes` does not
    name."""
    unsafe = sorted(set(allow_changes) - set(RESUME_SAFE))
    if unsafe:
        raise ValueError(
            f"allow_changes: {unsafe} cannot change when a run resumes; only {list(RESUME_SAFE)} can"
        )
    recorded = recorded_config(output_dir)
    if recorded is None or config is None:
        if recorded is None and config is None:
            raise ValueError(
                f"resume: {str(output_dir)!r} holds no config.yaml to resume; give the run's config"
            )
        return recorded or config, {}
    changes = differences(recorded, config)
    refused = [name for name in changes if name not in allow_changes]
    if refused:
        listed = ", ".join(
            f"{n} (recorded {_short(changes[n]['recorded'])}, given {_short(changes[n]['given'])})"
            for n in refused
        )
        safe = all(n in RESUME_SAFE for n in refused)
        allow = f", or allow the change with --allow-change {' '.join(refused)}" if safe else ""
        raise ValueError(
            f"resume: {str(output_dir)!r} records another run: {listed}. A resumed run continues its "
            f"recorded config.yaml: resume with --resume alone{allow} (a resume may change only "
            f"{list(RESUME_SAFE)})"
        )
    return dataclasses.replace(recorded, **{name: v["given"] for name, v in changes.items()}), changes


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def truncate_metrics(output_dir: Path, step: int) -> None:
    """Drop metrics.jsonl lines written after `step` (a killed run may have logged past its last checkpoint)."""
    path = output_dir / "metrics.jsonl"
    if path.exists():
        lines = [
            ln for ln in path.read_text().splitlines() if ln.strip() and json.loads(ln).get("step", 0) <= step
        ]
        path.write_text("".join(ln + "\n" for ln in lines))


def open_run(output_dir: str | Path, resume: bool) -> Path | None:
    """Prepare `output_dir` for a new or resumed run; return the checkpoint to resume from (None: from scratch).

    A folder that already holds a checkpoint is only continued with `resume`; metrics.jsonl starts empty for a new
    run and loses the lines past the checkpoint's step for a resumed one (main process only).
    """
    output_dir = Path(output_dir)
    checkpoint = last_checkpoint(output_dir) if output_dir.exists() else None
    if checkpoint is not None and not resume:
        raise ValueError(
            f"output_dir {str(output_dir)!r} already holds a run ({checkpoint.name}); "
            "pass resume=True (--resume) or choose a new directory"
        )
    if resume and checkpoint is None:
        log.warning("resume: no checkpoint under %s, starting from scratch", output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        if checkpoint is None:
            (output_dir / "metrics.jsonl").unlink(missing_ok=True)
        else:
            truncate_metrics(
                output_dir, json.loads((checkpoint / "trainer_state.json").read_text())["global_step"]
            )
    return checkpoint


_CONTINUING = contextvars.ContextVar("murphy_lab_continue_interrupted", default=False)


@contextlib.contextmanager
def continuing_interrupted():
    """Inside it, `train(config, output_dir)` continues an interrupted run that `output_dir` records (its config.yaml
    and a complete checkpoint) as `resume=True` would: the experiment store trains through method entries that
    never pass `resume` (`experiments.store.run_experiment`), and a run of hours (the real-cpu profile) must not
    start over. A config that differs from the recorded one is still refused, field by field."""
    token = _CONTINUING.set(True)
    try:
        yield
    finally:
        _CONTINUING.reset(token)


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0  # under `accelerate launch` every rank runs the lifecycle


def train(
    config: MurphyConfig | str | Path | None,
    output_dir: str | Path,
    resume: bool = False,
    *,
    executor: Any = None,
    tasks: list | None = None,
    callbacks: list | None = None,
    trainer_cls: type = MurphyTrainer,
    trainer_kwargs: dict | None = None,
    files: dict[str, str] | None = None,
    allow_changes: Sequence[str] = (),
) -> Path:
    """Run one training job and return the folder of the final model.

    Args:
        config: a MurphyConfig, or the path of a YAML file (MurphyConfig.from_yaml); None to resume `output_dir`'s
            recorded run as it is.
        output_dir: where config.yaml, checkpoints, metrics.jsonl, trees/ and final/ go.
        resume: continue the run recorded in `output_dir` from its newest checkpoint (optimizer, scheduler and RNG
            state restored) with its recorded config; a `config` that differs from it is refused.
        executor: an object with `run_many(jobs)`; default murphy_lab.executor.Executor(**config.executor).
        tasks: Task list to train on instead of the config's source (notebooks, tests).
        callbacks: extra transformers TrainerCallbacks.
        trainer_cls, trainer_kwargs: the trainer (a MurphyTrainer subclass, e.g. ReVealTrainer) and its own arguments.
        files: extra text files written beside config.yaml (name -> content), e.g. a baseline's own config; a
            resume refuses one that differs from the recorded file.
        allow_changes: with `resume`, fields of `RESUME_SAFE` that may differ from the recorded config (recorded
            in resumes.jsonl).
    """
    output_dir = Path(output_dir)
    if config is not None and not isinstance(config, MurphyConfig):
        config = MurphyConfig.from_yaml(config)
    if (
        _CONTINUING.get()
        and (output_dir / "config.yaml").is_file()
        and last_checkpoint(output_dir) is not None
    ):
        resume = True  # an interrupted run, inside `continuing_interrupted`
    continuing = resume and (output_dir / "config.yaml").is_file()
    changes: dict = {}
    if continuing:  # everything is checked before anything in the folder changes
        config, changes = resumed_config(output_dir, config, allow_changes)
        _check_files(output_dir, files or {})
    elif config is None:
        raise ValueError(f"config is required: {str(output_dir)!r} holds no recorded run to resume")
    config.validate()  # before anything is built or loaded
    # Iter-k on held-out tasks, metrics.jsonl
    if config.eval_every and not getattr(trainer_cls, "evaluates", False):
        trainer_cls = evaluating(trainer_cls, IterKEval(config))
    # one process per run folder: a second one (another papermill of the same profile) is refused here
    with held(output_dir) if is_main_process() else contextlib.nullcontext():
        checkpoint = open_run(output_dir, resume)
        if tasks is None:
            model, tasks = resolve(config, output_dir)
        else:  # the caller brings its own tasks; the model still comes from the config or the profile
            model = config.model or resolve(config, output_dir)[0]
        resolved = dataclasses.replace(config, model=str(model))
        if is_main_process():
            if continuing:
                record_resume(output_dir, checkpoint, changes)
            else:
                resolved.to_yaml(output_dir / "config.yaml")
            for name, text in (files or {}).items():
                if not (continuing and (output_dir / name).exists()):
                    (output_dir / name).write_text(text)
        own_executor = executor is None
        if own_executor:
            executor = executor_pkg.Executor(**config.executor)
        try:
            trainer = trainer_cls(
                model=str(model),
                args=config.to_grpo_config(output_dir),
                murphy=resolved,
                tasks=tasks,
                executor=executor,
                callbacks=callbacks,
                **(trainer_kwargs or {}),
            )
            # TRL's bar / per-step tables
            for cb in (ProgressCallback, NotebookProgressCallback, PrinterCallback):
                trainer.remove_callback(cb)
            trainer.add_callback(StepProgress(trainer, trainer.run_log, f"{config.mode} seed {config.seed}"))
            with (
                quiet_tied_keys(trainer.model) if checkpoint is not None else contextlib.nullcontext(),
                warnings.catch_warnings(),
            ):
                # TRL 1.16 reads transformers' renamed `is_gradient_checkpointing` every step: not our call to change
                warnings.filterwarnings(
                    "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
                )
                trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
        finally:
            if own_executor and hasattr(executor, "close"):
                executor.close()
        final = output_dir / "final"
        trainer.save_model(str(final))
        if is_main_process():
            write_curves(output_dir, f"{config.mode} seed {config.seed}")
        return final


MISSING_KEYS = "There were missing keys in the checkpoint model loaded: "  # transformers.Trainer, on a resume


class _TiedKeysFilter(logging.Filter):
    """Drops transformers' "missing keys ['lm_head.weight']" when every missing key names a tied weight: the
    checkpoint stores a matrix shared by two names once, and loading it fills both, so the resumed run is exact
    (tests/test_train_cli.py compares a resumed run's weights with an uninterrupted one's, bit for bit). Any other
    missing key is still reported."""

    def __init__(self, tied: set[str]):
        super().__init__()
        self.tied = tied

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if not msg.startswith(MISSING_KEYS):
            return True
        try:
            keys = ast.literal_eval(msg[len(MISSING_KEYS) :].rstrip("."))
        except (ValueError, SyntaxError):
            return True
        return not (keys and set(keys) <= self.tied)


@contextlib.contextmanager
def quiet_tied_keys(model: Any):
    """While resuming: no "missing keys" warning for weights `model` ties to others (they share one tensor)."""
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    tied = {n for group in names.values() if len(group) > 1 for n in group}
    logger, flt = logging.getLogger("transformers.trainer"), _TiedKeysFilter(tied)
    logger.addFilter(flt)
    try:
        yield
    finally:
        logger.removeFilter(flt)


def _check_files(output_dir: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = output_dir / name
        if path.exists() and path.read_text() != text:
            raise ValueError(
                f"resume: {str(path)!r} differs from the {name} given now; a resumed run continues "
                f"its recorded {name}"
            )


def write_curves(output_dir: Path, title: str) -> Path | None:
    """curves.png: reward and solved fractions per step from metrics.jsonl (None when it holds no such metric)."""
    path = output_dir / "metrics.jsonl"
    rows = (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )
    try:
        plot_training_curves(rows, title=f"{title}: {output_dir.name}", path=output_dir / "curves.png")
    except ValueError as err:  # no step logged a reward or solved metric
        log.info("no curves.png: %s", err)
        return None
    return output_dir / "curves.png"


__all__ = [
    "RESUME_SAFE",
    "continuing_interrupted",
    "differences",
    "last_checkpoint",
    "open_run",
    "resumed_config",
    "train",
    "truncate_metrics",
    "write_curves",
]  # last_checkpoint: murphy_lab.runfolder's, here for existing callers
