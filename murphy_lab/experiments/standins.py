"""Stand-ins: fast fakes with the signatures of train / evaluate / base model, for tests and pipeline previews.

A stand-in run is labelled `backend="stand-in"` in its config (hence a different key), and every table and figure
built from it says STAND-IN NUMBERS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from murphy_lab.methods import get_method

BACKENDS = ("real", "stand-in")
# made-up pass@1 gains; base (and others) 0
BUMP = dict(grpo=3.0, grpo_mt=5.0, murphy=7.0, mucode=4.0, reveal=4.5)


def stand_in_base_model(exp, cache_dir: Path) -> str:
    """STAND-IN: no model; a name."""
    return f"stand-in-base/{exp.model}"


def stand_in_train(exp, base_model: str, output_dir: Path) -> Path:
    """STAND-IN trainer: writes a marker and a fake metrics.jsonl (2 steps); trains nothing."""
    output_dir = Path(output_dir)
    pruned = "pruning" in get_method(exp.method).variants  # MURPHY's tree: 72 trajectories, fewer when pruned
    kept = {"none": 72, "intrap": 36, "interp": 40}[exp.pruning] if pruned else 8
    opt = 0.25 * kept / 72
    with open(output_dir / "metrics.jsonl", "w") as f:
        for step in (1, 2):
            row = {
                "step": step,
                "generated": True,
                "trees": 2,
                "trajectories/kept": 2 * kept,
                "trajectories/total": 2 * 72,
                "completions/mean_length": 20.0,
                "time/optimization_s": opt,
                "time/step_s": opt + 0.5,
                "stand_in": True,
            }
            f.write(json.dumps(row) + "\n")
    (output_dir / "STAND_IN").write_text("not a trained model\n")
    (output_dir / "checkpoint-1").mkdir(exist_ok=True)  # an intermediate checkpoint, for the budget curve
    (output_dir / "checkpoint-1" / "STAND_IN").write_text("not a trained model\n")
    return output_dir


def stand_in_evaluate(exp, model_dir: str, benchmark: str) -> pd.DataFrame:
    """STAND-IN evaluation: deterministic made-up pass@1 that grows with k (and is halfway there at an intermediate
    checkpoint); NOT a measurement."""
    bump = BUMP.get(exp.method, 0.0)
    bump = bump / 2 if Path(model_dir).name.startswith("checkpoint-") else bump
    diffs = ("all", "easy", "medium", "hard")
    rows = []
    for i, d in enumerate(diffs):
        for k in exp.iters:
            mean = 30.0 + bump + 4.0 * k - 6.0 * i + (exp.seed % 3) - (exp.gamma < 1)
            rows.append({"difficulty": d, "k": k, "pass@1": mean, "std": 0.5, "n_tasks": 10})
    return pd.DataFrame(rows)


STAND_INS = dict(train_fn=stand_in_train, evaluate_fn=stand_in_evaluate, base_model_fn=stand_in_base_model)
STAND_IN_FNS = set(STAND_INS.values())


def backend_functions(backend: str) -> tuple[str, dict]:
    """(backend, the `run_experiment` keywords for it) for a notebook's `backend` parameter: "real" (no keywords:
    the real pipeline) or "stand-in" (the fakes above)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend, dict(STAND_INS) if backend == "stand-in" else {}
