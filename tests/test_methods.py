"""murphy_lab.methods: one registry entry per method, and one rule for the tasks every method trains on."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import murphy_lab.experiments as X
from murphy_lab.methods import ENTRIES, METHODS, Method, get_method
from murphy_lab.profiles import TRAIN_DATA, get_profile, training_set
from murphy_lab.tasks import load_tasks


class Stop(Exception):
    """Raised where a method's pipeline has its training tasks in hand: nothing is trained."""


def test_every_registered_name_resolves_to_its_own_entry():
    assert METHODS == tuple(ENTRIES) and {"base", "grpo", "grpo_mt", "mucode", "reveal", "murphy"} <= set(
        METHODS
    )
    for name in METHODS:
        m = get_method(name)
        assert isinstance(m, Method) and m.name == name
        assert m.trains == (m.config is not None) == (name != "base")
        assert m.trains or not (m.recipes or m.mode)  # a method that trains nothing has no recipe and no mode


def test_an_unknown_method_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"method must be one of \('base', 'grpo'"):
        get_method("ppo")


def test_importing_the_registry_and_planning_import_no_baseline():
    """The experiments layer finds a method through the registry: planning a µCode or ReVeal run imports the
    method's entry only when it is asked for, and `murphy_lab.methods` itself imports no method."""
    code = (
        "import sys, murphy_lab.methods as M; assert not [m for m in sys.modules if 'baselines' in m], 1; "
        "M.get_method('murphy'); assert not [m for m in sys.modules if 'baselines' in m], 2; "
        "M.get_method('mucode'); assert 'murphy_lab.baselines.mucode.method' in sys.modules, 3"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-400:]


def _tasks_trained_on(exp: X.Experiment, tmp_path: Path, monkeypatch) -> list[str]:
    """The task ids a method's real training pipeline (`default_train`) gets, captured where it has them."""
    import murphy_lab.baselines.mucode.pipeline as mucode
    import murphy_lab.trainer.run as lifecycle
    from murphy_lab.profiles import resolve

    seen = []

    # the trainer's lifecycle (GRPO, GRPO-MT, MURPHY, ReVeal) resolves its tasks here
    def record(config, workdir):
        model, tasks = resolve(config, workdir)
        seen.append([t.task_id for t in tasks])
        raise Stop

    def mucode_run(cfg, out, base, train_tasks, *rest):  # µCode's rounds, after its data budget is applied
        seen.append([t.task_id for t in train_tasks])
        raise Stop

    monkeypatch.setattr(lifecycle, "resolve", record)
    monkeypatch.setattr(mucode, "_run", mucode_run)
    monkeypatch.setattr(mucode, "Executor", lambda **kw: object())
    with pytest.raises(Stop):
        X.default_train(exp, "base/model", tmp_path / f"{exp.method}-{exp.seed}")
    return seen.pop()


@pytest.mark.parametrize("profile", ["toy", "smoke"])
def test_every_method_trains_on_the_same_tasks_for_every_seed(profile, tmp_path, monkeypatch):
    """GRPO, GRPO-MT, MURPHY, µCode and ReVeal get the same training set for seeds 0, 1, 2 (µCode its first
    `n_train_tasks`, its data budget). Before, µCode and ReVeal drew theirs with the training seed, the RL methods
    always with seed 0, and µCode 200 of its own."""
    methods = [m for m in METHODS if get_method(m).trains]
    got = {
        (m, s): _tasks_trained_on(
            X.Experiment(profile, "m", m, seed=s, train_data=get_profile(profile).train_data),
            tmp_path,
            monkeypatch,
        )
        for m in methods
        for s in (0, 1, 2)
    }
    (common,) = {tuple(ids) for (m, _), ids in got.items() if m != "mucode"}
    n = get_profile(profile).mucode.get("n_train_tasks", 0) or len(common)
    assert all(tuple(ids) == common[:n] for (m, _), ids in got.items() if m == "mucode")
    source = training_set(get_profile(profile).train_data)
    assert common == tuple(t.task_id for t in load_tasks(source["tasks"], **source["task_args"]))


def test_every_methods_paper_config_names_the_one_training_set():
    from murphy_lab.methods import default_methods

    for method in (m for m in default_methods(get_profile("paper")) if get_method(m).trains):
        for seed in (0, 1, 2):
            (exp,) = X.plan("paper", methods=(method,), models=("Qwen3-4B",), seeds=(seed,))
            exp = dataclasses.replace(exp, overrides=(("use_vllm", False), ("bf16", False)))
            cfg = get_method(method).config(exp, "base")
            assert {"tasks": cfg.tasks, "task_args": cfg.task_args} == training_set("kodcode-1k")


def test_a_recipe_or_override_that_trains_on_other_tasks_is_refused_naming_the_field():
    exp = X.Experiment(
        "toy", "toy", "grpo", overrides=(("task_args", {"split": "train", "n": 512, "seed": 3}),)
    )
    with pytest.raises(
        ValueError, match=r"training field task_args=.* differs from the experiment's train_data"
    ):
        get_method("grpo").config(exp, "base")


def test_an_unknown_training_set_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="train_data must be one of"):
        X.Experiment("toy", "toy", "grpo", train_data="toy-2")
    assert set(TRAIN_DATA) == {"smoke", "toy", "kodcode-1k", "mbpp-train"}


def test_a_sample_matched_override_outside_the_methods_budget_fields_is_refused(monkeypatch):
    from murphy_lab import profiles

    prof = dataclasses.replace(
        get_profile("toy"), name="toy-matched", matched=(("grpo_mt", (("learning_rate", 1.0),)),)
    )
    monkeypatch.setitem(profiles.PROFILES, prof.name, prof)
    with pytest.raises(ValueError, match=r"changes \['learning_rate'\], which are not its budget fields"):
        X.plan(prof.name)


def test_the_trainers_methods_train_in_their_modes():
    from murphy_lab.modes import mode

    ebase = dict(profile="toy", model="toy", overrides=(("g1", 8), ("g2", 8)))
    for method in ("grpo", "grpo_mt", "murphy", "reveal"):
        m = get_method(method)
        cfg = m.config(X.Experiment(method=method, **ebase), "m")
        if method == "reveal":  # its rounds: the chains of its mode, S = rounds (`as_chains`)
            from murphy_lab.baselines.reveal.config import as_chains
            from murphy_lab.baselines.reveal.method import configs

            cfg = as_chains(*configs(X.Experiment(method=method, **ebase), "m"))
        assert {k: getattr(cfg, k) for k in mode(m.mode).fields()} == mode(m.mode).fields()


# --- a new method: named mode, recipes opt-in -----------------------------------------------------------------------
def register(monkeypatch, method: Method) -> None:
    """Register `method` as if it had its own module and ENTRIES line (undone after the test)."""
    import importlib
    import types

    import murphy_lab.methods as methods_mod

    # the module (the package exports `plan`)
    plan_mod = importlib.import_module("murphy_lab.experiments.plan")

    module = types.ModuleType("murphy_lab_test_method")
    module.METHOD = method
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(ENTRIES, method.name, f"{module.__name__}:METHOD")
    for where in (methods_mod, plan_mod):
        monkeypatch.setattr(where, "METHODS", tuple(ENTRIES))


def chains_variant(**kw) -> Method:
    """A method on GRPO-MT's chains under a name of its own, with no paper recipe: what a new method starts as."""
    from murphy_lab.methods import murphy

    kw = {"mode": "grpo_mt", **kw}
    return Method(
        "chains_variant", train=murphy.train, config=murphy.config, budget=murphy.TRAINER_BUDGET, **kw
    )


def test_a_method_takes_its_config_from_the_mode_it_names_not_from_its_name(monkeypatch):
    register(monkeypatch, chains_variant())
    exp = X.Experiment("toy", "toy", "chains_variant", overrides=(("g1", 4),))
    cfg = get_method("chains_variant").config(exp, "m")
    assert (cfg.mode, cfg.g2) == ("grpo_mt", 1)


def test_a_method_without_paper_recipes_is_valid_and_trains_on_the_presets(monkeypatch):
    register(monkeypatch, chains_variant())
    assert get_method("chains_variant").recipes == ()
    exps = X.plan("smoke", methods=["chains_variant"])
    cfg = get_method("chains_variant").config(exps[0], "m")
    assert cfg.validate().mode == "grpo_mt"


def test_the_paper_profile_refuses_a_method_without_recipes_naming_the_files(monkeypatch):
    register(monkeypatch, chains_variant())
    # when the plan is made, before any model loads or job starts
    with pytest.raises(FileNotFoundError) as err:
        X.plan("paper", methods=["chains_variant"])
    msg = str(err.value)
    assert "profile 'paper' trains from recipes only" in msg
    assert "\n" not in msg and "Method.recipes" in msg
    for folder in ("qwen3-1.7b", "qwen3-4b", "olmo2-7b"):
        assert f"reproduce/configs/{folder}/chains_variant.yaml" in msg


def test_the_paper_profile_plans_by_default_the_methods_that_ship_recipes(monkeypatch):
    from murphy_lab.methods import default_methods

    paper = default_methods(get_profile("paper"))
    assert {"base", "grpo", "grpo_mt", "mucode", "reveal", "murphy"} <= set(paper)  # the paper's columns
    register(monkeypatch, chains_variant())
    # recipes are opt-in: the new method is left out there
    assert default_methods(get_profile("paper")) == paper
    assert "chains_variant" in default_methods(get_profile("smoke"))  # and trained on the presets elsewhere
    assert "chains_variant" not in {e.method for e in X.plan("paper")}  # plan("paper") still plans


def test_the_paper_columns_and_the_trainers_methods_declare_their_recipes_and_modes():
    shipped = {name: (get_method(name).mode, get_method(name).recipes) for name in METHODS}
    assert shipped["grpo"] == ("grpo", ("grpo",)) and shipped["grpo_mt"] == ("grpo_mt", ("grpo_mt",))
    assert shipped["murphy"][0] == "murphy" and "murphy_mars" in shipped["murphy"][1]
    assert shipped["reveal"] == ("grpo_mt", ("reveal",)) and shipped["mucode"] == (None, ("mucode",))
    assert shipped["base"] == (None, ())


def test_a_method_entry_is_checked_when_it_is_made():
    with pytest.raises(ValueError, match=r"mode must be one of \('murphy', 'grpo_mt', 'grpo'.*got 'ppo'"):
        chains_variant(mode="ppo")
    with pytest.raises(ValueError, match="recipes need a `recipe` that picks one"):
        chains_variant(recipes=("a", "b"))
    assert chains_variant(recipes=("a",)).recipe_name(None) == "a"


@pytest.mark.parametrize("method", ["grpo", "murphy", "reveal"])
def test_an_unknown_trainer_override_is_refused_naming_it(method):
    exp = X.Experiment("toy", "toy", method, overrides=(("max_step", 3),))
    with pytest.raises(ValueError, match="max_step"):
        get_method(method).config(exp, "m")
