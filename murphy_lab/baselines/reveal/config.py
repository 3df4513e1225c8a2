"""ReVeal's own configuration and its recipes, read without importing the trainer (TRL): `ReVealConfig` (its knobs;
everything else is the MurphyConfig's), a recipe's two configs (`load_recipe`: MurphyConfig fields plus a `reveal:`
mapping), and the MurphyConfig a ReVeal run trains with (`as_chains`: G chains of `rounds` rounds)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from murphy_lab.cli import refuse
from murphy_lab.config import MurphyConfig, file_fields
from murphy_lab.fields import type_problems
from murphy_lab.modes import mode

MODE = "grpo_mt"  # ReVeal's trainer mode (its Method.mode): G chains of `rounds` rounds, G2 = 1 (`as_chains`)


@dataclass
class ReVealConfig:
    """ReVeal's own knobs; everything else (G, lr, β, profiles, TRL fields) is the MurphyConfig's."""

    rounds: int = 3
    """Round budget in training (one round = a generation turn + a verification turn). ReVeal: 3."""
    gamma: float = 1.0
    """Discount of the turn returns G_t = Σ γ^{t'−t} r_{t'} (the paper does not state one; 1 = plain sum)."""
    max_tests: int = 10
    """Test cases run per verification turn (the rest are reported and ignored)."""
    validate: bool = True
    """Check the model's tests against the task's reference solution (tasks without one run them unvalidated)."""
    stop_on_verdict: bool = True
    """A chain stops when its program passes all its valid tests (else it always plays `rounds` rounds)."""

    def problems(self) -> list[str]:
        """Every problem of these knobs, one line each naming the field (a wrong type alone)."""
        typed = type_problems(self)
        if typed:
            return typed
        out = []
        if self.rounds < 1:
            out.append(f"rounds: must be an integer >= 1, got {self.rounds!r}")
        if not 0.0 <= self.gamma <= 1.0:
            out.append(f"gamma: must lie in [0, 1], got {self.gamma!r}")
        if self.max_tests < 1:
            out.append(f"max_tests: must be an integer >= 1, got {self.max_tests!r}")
        return out

    def validate_fields(self) -> ReVealConfig:
        refuse(self.problems())
        return self


def as_chains(config: MurphyConfig, reveal: ReVealConfig) -> MurphyConfig:
    """The MurphyConfig of a ReVeal run: G chains of `rounds` rounds (its mode's fields: grpo_mt, G2 = 1; no
    pruning), so that MurphyConfig's checks and MurphyTrainer's round (one generation call per round on every rank)
    apply. ReVeal scores and weighs its chains itself (TAPO: `score_trees`, `build_rows` below)."""
    return dataclasses.replace(config, **mode(MODE).fields(), turns=reveal.rounds, b_grp=None, b_traj=None)


REVEAL_FIELDS = {f.name for f in dataclasses.fields(ReVealConfig)}


def split_fields(fields: dict) -> tuple[dict, dict]:
    """(MurphyConfig fields, ReVealConfig fields) of a ReVeal recipe's mapping: its `reveal:` mapping, then any
    ReVealConfig field named at the top level (an override); unknown ReVealConfig fields are refused by name."""
    d = dict(fields)
    if not isinstance(d.get("reveal", {}), dict):
        raise ValueError("reveal: must be a mapping of ReVealConfig fields")
    rv = {**d.pop("reveal", {}), **{k: d.pop(k) for k in list(d) if k in REVEAL_FIELDS}}
    unknown = sorted(set(rv) - REVEAL_FIELDS)
    if unknown:
        raise ValueError(f"reveal: unknown ReVealConfig field(s) {unknown}; known: {sorted(REVEAL_FIELDS)}")
    return d, rv


def recipe_configs(
    fields: dict, profile: str = "paper", validate: bool = True
) -> tuple[MurphyConfig, ReVealConfig]:
    """The two configs of a ReVeal recipe's mapping (`split_fields`); the ReVealConfig is validated (unless
    `validate` is false), the MurphyConfig is not yet (`load_recipe` and the method entry validate it as
    `train_reveal` runs it)."""
    murphy, rv = split_fields(fields)
    reveal = ReVealConfig(**rv)
    return MurphyConfig.for_profile(
        murphy.pop("profile", profile), **murphy
    ), reveal.validate_fields() if validate else reveal


def load_recipe(
    path: str | Path, validate: bool = True, **overrides: Any
) -> tuple[MurphyConfig, ReVealConfig]:
    """A ReVeal recipe (reproduce/configs/<model>/reveal.yaml): MurphyConfig fields plus a `reveal:` mapping of
    ReVealConfig fields. `overrides` may name fields of either; both configs are validated (errors name the field)
    unless `validate` is false (`--check` reports their problems with the rest)."""
    config, reveal = recipe_configs({**file_fields(path), **overrides}, validate=validate)
    if validate:
        as_chains(config, reveal).validate()  # as train_reveal runs it
    return config, reveal
