"""What a training run folder records, read without loading the trainer: its newest complete checkpoint and the
config it runs (config.yaml plus the changes its resumes were allowed, resumes.jsonl).

    last_checkpoint(run)      the newest checkpoint-N whose trainer_state.json reads back (None: none)
    recorded_config(run)      the MurphyConfig the run records (None: no config.yaml)
    record_resume(run, ...)   append a resume's line to resumes.jsonl
    held(run)                 the run folder for one process at a time (a lock the system drops with the process)

The run lifecycle that writes these folders is `murphy_lab.trainer.run`; the eval CLI reads them to evaluate a run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from pathlib import Path

from murphy_lab.config import MurphyConfig

log = logging.getLogger(__name__)

RESUMES = "resumes.jsonl"


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete `checkpoint-N` folder under `output_dir` (its trainer_state.json, written last, reads
    back), or None. A folder that a kill left half-written is skipped with a warning."""
    ckpts = [
        p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()
    ]
    for ckpt in sorted(ckpts, key=lambda p: int(p.name.split("-")[-1]), reverse=True):
        try:
            json.loads((ckpt / "trainer_state.json").read_text())
            return ckpt
        except (OSError, ValueError):
            log.warning(
                "skipping %s: it has no complete trainer_state.json (a run killed while saving it)", ckpt
            )
    return None


def recorded_config(output_dir: str | Path) -> MurphyConfig | None:
    """The config of the run recorded in `output_dir`: config.yaml with the changes each resume was allowed
    (resumes.jsonl), in order; None when the folder holds no config.yaml."""
    output_dir = Path(output_dir)
    if not (output_dir / "config.yaml").is_file():
        return None
    config = MurphyConfig.from_yaml(output_dir / "config.yaml")
    if (output_dir / RESUMES).is_file():
        for line in (output_dir / RESUMES).read_text().splitlines():
            changes = json.loads(line)["changes"] if line.strip() else {}
            config = dataclasses.replace(config, **{name: v["given"] for name, v in changes.items()})
    return config


def record_resume(output_dir: Path, checkpoint: Path | None, changes: dict) -> None:
    """Append one line to resumes.jsonl: the checkpoint continued from (None: no checkpoint, started over) and
    the changes allowed (`recorded_config` applies them to config.yaml)."""
    line = {"checkpoint": checkpoint.name if checkpoint else None, "changes": changes}
    with (output_dir / RESUMES).open("a") as f:
        f.write(json.dumps(line, default=str) + "\n")


LOCK = ".lock"


class RunBusy(RuntimeError):
    """Another live process is training in this run folder."""


@contextlib.contextmanager
def held(output_dir: str | Path):
    """The run folder for this process alone while the block runs: an exclusive `flock` on `<run>/.lock`, which the
    system releases when the process ends however it ends (no stale lock after a kill). A second process that
    would continue the same run, say a second papermill of the same profile, is refused in one line before it
    touches the folder, instead of both writing its checkpoints and metrics. Where `fcntl` is missing (Windows)
    nothing is locked."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(output_dir / LOCK, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise RunBusy(
                f"{str(output_dir)!r} is being trained by another process ({f.read().strip() or 'pid unknown'}); "
                "wait for it or stop it first"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


__all__ = ["LOCK", "RESUMES", "RunBusy", "held", "last_checkpoint", "record_resume", "recorded_config"]
