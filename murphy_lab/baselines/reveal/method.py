"""ReVeal as a method of the main table (its `murphy_lab.methods` entry): trained in its rounds, evaluated in them
with the public-test feedback every column gets.

    config(exp, model)  experiment_fields (murphy_lab.methods.recipes: training set, prompt format, the paper's
                        reproduce/configs/<model>/reveal.yaml) -> (MurphyConfig, ReVealConfig); ReVealConfig fields
                        (rounds, gamma, ...) may come as overrides
    train(exp, model)   locally: train_reveal; a profile with recipes (paper): the same launch as every method's
                        recipe, with ENTRY=murphy_lab.baselines.reveal
    evaluation(exp)     scaffold "reveal" (its default): the tagged generation/verification rounds it was trained
                        in, in the experiment's prompt format (chat transcripts for chat models), with the same
                        public-test feedback as every other column's Reflexion loop (the paper evaluates every
                        column in that loop); "reveal-own": its own loop, feedback on its own tests only (an extra,
                        labelled row); under a shared scaffold (cross-scaffold tables) the program is read from
                        <generation-answer> when the model writes one
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from murphy_lab.baselines.reveal.config import MODE, as_chains, recipe_configs, split_fields
from murphy_lab.baselines.reveal.format import reveal_extract
from murphy_lab.baselines.reveal.scaffold import REVEAL_SCAFFOLDS, ReVealScaffold
from murphy_lab.config import MurphyConfig
from murphy_lab.methods import Method
from murphy_lab.methods.formats import prompt_format
from murphy_lab.methods.murphy import TRAINER_BUDGET
from murphy_lab.methods.recipes import experiment_fields, launch
from murphy_lab.prompts import extract_program
from murphy_lab.scaffolds import Scaffold, get_scaffold

ENTRY = "murphy_lab.baselines.reveal"  # the launch scripts' ENTRY: python -m murphy_lab.baselines.reveal


def configs(exp: Any, model: str, fields: dict | None = None) -> tuple[MurphyConfig, Any]:
    """(MurphyConfig, ReVealConfig) of this experiment, both validated as `train_reveal` runs them: the shared
    fields (`experiment_fields`: MurphyConfig fields, the paper recipe's `reveal:` mapping, ReVealConfig overrides;
    `fields` when already made), then ReVeal's chains (`as_chains`)."""
    fields = experiment_fields(exp, model, length="max_completion_length") if fields is None else fields
    config, reveal = recipe_configs(fields, exp.profile)
    as_chains(config, reveal).validate()
    return config, reveal


def config(exp: Any, model: str) -> MurphyConfig:
    """The MurphyConfig ReVeal trains with (its G, sampling, optimisation, prompt format; `configs` has both)."""
    return configs(exp, model)[0]


def train(exp: Any, model: str, output_dir: Path) -> Path:
    """Train ReVeal on the experiment's training set; returns the final model's folder."""
    fields = experiment_fields(exp, model, length="max_completion_length")
    config, reveal = configs(exp, model, fields)  # refuses a wrong format, data or field before anything runs
    if exp.profile.recipes:
        murphy, rv = split_fields(fields)
        return launch({**murphy, "reveal": rv}, output_dir, entry=ENTRY)
    from murphy_lab.baselines.reveal.trainer import train_reveal  # TRL: only when it trains here

    return Path(train_reveal(config, output_dir, reveal, resume=True))


def reveal_program(fallback: Callable[[str], str] = extract_program) -> Callable[[str], str]:
    """Program extraction for a ReVeal-trained model in a shared scaffold: its <generation-answer> when it wrote
    one (`reveal_extract`), else the usual extraction (`fallback`)."""

    def extract(completion: str) -> str:
        return (
            reveal_extract(completion) if "<generation-answer" in completion.lower() else fallback(completion)
        )

    return extract


def evaluation(exp: Any) -> Scaffold:
    """ReVeal's rounds (scaffold "reveal": public-test feedback; "reveal-own": its own tests) in the experiment's
    prompt format, or a shared scaffold that reads the <generation-answer> (module docstring)."""
    if exp.scaffold in REVEAL_SCAFFOLDS:
        return REVEAL_SCAFFOLDS[exp.scaffold](chat=prompt_format(exp)["chat"])
    return get_scaffold(exp.scaffold, extract=reveal_program())


METHOD = Method(
    "reveal",
    train=train,
    config=config,
    mode=MODE,
    recipes=("reveal",),
    scaffold=ReVealScaffold.name,
    evaluation=evaluation,
    budget=(*TRAINER_BUDGET, "rounds"),
    cost=1,
)
