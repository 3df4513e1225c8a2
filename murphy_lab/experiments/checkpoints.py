"""Checkpoints trained elsewhere, handed in by run: `model_paths` keys, which run each serves, and ambiguity refused.

A run is addressed by its label, `<model>/<method>/<variant>/seed<N>` (`run_label`: "Qwen3-1.7B/murphy/mars/seed0",
"Qwen3-1.7B/grpo/-/seed2", "Qwen3-1.7B/murphy/mers_0.9/seed1"), or by its `train_key` (the 16-hex name of its
checkpoint folder). A `model_paths` key is one of

    "<model>"                                 the base model of every run of that model (built once, never trained)
    "<model>/<method>/<variant>/seed<N>"      the trained checkpoint of exactly one run
    "<train_key>"                             the same, by the checkpoint folder's name
    a shorter label ("<model>/<method>", "<model>/<method>/seed<N>", "<model>/<method>/<variant>")
                                              accepted only where it serves ONE run of the plan

A key that would serve several runs of the plan (three seeds, or MaRS and MeRS, which share the method name) is
refused with one line naming them: the "± over seeds" column would otherwise be one checkpoint's evaluation noise.
Each finished run records where its model came from (`done.json`: `trained` = now | reused | given, and
`model_source` = the `model_paths` key that gave it), and `results_frame` carries both into the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from murphy_lab.experiments.plan import Experiment, train_key
from murphy_lab.methods import get_method
from murphy_lab.suggest import did_you_mean

SEED = re.compile(r"seed(\d+)")
HEX_KEY = re.compile(r"[0-9a-f]{16}")


def run_label(exp: Experiment) -> str:
    """The run's address: `<model>/<method>/<variant>/seed<N>` (variant "-" for a baseline at the step budget)."""
    return f"{exp.model}/{exp.method}/{exp.variant}/seed{exp.seed}"


def key_matches(key: str, exp: Experiment) -> bool:
    """Whether `model_paths` key `key` names this (trained) run: its train_key, or a label whose given parts —
    model and method always, then optionally the variant and `seed<N>` — all agree with the run's."""
    if HEX_KEY.fullmatch(key):
        return key == train_key(exp)
    parts = key.split("/")
    if len(parts) < 2 or parts[0] != exp.model or parts[1] != exp.method:
        return False
    rest = parts[2:]
    if rest and SEED.fullmatch(rest[-1]):
        if int(SEED.fullmatch(rest[-1]).group(1)) != exp.seed:
            return False
        rest = rest[:-1]
    if len(rest) > 1:
        return False
    return not rest or rest[0] == exp.variant


def given_checkpoint(exp: Experiment, model_paths: Mapping[str, str]) -> tuple[str, str] | None:
    """(key, path) of the checkpoint `model_paths` hands in for this trained run, or None. The most specific key
    wins (the full label or train_key over a shorter label)."""
    keys = [k for k in model_paths if k != exp.model and key_matches(k, exp)]
    if not keys:
        return None
    key = max(keys, key=lambda k: (bool(HEX_KEY.fullmatch(k)), k.count("/")))
    return key, str(model_paths[key])


def check_model_paths(experiments: Iterable[Experiment], model_paths: Mapping[str, str] | None) -> None:
    """Refuse, in one line, a `model_paths` key that would serve several runs of this plan (distinct checkpoints),
    or one that serves none of them (a typo: it names the nearest run label)."""
    if not model_paths:
        return
    experiments = list(experiments)
    trained = [e for e in experiments if get_method(e.method).trains]
    models = {e.model for e in experiments}
    for key in model_paths:
        if key in models:
            continue  # a base model: one for every run of that model
        served = {train_key(e): run_label(e) for e in trained if key_matches(key, e)}
        if len(served) > 1:
            labels = sorted(set(served.values()))
            shown = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
            raise ValueError(
                f"model_paths key {key!r} would serve {len(served)} runs ({shown}): one checkpoint per run, keyed "
                f"'<model>/<method>/<variant>/seed<N>' (e.g. {labels[0]!r}); `python -m murphy_lab.experiments.jobs "
                "list` prints every run's label"
            )
        if not served:
            known = sorted({run_label(e) for e in trained} | models)
            raise ValueError(
                f"model_paths key {key!r} names no run of this plan{did_you_mean(key, known)}; keys are "
                f"a model ({', '.join(sorted(models))}) or a run label '<model>/<method>/<variant>/seed<N>'"
            )


__all__ = ["check_model_paths", "given_checkpoint", "key_matches", "run_label"]
