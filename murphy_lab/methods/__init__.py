"""The methods of the main table as plug-ins: one registry entry per method, looked up by name.

    from murphy_lab.methods import METHODS, get_method
    m = get_method("mucode")            # imports murphy_lab.baselines.mucode.method and returns its METHOD
    cfg = m.config(exp, model)          # the training config of an experiment (no model loads); `model`: the
    final = m.train(exp, model, output_dir)  # weights it trains (the profile's base model of exp.model)
    scaffold = m.evaluation(exp)        # the scaffold it is evaluated in (its own format: ReVeal's tagged rounds)

A method's entry (a `Method`) lives in the method's own package — `murphy_lab/methods/murphy.py` for the
base model and the three methods MurphyTrainer trains (GRPO, GRPO-MT, MURPHY), `baselines/<name>/method.py` for a
baseline with its own pipeline — and `ENTRIES` names where each one is, as "module:attribute". The experiments layer
looks methods up here and imports no baseline: a method's module is imported the first time it is asked for, so
nothing above it can form an import circle with it, and a new method is one module plus one line below.

What every entry shares — how an experiment becomes the fields of a training config (the training set, the prompt
format, the paper recipe), and the one launch of a paper recipe — is `murphy_lab.methods.recipes`; the prompt
format and the generation policy are `murphy_lab.methods.formats`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from murphy_lab import modes
from murphy_lab.scaffolds import Scaffold, get_scaffold

# The main table's columns, in its order: the paper's, plus single-turn GRPO (our toy table has it; the paper not).
ENTRIES: dict[str, str] = {
    "base": "murphy_lab.methods.murphy:BASE",
    "grpo": "murphy_lab.methods.murphy:GRPO",
    "grpo_mt": "murphy_lab.methods.murphy:GRPO_MT",
    "mucode": "murphy_lab.baselines.mucode.method:METHOD",
    "reveal": "murphy_lab.baselines.reveal.method:METHOD",
    "murphy": "murphy_lab.methods.murphy:MURPHY",
}
METHODS = tuple(ENTRIES)  # the one list of method names (importing it loads no method and no torch)
# a sample-matched baseline (Experiment.budget="samples") samples as much as its run
SAMPLE_REFERENCE = "murphy"

TrainFn = Callable[[Any, str, Path], Path]  # (experiment, model, output dir) -> the trained model's folder
# (experiment, model: the weights it trains) -> the training config, no model loads
ConfigFn = Callable[[Any, str], Any]


def shared_scaffold(exp: Any) -> Scaffold:
    """The experiment's scaffold as `murphy_lab.scaffolds` builds it (reads answers with prompts.extract_program)."""
    return get_scaffold(exp.scaffold)


@dataclass(frozen=True)
class Method:
    """One column of the main table: how it trains, how it is evaluated, its recipe, what sets its budget.

    Experiments are read by attribute (`murphy_lab.experiments.Experiment`: profile, model, seed, train_data,
    overrides, and the method's `variants`); nothing here imports the experiments layer.
    """

    name: str
    train: TrainFn | None = None
    """Trains the experiment's base model and returns the trained model's folder; None: evaluated untrained (base)."""
    config: ConfigFn | None = None
    """The config `train` trains with, checked against the evaluation's prompt format (tests render its prompts)."""
    mode: str | None = None
    """The trainer mode it trains in, a name of `murphy_lab.modes.MODES`: its config takes the mode's G2 / S
    (`Mode.fields`), and the mode's entry scores its trees and weighs its loss; None: no MurphyTrainer mode (µCode's
    own pipeline, the untrained base)."""
    recipes: tuple[str, ...] = ()
    """Its paper recipes (opt-in): `reproduce/configs/<model>/<name>.yaml` for every paper model; (): none — a
    profile that trains from recipes (paper) refuses it with the files it would need (`methods.recipes.recipe_path`),
    every other profile trains it from its presets."""
    recipe: Callable[[Any], str] | None = None
    """Which of `recipes` an experiment trains with (MURPHY: by its variant); None: the method's one recipe."""
    scaffold: str = "reflexion"
    """The scaffold it is evaluated in unless an experiment names another (Experiment.scaffold = None): its format."""
    evaluation: Callable[[Any], Scaffold] = shared_scaffold
    """The Scaffold instance for an experiment (`exp.scaffold` resolved): how its prompts and answers are read."""
    variants: tuple[str, ...] = ()
    """Experiment fields that vary this method (MURPHY: credit, gamma, pruning, backup_on); part of its keys."""
    budget: tuple[str, ...] = ()
    """Training-config fields that set how many sequences a run samples; a sample-matched run (the profile's
    `matched` overrides) may change only these."""
    cost: int = 1
    """Scheduling order of parallel runs: the costliest (lowest) start first."""

    def __post_init__(self) -> None:
        if self.mode is not None:
            modes.mode(self.mode)  # an unknown mode: the error names the known ones
        if self.recipe is None and len(self.recipes) > 1:
            raise ValueError(
                f"method {self.name!r}: {len(self.recipes)} recipes need a `recipe` that picks one"
            )

    @property
    def trains(self) -> bool:
        return self.train is not None

    def recipe_name(self, exp: Any) -> str:
        """The name of the experiment's recipe (`reproduce/configs/<model>/<name>.yaml`), whether or not it ships."""
        if self.recipe is not None:
            return self.recipe(exp)
        return self.recipes[0] if self.recipes else self.name


def get_method(name: str) -> Method:
    """The registered method called `name` (its module is imported on first use); ValueError names the known ones."""
    if name not in ENTRIES:
        raise ValueError(f"method must be one of {METHODS}, got {name!r}")
    module, attribute = ENTRIES[name].split(":")
    method = getattr(importlib.import_module(module), attribute)
    if not isinstance(method, Method) or method.name != name:
        raise TypeError(f"{ENTRIES[name]} must be the Method called {name!r}, got {method!r}")
    return method


def default_methods(profile: Any) -> tuple[str, ...]:
    """The methods a profile plans when a plan names none: its `methods`, else every registered one — for a profile
    that trains from paper recipes (`Profile.recipes`), every one that ships its recipes and the untrained base, since
    recipes are opt-in (a method named explicitly there without them is refused naming the files: `recipe_path`)."""
    if profile.methods:
        return tuple(profile.methods)
    if not profile.recipes:
        return METHODS
    return tuple(m for m in METHODS if not get_method(m).trains or get_method(m).recipes)


__all__ = [
    "ENTRIES",
    "METHODS",
    "SAMPLE_REFERENCE",
    "Method",
    "default_methods",
    "get_method",
    "shared_scaffold",
]
