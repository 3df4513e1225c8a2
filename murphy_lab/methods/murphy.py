"""MURPHY and the methods that share its trainer — single-turn GRPO and GRPO-MT — and the base model, as plug-ins.

The three train with `MurphyTrainer` (`murphy_lab.trainer.train`), one trainer mode each (`murphy_lab.modes`); they
differ only in the fields their mode implies and, for MURPHY, its variants (credit rule, γ, pruning, backup order):

    config(exp, model)  experiment_fields (recipes.py) + the method's mode + MURPHY's variant -> MurphyConfig.layered
                        (the profile's presets, these fields, the G2 / S the mode implies), once, validated
    train(exp, model)   locally: murphy_lab.trainer.train(config); a profile with recipes (paper): the launch scripts
    mode                Method.mode: grpo | grpo_mt | murphy (murphy_lab.modes: G2 / S, scoring rule, loss groups)
    recipes             grpo | grpo_mt | murphy_<credit>[_g<γ>] | murphy_<pruning>   (reproduce/configs/<model>/)

Pruning budgets follow the paper's ratio (G = 8 -> b_traj = b_grp = 4, i.e. half): b = max(2, G // 2) for IntraP
and max(1, G1 // 2) for InterP; the paper profile's pruning recipes state theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from murphy_lab.config import MurphyConfig
from murphy_lab.credit import credit_rule
from murphy_lab.methods import Method, get_method
from murphy_lab.methods.recipes import experiment_fields, launch
from murphy_lab.modes import mode
from murphy_lab.trainer import train as train_run

# the Experiment fields of its ablations
MURPHY_VARIANTS = ("credit", "gamma", "credit_args", "pruning", "backup_on")
# the paper's
MURPHY_RECIPES = ("murphy_mars", "murphy_mers_g0.9", "murphy_mers_g1.0", "murphy_interp", "murphy_intrap")
# tasks × samples per step, steps
TRAINER_BUDGET = ("g1", "g2", "turns", "per_device_train_batch_size", "max_steps")


def fields(exp: Any, model: str) -> dict:
    """The MurphyConfig fields of an experiment: the shared ones (`experiment_fields`), the method's mode and the G2 /
    S it fixes (over a plan-wide override: a method trains in its mode), and MURPHY's variant (credit rule, γ, the
    rule's own knobs, backup order, and the pruning budgets at the paper's ratio where no recipe states them)."""
    # an unknown override: MurphyConfig's error
    kw = experiment_fields(exp, model, length="max_completion_length")
    method = get_method(exp.method)  # any method that shares this config (its Method.mode, Method.variants)
    kw.update(mode(method.mode).fields())  # the mode the method names (Method.mode): it fixes G2 / S
    if "credit" in method.variants:
        kw.update(credit=exp.credit, gamma=exp.gamma, backup_on=exp.backup_on)
        if exp.credit_args:  # the rule's knobs other than γ, when the experiment sets them
            kw["credit_args"] = dict(exp.credit_args)
        if not exp.profile.recipes and exp.pruning != "none":  # a pruning recipe states its budget
            size = {k: kw.get(k, exp.profile.trainer.get(k, getattr(MurphyConfig, k))) for k in ("g1", "g2")}
            if exp.pruning == "intrap":
                kw["b_traj"] = max(2, min(size["g1"], size["g2"]) // 2)  # b_traj, IntraP (paper: 4 of 8)
            else:
                kw["b_grp"] = max(1, size["g1"] // 2)  # b_grp, InterP (paper: 4 of 8 turn-2 groups)
    return kw


def config(exp: Any, model: str) -> MurphyConfig:
    """The MurphyConfig this experiment trains with (validated; no model loads): one `MurphyConfig.layered`."""
    return MurphyConfig.layered(exp.profile, fields(exp, model), validate=True)


def train(exp: Any, model: str, output_dir: Path) -> Path:
    """Train with the method's mode (module docstring); returns the trained model's folder."""
    cfg = config(exp, model)  # refuses a wrong format, data or field before anything is launched
    if exp.profile.recipes:
        return launch(cfg.to_dict(), output_dir)
    return Path(train_run(cfg, output_dir))


def murphy_recipe(exp: Any) -> str:
    """MURPHY's recipe is named after its variant: murphy_mars, murphy_mers_g0.9, murphy_interp, ..."""
    if exp.pruning != "none":
        if exp.credit != "mars":
            raise ValueError(
                f"no recipe for pruning={exp.pruning!r} with credit={exp.credit!r} (the paper prunes MaRS)"
            )
        return f"murphy_{exp.pruning}"
    rule = credit_rule(exp.credit)
    return f"murphy_{rule.name}" + (f"_g{float(exp.gamma):.1f}" if rule.discounted else "")


BASE = Method("base", cost=4)  # the untrained base model, evaluated like every column
# one group of G per task, one turn
GRPO = Method(
    "grpo", train=train, config=config, mode="grpo", recipes=("grpo",), budget=TRAINER_BUDGET, cost=3
)
# G chains of S turns, the chain's final reward broadcast (murphy_lab.modes.grpo_mt)
GRPO_MT = Method(
    "grpo_mt", train=train, config=config, mode="grpo_mt", recipes=("grpo_mt",), budget=TRAINER_BUDGET, cost=2
)
# the tree, retrospective credit, pruning
MURPHY = Method(
    "murphy",
    train=train,
    config=config,
    mode="murphy",
    recipes=MURPHY_RECIPES,
    recipe=murphy_recipe,
    variants=MURPHY_VARIANTS,
    budget=TRAINER_BUDGET,
    cost=0,
)
