"""µCode as a method of the main table (its `murphy_lab.methods` entry): expert iteration with a learned verifier.

config(exp, model)  experiment_fields (murphy_lab.methods.recipes: training set, prompt format, the paper's
                    reproduce/configs/<model>/mucode.yaml) -> MuCodeConfig, no evaluation stage, no best-of-N
                    verifier: the µCode column is the plain Iter-k pass@1 of its generator under the experiment's
                    scaffold, like every other column
train(exp, model)   run_mucode(config) in this process (its rollouts use vLLM on a GPU), resumable
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from murphy_lab.baselines.mucode.config import REMOVED, MuCodeConfig
from murphy_lab.baselines.mucode.pipeline import run_mucode
from murphy_lab.methods import Method
from murphy_lab.methods.recipes import experiment_fields

# the experiment's overrides µCode reads: its own fields (removed ones too, so MuCodeConfig refuses them with the
# reason); a profile's trainer overrides such as the demo's max_steps mean nothing to µCode
FIELDS = {f.name for f in dataclasses.fields(MuCodeConfig)} | set(REMOVED)


def config(exp: Any, model: str) -> MuCodeConfig:
    """The MuCodeConfig µCode trains with in this experiment (validated; no model loads)."""
    fields = experiment_fields(exp, model, length="max_new_tokens", accepts=FIELDS)  # format and data checked
    fields.update(evaluate=False, final_verifier=False)  # evaluated by the caller, like every column
    return MuCodeConfig.for_profile(exp.profile, **fields)


def train(exp: Any, model: str, output_dir: Path) -> Path:
    """Run µCode's rounds on the experiment's training set; returns the last round's generator."""
    return Path(run_mucode(config(exp, model), output_dir, resume=True))


METHOD = Method(
    "mucode",
    train=train,
    config=config,
    recipes=("mucode",),
    budget=("rollouts", "turns", "rounds", "n_train_tasks"),
    cost=1,
)
