"""One path from an experiment (or a command line) to a MurphyConfig: walked call by call (`sys.setprofile`), each
layer of docs/architecture.md on the path is entered once — the methods layer builds the fields, the config layer
(`MurphyConfig.layered`: presets, fields, the mode's G2 / S, validation) makes the config — and the concepts keep one
name each down to TRL's arguments (the model: `model`; G1: `g1`, TRL's `num_generations` only in the GRPOConfig).

A stop is a call into a package module from another one (generated code such as a dataclass's `__init__` is
transparent); a layer is entered when a stop comes from another layer. The tables a layer consults on the way (the
modes, the credit rules, a field's type, the one-line refusal: layers 0-2) are leaves, not stops of the path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_architecture import LAYER

import murphy_lab
from murphy_lab import experiments as X
from murphy_lab.config import MurphyConfig
from murphy_lab.methods import get_method
from murphy_lab.train import accepted, config_from_args, parser
from murphy_lab.trl_args import TRL_NAMES

PACKAGE = Path(murphy_lab.__file__).parent
# core, tasks / executor / policy, rollout / modes: tables consulted, not stops of the path
LEAVES = {0, 1, 2}


def module_of(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_relative_to(PACKAGE):
        return None
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")


def layer_of(module: str) -> int:
    return LAYER[module.split(".")[0]] if module != "" else 0


def walk(fn):
    """(what fn returns, its stops: [(module, function)] for every call into a package module from another)."""
    stops = []

    def on_call(frame, event, arg):
        if event != "call":
            return
        callee = module_of(frame.f_code.co_filename)
        if callee is None:
            return
        caller = frame.f_back
        while caller is not None and module_of(caller.f_code.co_filename) is None:
            # generated code (a dataclass's __init__), the standard library: transparent
            caller = caller.f_back
        if caller is None or module_of(caller.f_code.co_filename) != callee:
            stops.append(
                (callee, frame.f_code.co_name, module_of(caller.f_code.co_filename) if caller else None)
            )

    sys.setprofile(on_call)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, stops


def layer_entries(stops) -> dict[int, int]:
    """{layer: times the walk entered it from another layer}, leaves left out."""
    out: dict[int, int] = {}
    for callee, _, caller in stops:
        layer = layer_of(callee)
        if layer in LEAVES or (caller is not None and layer_of(caller) == layer):
            continue
        out[layer] = out.get(layer, 0) + 1
    return out


EXPERIMENTS = [
    X.Experiment("smoke", "tiny", "murphy", credit="mers", gamma=0.9, pruning="intrap"),
    X.Experiment("toy", "toy", "grpo_mt"),
    X.Experiment("paper", "Qwen3-1.7B", "murphy", benchmarks=("HumanEval",)),
]


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: f"{e.profile.name}-{e.method}")
def test_an_experiment_reaches_its_config_entering_each_layer_once(exp, monkeypatch):
    import murphy_lab.config as config_mod

    monkeypatch.setattr(config_mod, "_cuda_available", lambda: True)  # the paper recipe's vLLM and bf16
    method = get_method(exp.method)
    method.config(exp, "m")  # imports and caches warm: the walk sees the path, not the first import
    cfg, stops = walk(lambda: method.config(exp, "m"))
    assert isinstance(cfg, MurphyConfig) and cfg.model == "m"
    entries = layer_entries(stops)
    assert entries == {LAYER["methods"]: 1, LAYER["config"]: 1}, stops  # methods, then the config: once each
    # the one way into the config layer
    assert [
        s[:2] for s in stops if layer_of(s[0]) == LAYER["config"] and layer_of(s[2]) != LAYER["config"]
    ] == [("config", "layered")]


def test_a_command_line_reaches_its_config_entering_each_layer_once():
    a = parser().parse(
        [
            "--config",
            "reproduce/configs/qwen3-1.7b/murphy_mars.yaml",
            "--set",
            "g1=4",
            "per_device_train_batch_size=4",
            "task_args.n=10",
        ]
    )
    accepted(a)
    (cfg, recorded), stops = walk(lambda: accepted(a))
    assert (cfg.g1, cfg.task_args["n"], recorded) == (4, 10, None)
    # the command line, then the config
    assert layer_entries(stops) == {LAYER["train"]: 1, LAYER["config"]: 1}, stops
    assert [
        s[:2] for s in stops if layer_of(s[0]) == LAYER["config"] and layer_of(s[2]) != LAYER["config"]
    ] == [("config", "layered")]


def test_a_layer_visited_twice_is_caught():
    """The walk itself: the old way, a config built and then validated in a second call from outside, enters the
    config layer twice."""
    exp = EXPERIMENTS[0]
    fields = get_method(exp.method).config  # warm
    fields(exp, "m")
    _, stops = walk(lambda: MurphyConfig.for_profile(exp.profile, model="m").validate())
    assert layer_entries(stops)[LAYER["config"]] == 2


def test_the_model_and_g1_have_one_name_from_the_command_line_to_trl():
    cfg = config_from_args(None, "smoke", ["model=./m", "g1=6", "per_device_train_batch_size=6"])
    assert (cfg.model, cfg.g1) == ("./m", 6)
    # the model goes to the trainer as is
    assert TRL_NAMES["num_generations"] == "g1" and "model" not in TRL_NAMES
    with pytest.raises(ValueError, match=r"trl.num_generations is g1: set g1 instead"):
        MurphyConfig.for_profile("smoke", trl={"num_generations": 6}).validate()
    params = get_method("murphy").config.__code__.co_varnames[:2]
    # a method's config takes `model` (the weights), `exp.model` names its key
    assert params == ("exp", "model")
