"""MURPHY and the methods that share its trainer — single-turn GRPO and GRPO-MT — and the base model, as plug-ins.

The three train with `MurphyTrainer` (`murphy_lab.trainer.train`), one trainer mode each (`murphy_lab.modes`); they
differ only in the fields their mode implies and, for MURPHY, its variants (credit rule, γ, pruning, backup order):

    config(exp, base)   experiment_fields (recipes.py) + the mode's fields + MURPHY's variant -> MurphyConfig
    train(exp, base)    locally: murphy_lab.trainer.train(config); a profile with recipes (paper): the launch scripts
    mode                Method.mode: grpo | grpo_mt | murphy (murphy_lab.modes: G2 / S, scoring rule, loss groups)
    recipes             grpo | grpo_mt | murphy_<credit>[_g<γ>] | murphy_<pruning>   (reproduce/configs/<model>/)

Pruning budgets follow the paper's ratio (G = 8 -> b_traj = b_grp = 4, i.e. half): b = max(2, G // 2) for IntraP
and max(1, G1 // 2) for InterP; the paper profile's pruning recipes state theirs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from murphy_lab.config import MurphyConfig
from murphy_lab.credit import credit_rule
from murphy_lab.methods import Method, get_method
from murphy_lab.methods.recipes import check_config, experiment_fields, launch
from murphy_lab.modes import mode
from murphy_lab.trainer import train as train_run

MURPHY_VARIANTS = ("credit", "gamma", "pruning", "backup_on")  # the Experiment fields of MURPHY's ablations
MURPHY_RECIPES = ("murphy_mars", "murphy_mers_g0.9", "murphy_mers_g1.0", "murphy_interp", "murphy_intrap")  # the paper's
TRAINER_BUDGET = ("g1", "g2", "turns", "per_device_train_batch_size", "max_steps")  # tasks × samples per step, steps
FIELDS = {f.name for f in dataclasses.fields(MurphyConfig)}


def fields(exp: Any, base_model: str) -> dict:
    """The MurphyConfig fields of an experiment: the shared ones, the mode's, and the method's variant (MURPHY's
    credit rule, γ and backup order; its pruning budgets are set in `config`)."""
    kw = experiment_fields(exp, base_model, length="max_completion_length")  # an unknown override: MurphyConfig's error
    method = get_method(exp.method)
    kw.update(mode(method.mode).fields())  # the mode the method names (Method.mode): it fixes G2 / S
    kw.update({f: getattr(exp, f) for f in method.variants if f in FIELDS})  # credit, gamma, backup_on
    return kw


def config(exp: Any, base_model: str) -> MurphyConfig:
    """The MurphyConfig this experiment trains with (validated; no model loads)."""
    cfg = MurphyConfig.for_profile(exp.profile, **fields(exp, base_model))
    check_config(exp, cfg)  # before validate(): a format or data mismatch is the error to fix
    if not exp.profile.recipes:  # a pruning recipe states its budget; the presets get the paper's ratio
        if exp.pruning == "intrap":
            cfg.b_traj = max(2, min(cfg.g1, cfg.g2) // 2)  # b_traj, IntraP (paper: 4 of 8)
        elif exp.pruning == "interp":
            cfg.b_grp = max(1, cfg.g1 // 2)  # b_grp, InterP (paper: 4 of 8 turn-2 groups)
    return cfg.validate()


def train(exp: Any, base_model: str, output_dir: Path) -> Path:
    """Train with the method's mode (module docstring); returns the trained model's folder."""
    cfg = config(exp, base_model)  # refuses a wrong format, data or field before anything is launched
    if exp.profile.recipes:
        return launch(fields(exp, base_model), output_dir)
    return Path(train_run(cfg, output_dir))


def murphy_recipe(exp: Any) -> str:
    """MURPHY's recipe is named after its variant: murphy_mars, murphy_mers_g0.9, murphy_interp, ..."""
    if exp.pruning != "none":
        if exp.credit != "mars":
            raise ValueError(f"no recipe for pruning={exp.pruning!r} with credit={exp.credit!r} (the paper prunes MaRS)")
        return f"murphy_{exp.pruning}"
    rule = credit_rule(exp.credit)
    return f"murphy_{rule.name}" + (f"_g{float(exp.gamma):.1f}" if rule.discounted else "")


BASE = Method("base", cost=4)  # the untrained base model, evaluated like every column
# one group of G per task, one turn
GRPO = Method("grpo", train=train, config=config, mode="grpo", recipes=("grpo",), budget=TRAINER_BUDGET, cost=3)
# G chains of S turns, the chain's final reward broadcast (murphy_lab.modes.grpo_mt)
GRPO_MT = Method("grpo_mt", train=train, config=config, mode="grpo_mt", recipes=("grpo_mt",), budget=TRAINER_BUDGET,
                 cost=2)  # fmt: skip
# the tree, retrospective credit, pruning
MURPHY = Method("murphy", train=train, config=config, mode="murphy", recipes=MURPHY_RECIPES, recipe=murphy_recipe,
                variants=MURPHY_VARIANTS, budget=TRAINER_BUDGET, cost=0)  # fmt: skip
