"""How an experiment becomes the fields of a method's training config, in one place, and the one launch of a recipe.

Every method's entry (`murphy_lab.methods.Method.config(exp, model)`) starts from `experiment_fields(exp, model, ...)`,
which applies, in this order (later wins):

    1. the prompt format          prompt_format(exp): chat, chat_template_kwargs, tokens per turn (formats.py)
    2. the training set           profiles.training_set(exp.train_data): the same tasks for every method and seed
    3. the profile's executor     Profile.executor (local runs: one worker a run; runs go side by side)
    4. the paper recipe           reproduce/configs/<model>/<recipe>.yaml, for a profile with `recipes` (paper)
       + local data               where the training set lives on this node: `task_args.source` from the data step's
                                  manifest when MURPHY_LAB_DATA is set (`local_args`; where, never which tasks)
    5. the model and the seed     the model the method trains (`model`: a path or hub id; `exp.model` is its key)
                                  and the experiment's seed
    6. the experiment's overrides the profile's `train_overrides` and the notebook's (only fields the config has)

and refuses, before any model loads, fields that train in another prompt format than the evaluation's, or on other
tasks than the experiment's `train_data` says (a recipe or an override that disagrees: the error names the field).
The method then adds its own fields (its mode, MURPHY's credit rule and pruning) and builds its config once
(`MurphyConfig.layered(exp.profile, fields, validate=True)`: the profile's presets, these fields, the mode's G2 / S).

`launch(fields, output_dir, entry)` writes such fields as a recipe beside the run folder and starts
`reproduce/configs/launch/train_8xh100.sh` (8 GPUs: 2 vLLM + 6 training) or `colocate_1gpu.sh` (fewer GPUs) with
`ENTRY=<entry>` (`murphy_lab.train` for the trainer's methods, `murphy_lab.baselines.reveal` for ReVeal).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from murphy_lab.methods import get_method
from murphy_lab.methods.formats import FORMAT_OPTIONS, prompt_format
from murphy_lab.profiles import TRAIN_DATA

REPO = Path(__file__).absolute().parents[2]  # the checkout this package is in (a linked one too)
RECIPE_DIRS = {"Qwen3-1.7B": "qwen3-1.7b", "Qwen3-4B": "qwen3-4b", "OLMo-2-7B": "olmo2-7b"}
LAUNCH = REPO / "reproduce" / "configs" / "launch"
DATA_ENV = "MURPHY_LAB_DATA"  # the folder `python -m murphy_lab.experiments.data` wrote (its manifest.json)
MANIFEST = "manifest.json"
WHERE_KEYS = ("source", "path")  # loader arguments that say where the rows are, never which tasks


def local_args(dataset: str) -> dict:
    """The loader arguments that read `dataset` (a `TRAIN_DATA` or benchmark name) from the local files of the data
    step, as absolute paths, when MURPHY_LAB_DATA names a folder whose manifest holds it; else {}."""
    root = os.environ.get(DATA_ENV)
    if not root:
        return {}
    path = Path(root).expanduser() / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{DATA_ENV}={root!r} holds no {MANIFEST}; write it with "
            f"python -m murphy_lab.experiments.data --out {root}"
        )
    entry = json.loads(path.read_text())["datasets"].get(dataset)
    return {k: str(Path(root).expanduser().resolve() / v) for k, v in entry["local"].items()} if entry else {}


def recipe_path(exp: Any) -> Path:
    """The paper recipe of an experiment: reproduce/configs/<model>/<the method's recipe name>.yaml."""
    if exp.model not in RECIPE_DIRS:
        raise ValueError(f"no recipe folder for model {exp.model!r}; known: {sorted(RECIPE_DIRS)}")
    method = get_method(exp.method)
    if not method.trains:
        raise ValueError(f"method {exp.method!r} trains nothing, so it has no recipe")
    name = method.recipe_name(exp)
    if name not in method.recipes:  # recipes are opt-in: this method ships none (or not this variant's)
        missing = ", ".join(f"reproduce/configs/{d}/{name}.yaml" for d in RECIPE_DIRS.values())
        raise FileNotFoundError(
            f"{exp.method}/{exp.variant} has no paper recipe {name!r} (its Method.recipes: "
            f"{list(method.recipes)}); profile {getattr(exp.profile, 'name', exp.profile)!r} trains from recipes only: add {missing} "
            f"and name {name!r} in Method.recipes, or train it on a profile with presets (smoke, toy)"
        )
    path = REPO / "reproduce" / "configs" / RECIPE_DIRS[exp.model] / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no training recipe {path} for {exp.model}/{exp.method}/{exp.variant}")
    return path


def experiment_fields(exp: Any, model: str, *, length: str, accepts: Collection[str] | None = None) -> dict:
    """The training-config fields every method takes from an experiment (the module docstring's steps 1-6), checked
    against the evaluation's prompt format and the experiment's training set.

    `model`: the weights the method trains (a path or hub id: the profile's base model of `exp.model`). `length` is
    the config's name for tokens per turn (MurphyConfig: "max_completion_length", µCode: "max_new_tokens");
    `accepts` limits the experiment's overrides to the config's own fields (None: all), so a profile's trainer
    overrides (e.g. the demo's max_steps) mean nothing to a method whose config lacks them.
    """
    prof, fmt = exp.profile, prompt_format(exp)
    # the same tasks for every method and seed (profiles.training_set)
    source, args = TRAIN_DATA[exp.train_data]
    want = {"tasks": source, "task_args": dict(args)}
    fields: dict[str, Any] = {
        "chat": fmt["chat"],
        "chat_template_kwargs": fmt["chat_template_kwargs"],
        length: fmt["max_new_tokens"],
        **want,
    }
    if prof.executor:
        fields["executor"] = dict(prof.executor)
    if prof.recipes:
        recipe = yaml.safe_load(recipe_path(exp).read_text()) or {}
        # µCode's name its entry point; the experiment's profile is the one
        for name in ("method", "profile"):
            recipe.pop(name, None)
        fields.update(recipe)
    local = local_args(exp.train_data)
    if local:
        fields["task_args"] = {**fields.get("task_args", {}), **local}
    fields.update(model=model, seed=exp.seed)
    fields.update({k: v for k, v in exp.overrides if accepts is None or k in accepts})
    for option in FORMAT_OPTIONS:  # the evaluation's prompt format (docs/evaluation.md, "Prompt format")
        given = fields[length if option == "max_new_tokens" else option]
        if given != fmt[option]:
            raise ValueError(
                f"{exp.model}/{exp.method}: training option {option}={given!r} differs from the "
                f"evaluation's {fmt[option]!r}: every method is trained in the prompt format it is "
                "evaluated in (docs/evaluation.md, 'Prompt format'); change the recipe or the override"
            )
    for name in ("tasks", "task_args"):
        given = fields[name]
        if name == "task_args":  # where the rows are read from (the data step's files) is not which tasks
            given = {k: v for k, v in given.items() if k not in WHERE_KEYS or k in want[name]}
        if given != want[name]:
            raise ValueError(
                f"{exp.model}/{exp.method}: training field {name}={fields[name]!r} differs from the "
                f"experiment's train_data={exp.train_data!r} ({want[name]!r}): every method trains on the tasks "
                "`profiles.training_set` gives (change the recipe, the override, or train_data)"
            )
    return fields


def launch(fields: dict, output_dir: str | Path, entry: str = "murphy_lab.train") -> Path:
    """Launch a recipe on this machine's GPUs (8: train_8xh100.sh, fewer: colocate_1gpu.sh), wait for it, and
    return the final model's folder. The recipe is written beside `output_dir` (the trainer wants that empty)."""
    output_dir = Path(output_dir)
    path = output_dir.parent / f"{output_dir.name}.recipe.yaml"
    path.write_text(yaml.safe_dump(fields, sort_keys=False))
    import torch  # heavy: only to count the GPUs a launch runs on

    script = "train_8xh100.sh" if torch.cuda.device_count() >= 8 else "colocate_1gpu.sh"
    subprocess.run(
        ["bash", str(LAUNCH / script), str(path), str(output_dir)],
        check=True,
        env={**os.environ, "ENTRY": entry},
    )
    return output_dir / "final"
