"""An evaluation killed midway continues: the benchmarks it finished for the same model are not evaluated again.

`run_experiment` evaluates a run's benchmarks one after another in `<run_key>.tmp` before the folder becomes the run
(a real model's benchmark takes half an hour and more on a CPU). After each benchmark, its table goes to
`eval_<benchmark>.csv` there and `partial.json` records which model was evaluated and each finished benchmark's time.
A later process evaluating the same model (the same folder, written at the same time) reads those tables back and
evaluates only the rest; the run's `eval_s` / `eval_cpu_s` count every benchmark once, from when it ran. Another
model (retrained, or a different checkpoint given) starts the folder afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

RECORD = "partial.json"


def slug(benchmark: str) -> str:
    """A benchmark's name in a run folder's file names (`transcripts_<slug>.jsonl`, `eval_<slug>.csv`)."""
    return "".join(c if c.isalnum() else "_" for c in benchmark.lower())


def table_path(tmp: Path, benchmark: str) -> Path:
    return tmp / f"eval_{slug(benchmark)}.csv"


def model_stamp(model_dir: str) -> dict:
    """The evaluated model: its path and when it was written (its newest file; None for a hub id, not a folder)."""
    folder = Path(model_dir)
    written = None
    if folder.is_dir():
        written = max(
            (f.stat().st_mtime for f in folder.rglob("*") if f.is_file()), default=folder.stat().st_mtime
        )
    return dict(model_dir=str(model_dir), written=written)


def kept_benchmarks(tmp: Path, stamp: dict) -> dict | None:
    """benchmark -> its times, for those an interrupted evaluation of the same model finished in `tmp`; None when
    there is nothing to continue (no record, or a record of another model)."""
    try:
        record = json.loads((tmp / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if {k: record.get(k) for k in stamp} != stamp:
        return None
    return {b: v for b, v in (record.get("benchmarks") or {}).items() if table_path(tmp, b).is_file()}


def keep(tmp: Path, stamp: dict, kept: dict, benchmark: str, table: pd.DataFrame) -> None:
    """Record a finished benchmark: its table, then the record that names it (a kill between the two loses it)."""
    table.to_csv(table_path(tmp, benchmark), index=False)
    (tmp / RECORD).write_text(json.dumps(dict(stamp, benchmarks=kept), indent=1))


def clear(tmp: Path) -> None:
    """Remove the partial files before the folder becomes the run (its eval.csv holds every benchmark)."""
    (tmp / RECORD).unlink(missing_ok=True)
    for f in tmp.glob("eval_*.csv"):
        f.unlink()
