"""murphy_lab.profiles: one registry of run profiles, read by the trainer's config, µCode's config and the tables."""

from __future__ import annotations

import dataclasses

import pytest

from murphy_lab import profiles
from murphy_lab.baselines.mucode.config import MuCodeConfig
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import get_profile, resolve


def test_the_four_profiles_are_registered_without_importing_the_toy_world_first():
    assert {"smoke", "toy", "toy-full", "paper"} <= set(profiles.PROFILES)


@pytest.mark.parametrize("name", ["smoke", "toy", "toy-full"])
def test_every_cpu_profile_gives_a_valid_trainer_and_mucode_config(name):
    MurphyConfig.for_profile(name).validate()
    MuCodeConfig.for_profile(name).validate()


def test_unknown_profile_is_a_value_error_naming_the_known_ones():
    for build in (MurphyConfig.for_profile, MuCodeConfig.for_profile, get_profile):
        with pytest.raises(ValueError, match="profile must be one of .*smoke"):
            build("huge")


def test_a_profile_without_a_builder_needs_model_and_tasks(tmp_path):
    with pytest.raises(ValueError, match="profile: 'paper' builds no model"):
        resolve(MurphyConfig(model="Qwen/Qwen3-1.7B"), tmp_path)


def test_the_toy_profile_trains_on_its_train_tasks_count(tmp_path):
    model, tasks = resolve(MurphyConfig.for_profile("toy", model="given/model"), tmp_path)
    assert model == "given/model" and len(tasks) == profiles.TRAIN_DATA["toy"][1]["n"] == 512


def test_config_and_mucode_read_their_presets_from_the_registry(monkeypatch):
    toy = get_profile("toy")
    monkeypatch.setitem(
        profiles.PROFILES,
        "toy",
        profiles.Profile("toy", trainer={**toy.trainer, "g1": 2}, mucode={**toy.mucode, "rollouts": 3}),
    )
    assert (MurphyConfig.for_profile("toy").g1, MuCodeConfig.for_profile("toy").rollouts) == (2, 3)


def test_a_profile_is_resolved_once_and_passed_as_it_is():
    toy = get_profile("toy")
    assert get_profile(toy) is toy  # a resolved Profile is handed on, never looked up again
    # recorded by name
    assert MurphyConfig.for_profile(toy).profile == MuCodeConfig.for_profile(toy).profile == "toy"
    assert toy == dataclasses.replace(toy, seeds=(9,)) and hash(toy) == hash("toy")  # identified by its name
    assert toy != get_profile("toy-full") and repr(toy) == "<Profile 'toy'>"


def test_the_toy_benchmark_is_the_toy_worlds_held_out_split_through_the_task_source_registry():
    from murphy_lab.toy.world import make_tasks

    tasks = profiles.benchmark_tasks("toy", "toy", 200)
    assert [t.prompt for t in tasks] == [
        t.prompt for t in make_tasks("test", n=200, seed=profiles.TOY_TEST_SEED)
    ]
    assert [t.task_id for t in profiles.benchmark_tasks("smoke", "toy", 4)] == [t.task_id for t in tasks[:4]]
    assert (
        len(profiles.benchmark_tasks("toy-full", "toy")) == 288
        and len(profiles.benchmark_tasks("toy", "toy")) == 200
    )
    with pytest.raises(
        ValueError, match=r"benchmark_args: the 'toy' loader has no argument 'nn' \(did you mean 'n'"
    ):
        profiles.check_benchmark("toy", "toy", nn=3)


def test_a_config_never_shares_its_nested_presets_with_the_registry():
    cfg = MurphyConfig.for_profile("toy")
    cfg.executor["workers"] = 99  # e.g. a notebook adjusting its own run
    assert get_profile("toy").trainer["executor"]["workers"] == 2
    assert MurphyConfig.for_profile("toy").executor["workers"] == 2


def test_every_training_set_and_profile_benchmark_names_a_task_source_with_arguments_its_loader_takes():
    from murphy_lab.tasks import check_source

    for source, args in profiles.TRAIN_DATA.values():
        check_source(source, args)
    for profile in profiles.PROFILES.values():
        for benchmark in profile.benchmarks:
            profiles.check_benchmark(profile, benchmark)
