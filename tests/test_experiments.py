"""murphy_lab.experiments: config keys, caching, checkpoint reuse, rebuild-from-cache, setup; train/evaluate are injected fakes."""

import json
from pathlib import Path

import pandas as pd
import pytest

from murphy_lab import experiments as X
from murphy_lab.methods import METHODS, get_method
from murphy_lab.methods.recipes import RECIPE_DIRS, recipe_path
from murphy_lab.profiles import get_profile, not_run_note


class Fakes:
    """Counting stand-ins for train / evaluate / base model (tests only: no model, no executor)."""

    def __init__(self):
        self.trained, self.evaluated = [], []

    def base(self, exp, cache_dir):
        return "base-model"

    def train(self, exp, base, out):
        self.trained.append(exp)
        (Path(out) / "final").mkdir()
        (Path(out) / "metrics.jsonl").write_text(json.dumps({"step": 1, "time/step_s": 1.0}) + "\n")
        return Path(out) / "final"

    def evaluate(self, exp, model_dir, bench):
        self.evaluated.append((exp, model_dir, bench))
        return pd.DataFrame(
            {"difficulty": "all", "k": list(exp.iters), "pass@1": 50.0, "std": 0.0, "n_tasks": 4}
        )

    def kw(self):
        return dict(train_fn=self.train, evaluate_fn=self.evaluate, base_model_fn=self.base)


def exp(**kw):
    return X.Experiment(**{"profile": "smoke", "model": "tiny", "method": "murphy", "iters": (1, 2), **kw})


@pytest.fixture
def fakes():
    return Fakes()


def test_run_key_changes_with_each_config_field():
    base = X.run_key(exp())
    for change in (
        dict(seed=1),
        dict(method="grpo_mt"),
        dict(credit="mers"),
        dict(gamma=0.9, credit="mers"),
        dict(pruning="interp"),
        dict(benchmarks=("HumanEval",)),
        dict(scaffold="lats"),
        dict(runs=5),
    ):
        assert X.run_key(exp(**change)) != base, change


def test_run_key_changes_with_code_version():
    assert X.run_key(exp(), version="0.1.0+gaaa") != X.run_key(exp(), version="0.1.0+gbbb")


def test_train_key_ignores_evaluation_fields():
    assert X.train_key(exp(scaffold="lats", runs=7)) == X.train_key(exp())
    assert X.run_key(exp(scaffold="lats")) != X.run_key(exp())


def test_base_method_has_no_train_key():
    assert X.train_key(exp(method="base")) is None


def test_finished_run_is_not_recomputed(tmp_path, fakes):
    first = X.run_experiment(exp(), tmp_path, **fakes.kw())
    again = X.run_experiment(exp(), tmp_path, **fakes.kw())
    assert (first.cached, again.cached) == (False, True)
    assert len(fakes.trained) == 1 and len(fakes.evaluated) == 1
    pd.testing.assert_frame_equal(first.results, again.results)


def test_checkpoint_is_reused_by_another_scaffold(tmp_path, fakes):
    X.run_experiment(exp(), tmp_path, **fakes.kw())
    X.run_experiment(exp(scaffold="lats"), tmp_path, **fakes.kw())
    assert len(fakes.trained) == 1
    # the same model folder: the trainer's returned path
    assert fakes.evaluated[1][1] == fakes.evaluated[0][1]
    assert fakes.evaluated[1][1].endswith("final")


def test_train_false_without_checkpoint_names_where_it_looked(tmp_path, fakes):
    with pytest.raises(FileNotFoundError, match="checkpoints"):
        X.run_experiment(exp(), tmp_path, train=False, **fakes.kw())
    assert fakes.trained == []


def test_model_paths_replace_training(tmp_path, fakes):
    X.run_experiment(exp(), tmp_path, train=False, model_paths={"tiny/murphy": "/some/ckpt"}, **fakes.kw())
    assert fakes.trained == [] and fakes.evaluated[0][1] == "/some/ckpt"


def _seeds_by_variants():
    return X.plan(
        "smoke",
        methods=("murphy",),
        seeds=(0, 1),
        variants=({}, {"credit": "mers", "gamma": 0.9}),
        backend="real",
    )


def test_model_paths_give_each_run_of_seeds_and_variants_its_own_checkpoint(tmp_path, fakes):
    plan = _seeds_by_variants()
    paths = {X.run_label(e): f"/ckpt/{e.variant}/{e.seed}" for e in plan}
    assert len(plan) == 4 and len(set(paths)) == 4  # 2 seeds x 2 variants, 4 labels
    runs = X.run_all(plan, tmp_path, train=False, model_paths=paths, **fakes.kw())
    evaluated = [model_dir for _, model_dir, _ in fakes.evaluated]
    assert fakes.trained == [] and sorted(evaluated) == sorted(paths.values())  # 4 distinct checkpoints
    df = X.results_frame(runs)
    assert set(df["trained"]) == {"given"}
    assert set(df["model_source"]) == {f"model_paths[{k!r}]" for k in paths}


def test_model_paths_key_serving_several_runs_is_refused_in_one_line(tmp_path, fakes):
    for key in ("tiny/murphy", "tiny/murphy/seed0", "tiny/murphy/mars"):  # 4, 2 (two variants), 2 (two seeds)
        with pytest.raises(ValueError, match="would serve [24] runs") as err:
            X.run_all(_seeds_by_variants(), tmp_path, train=False, model_paths={key: "/one"}, **fakes.kw())
        assert "\n" not in str(err.value) and "<model>/<method>/<variant>/seed<N>" in str(err.value)
    assert fakes.evaluated == []  # refused before anything ran


def test_model_paths_key_naming_no_run_is_refused(tmp_path, fakes):
    with pytest.raises(ValueError, match="names no run of this plan .*did you mean 'tiny/murphy/mars/seed0'"):
        X.run_all(
            _seeds_by_variants(),
            tmp_path,
            train=False,
            model_paths={"tiny/murphy/marz/seed0": "/x"},
            **fakes.kw(),
        )


def test_model_paths_train_key_and_short_key_for_a_single_run(tmp_path, fakes):
    one = exp(seed=3)
    X.run_experiment(one, tmp_path, train=False, model_paths={X.train_key(one): "/by/key"}, **fakes.kw())
    X.run_all([exp(seed=4)], tmp_path, train=False, model_paths={"tiny/murphy": "/short"}, **fakes.kw())
    assert [d for _, d, _ in fakes.evaluated] == ["/by/key", "/short"]


def test_table_says_where_each_checkpoint_came_from(tmp_path, fakes):
    runs = [
        X.run_experiment(exp(), tmp_path, **fakes.kw()),
        X.run_experiment(exp(method="base"), tmp_path, **fakes.kw()),
        X.run_experiment(exp(scaffold="lats"), tmp_path, **fakes.kw()),
    ]
    df = X.results_frame(runs).drop_duplicates("run_key")
    assert list(df["trained"]) == ["now", "base", "reused"]
    assert list(df["model_source"])[:2] == ["trained here", "profile base model"]
    assert list(df["model_source"])[2].startswith("cache ")


def test_base_method_is_evaluated_without_training(tmp_path, fakes):
    X.run_experiment(exp(method="base"), tmp_path, **fakes.kw())
    assert fakes.trained == [] and fakes.evaluated[0][1] == "base-model"


def test_failed_evaluation_leaves_no_finished_run(tmp_path, fakes):
    def broken(exp, model_dir, bench):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        X.run_experiment(exp(), tmp_path, **{**fakes.kw(), "evaluate_fn": broken})
    assert not list((tmp_path / "runs").glob("*/done.json"))
    assert not X.run_experiment(exp(), tmp_path, **fakes.kw()).cached


def test_run_folder_holds_config_results_and_metrics(tmp_path, fakes):
    run = X.run_experiment(exp(), tmp_path, **fakes.kw())
    cfg = json.loads((run.path / "config.json").read_text())
    assert cfg["method"] == "murphy" and cfg["code_version"] == X.code_version()
    assert (run.path / "eval.csv").exists() and run.metrics["time/step_s"].tolist() == [1.0]


def test_collect_rebuilds_from_cache_without_running(tmp_path, fakes):
    exps = [exp(seed=0), exp(seed=1), exp(method="base")]
    X.run_all(exps, tmp_path, **fakes.kw())
    calls = (len(fakes.trained), len(fakes.evaluated))
    runs = X.collect(exps, tmp_path)
    assert [r.experiment for r in runs] == exps
    assert (len(fakes.trained), len(fakes.evaluated)) == calls


def test_collect_any_code_version_finds_an_older_run(tmp_path, fakes, monkeypatch):
    monkeypatch.setenv("MURPHY_LAB_CODE_VERSION", "old")
    X.run_experiment(exp(), tmp_path, **fakes.kw())
    monkeypatch.setenv("MURPHY_LAB_CODE_VERSION", "new")
    assert X.collect([exp()], tmp_path) == []
    found = X.collect([exp()], tmp_path, any_code_version=True)
    assert len(found) == 1 and found[0].info["code_version"] == "old"


def test_code_version_can_be_pinned_by_environment(monkeypatch):
    monkeypatch.setenv("MURPHY_LAB_CODE_VERSION", "pinned")
    assert X.code_version() == "pinned"


def test_unknown_method_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="method"):
        exp(method="ppo")


def test_unknown_profile_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="profile"):
        exp(profile="huge")


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            dict(benchmarks=("HumanEva",)),
            "benchmarks: unknown task source 'HumanEva' (did you mean 'humaneval'?); known: ['humaneval', 'jsonl'",
        ),
        (
            dict(benchmarks=("toy", "jsonl")),  # a file-backed benchmark without its file
            "benchmark_args: the 'jsonl' loader needs ['path'] (e.g. benchmark_args={'jsonl': {'path': ...}})",
        ),
        (
            dict(benchmark_args={"toy": {"nn": 3}}),
            "benchmark_args: the 'toy' loader has no argument 'nn' (did you mean 'n'?); it takes ['split', 'n', 'seed'",
        ),
        (
            dict(benchmark_args={"mbpp": {"split": "test"}}),
            "benchmark_args: ['mbpp'] is not among the benchmarks ['toy']",
        ),
    ],
)
def test_a_plan_checks_its_benchmarks_and_their_arguments_when_it_is_made_in_one_line(
    fields, message, monkeypatch
):
    import murphy_lab.tasks.registry as registry

    read = []
    monkeypatch.setattr(registry, "load_tasks", lambda *a, **k: read.append(a))  # a plan loads no data
    for make in (lambda: X.plan("smoke", methods=("base", "murphy"), **fields), lambda: exp(**fields)):
        with pytest.raises(ValueError) as err:
            make()
        assert message in str(err.value) and "\n" not in str(err.value)
    assert read == []


def test_a_plan_takes_your_own_benchmark_file_and_its_evaluation_reads_it(tmp_path, monkeypatch):
    import murphy_lab.experiments.dispatch as dispatch

    path = tmp_path / "mine.jsonl"
    args = {"jsonl": {"path": str(path)}}
    exps = X.plan("smoke", methods=("base",), benchmarks=("toy", "jsonl"), benchmark_args=args)
    (e,) = exps
    assert e.own_benchmark_args("jsonl") == {"path": str(path)} and e.resolved()["benchmark_args"] == args
    # older runs keep their keys
    assert "benchmark_args" not in X.plan("smoke", methods=("base",))[0].resolved()
    asked = []
    monkeypatch.setattr(
        dispatch, "benchmark_tasks", lambda profile, b, n, **kw: asked.append((profile, b, n, kw))
    )
    dispatch.benchmark_tasks_for(e, "jsonl")
    assert asked == [(get_profile("smoke"), "jsonl", 4, {"path": str(path)})]


@pytest.mark.parametrize("profile", ["smoke", "toy", "toy-full", "paper"])
def test_the_registered_profiles_plan_and_every_experiment_carries_the_resolved_profile(profile):
    exps = X.plan(profile)
    assert exps and {e.profile for e in exps} == {get_profile(profile)}
    # resolved once, never copied or looked up again
    assert all(e.profile is get_profile(profile) for e in exps)
    assert exps[0].train_config()["profile"] == profile  # keys hash the name, as before


def test_plan_varies_only_murphy():
    exps = X.plan(
        "smoke", methods=("base", "reveal", "murphy"), variants=[{"credit": "mars"}, {"credit": "mers"}]
    )
    assert sorted((e.method, e.variant) for e in exps) == [
        ("base", "-"),
        ("murphy", "mars"),
        ("murphy", "mers_1.0"),
        ("reveal", "-"),
    ]


def test_mucode_and_reveal_are_trainable_table_methods():
    assert get_method("mucode").trains and get_method("reveal").trains and not get_method("base").trains


def test_smoke_plans_every_main_table_method_and_toy_leaves_out_mucode_and_reveal_with_a_reason():
    assert {e.method for e in X.plan("smoke")} == set(METHODS)
    assert {e.method for e in X.plan("toy")} == {"base", "grpo", "grpo_mt", "murphy"}
    assert "never taught" in not_run_note("toy", "reveal") and "rewards are zero" in not_run_note(
        "toy", "reveal"
    )
    assert "not run in the toy demo" in not_run_note("toy", "mucode")


def test_paper_plan_evaluates_reveal_on_livecodebench_only():
    exps = X.plan("paper", methods=("reveal", "murphy"), models=("Qwen3-4B",), seeds=(0,))
    assert {e.method: e.benchmarks for e in exps} == {
        "reveal": ("LCB-v6",),
        "murphy": ("HumanEval", "MBPP", "LCB-v6"),
    }


@pytest.mark.parametrize("method", ["grpo", "mucode", "reveal", "murphy"])
def test_default_train_is_the_methods_registry_entry(method, tmp_path, monkeypatch):
    import dataclasses

    import murphy_lab.experiments.dispatch as dispatch

    calls = []
    fake = dataclasses.replace(
        get_method(method), train=lambda e, base, out: calls.append((e, base, out)) or out / "m"
    )
    monkeypatch.setattr(dispatch, "get_method", lambda name: fake if name == method else get_method(name))
    e = exp(method=method)
    assert X.default_train(e, "base-model", tmp_path) == tmp_path / "m"
    assert calls == [(e, "base-model", tmp_path)]


def test_mucode_receives_only_its_own_config_fields_from_the_profile_overrides():
    cfg = get_method("mucode").config(
        exp(method="mucode", overrides=(("max_steps", 40), ("rounds", 1))), "base"
    )
    assert cfg.rounds == 1 and not hasattr(cfg, "max_steps")


def test_plan_uses_profile_defaults():
    (e,) = X.plan("smoke", methods=("base",))
    prof = get_profile("smoke")
    assert (e.benchmarks, e.iters, e.seed, e.n_eval_tasks) == (
        prof.benchmarks,
        prof.iters,
        0,
        prof.n_eval_tasks,
    )


def test_variant_labels():
    assert [
        exp(credit="mers", gamma=0.9).variant,
        exp(credit="mers").variant,
        exp(pruning="intrap").variant,
        exp(credit="none").variant,
    ] == [
        "mers_0.9",
        "mers_1.0",
        "mars+intrap",
        # a rule's own label (MeRS's only for MeRS): every rule of credit.CREDIT_RULES, no fall-through
        "none",
    ]


def test_stand_in_functions_need_stand_in_backend(tmp_path):
    with pytest.raises(ValueError, match="stand-in"):
        X.run_experiment(exp(), tmp_path, **X.STAND_INS)
    run = X.run_experiment(exp(backend="stand-in"), tmp_path, **X.STAND_INS)
    assert run.experiment.backend == "stand-in"


def test_paper_profile_fails_early_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="needs CUDA"):
        X.require_resources("paper")


def train_config(e: X.Experiment):
    return get_method(e.method).config(e, "m")


def test_train_config_maps_methods_and_pruning_budgets():
    ebase = dict(profile="toy", model="toy", overrides=(("g1", 8), ("g2", 8)))  # the paper's G1 = G2 = 8
    assert train_config(X.Experiment(method="grpo", **ebase)).turns == 1
    assert train_config(X.Experiment(method="grpo_mt", **ebase)).g2 == 1
    intrap = train_config(X.Experiment(method="murphy", pruning="intrap", **ebase))
    interp = train_config(X.Experiment(method="murphy", pruning="interp", **ebase))
    assert (intrap.b_traj, intrap.b_grp, interp.b_grp, interp.b_traj) == (
        4,
        None,
        4,
        None,
    )  # paper: 4 of G = 8


@pytest.mark.parametrize(
    "method, variant",
    [
        ("grpo", {}),
        ("grpo_mt", {}),
        ("murphy", {}),
        ("murphy", {"credit": "mers", "gamma": 0.9}),
        ("murphy", {"credit": "mers", "gamma": 1.0}),
        ("murphy", {"pruning": "intrap"}),
        ("murphy", {"pruning": "interp"}),
    ],
)
def test_every_paper_run_has_a_training_recipe(method, variant):
    for model in RECIPE_DIRS:
        path = recipe_path(X.Experiment("paper", model, method, **variant))
        assert path.is_file() and path.parent.name == RECIPE_DIRS[model]


def test_a_credit_rule_without_a_recipe_is_a_clear_error_not_another_rules_recipe():
    with pytest.raises(FileNotFoundError, match="murphy_none.yaml"):
        recipe_path(X.Experiment("paper", "Qwen3-4B", "murphy", credit="none"))


def test_pruning_variants_run_both_backup_orders_and_one_unpruned_row():
    variants = X.pruning_variants()
    assert variants == [
        {"pruning": "none"},
        {"pruning": "intrap", "backup_on": "full"},
        {"pruning": "intrap", "backup_on": "pruned"},
        {"pruning": "interp", "backup_on": "full"},
        {"pruning": "interp", "backup_on": "pruned"},
    ]
    exps = X.plan("smoke", methods=["murphy"], variants=variants)
    assert [e.variant for e in exps] == [
        "mars",
        "mars+intrap",
        "mars+intrap+backup_pruned",
        "mars+interp",
        "mars+interp+backup_pruned",
    ]
    assert len({X.train_key(e) for e in exps}) == 5


def test_backup_on_reaches_the_trainer_config():
    ebase = dict(profile="toy", model="toy", method="murphy", pruning="interp")
    assert train_config(X.Experiment(**ebase)).backup_on == "full"
    assert train_config(X.Experiment(**ebase, backup_on="pruned")).backup_on == "pruned"


def test_backup_on_pruned_without_pruning_is_rejected():
    with pytest.raises(ValueError, match="backup_on"):
        exp(backup_on="pruned")


def test_a_pruned_run_saved_before_backup_on_existed_loads_as_backup_on_pruned(tmp_path):
    run = X.run_experiment(exp(pruning="interp", backend="stand-in"), tmp_path, **X.STAND_INS)
    cfg = json.loads((run.path / "config.json").read_text())
    del cfg["backup_on"]  # what a run of the old code (backup on the pruned tree, no field) wrote
    (run.path / "config.json").write_text(json.dumps(cfg))
    assert X.load_run(run.path).experiment.backup_on == "pruned"


def test_setup_stops_the_paper_profile_without_cuda_before_anything_is_planned(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="needs CUDA"):
        X.setup("paper", tmp_path / "results", tmp_path / "cache")
    assert (
        X.setup("paper", tmp_path / "results", from_cache_only=True, torch_threads=None).profile.name
        == "paper"
    )


def test_setup_resolves_the_notebook_parameters(tmp_path):
    s = X.setup(
        "toy",
        tmp_path / "results",
        tmp_path / "cache",
        train=False,
        backend="stand-in",
        model_paths={"toy": "/m"},
        train_overrides={"max_steps": 3, "g1": 2},
        torch_threads=None,
    )
    assert s.out == tmp_path / "results" / "toy" and s.backend == "stand-in"
    # the profile's, then the notebook's
    assert s.overrides == (("max_steps", 40), ("g1", 2), ("max_steps", 3))
    assert s.run_kw["cache_dir"] == tmp_path / "cache" / "toy" and s.run_kw["train"] is False
    assert s.run_kw["train_fn"] is X.stand_in_train and s.run_kw["model_paths"] == {"toy": "/m"}
    (e,) = s.plan(methods=("murphy",), seeds=(0,))
    assert (e.backend, e.overrides) == ("stand-in", s.overrides)


def test_setup_runs_and_collects_through_the_same_session(tmp_path):
    s = X.setup("smoke", tmp_path / "results", tmp_path / "cache", backend="stand-in", torch_threads=None)
    exps = s.plan(methods=("base", "murphy"))
    assert [r.cached for r in s.run(exps)] == [False, False]
    again = X.setup(
        "smoke",
        tmp_path / "results",
        tmp_path / "cache",
        backend="stand-in",
        from_cache_only=True,
        torch_threads=None,
    )
    assert [r.experiment for r in again.run(exps)] == exps


def test_backend_must_be_real_or_stand_in():
    with pytest.raises(ValueError, match="backend must be one of"):
        X.backend_functions("auto")


@pytest.mark.slow  # two pools of spawned workers, each importing the package: ~17 s on the loaded machine
def test_parallel_run_all_gives_the_sequential_results_in_plan_order(tmp_path):
    exps = X.plan("smoke", methods=["base", "grpo", "murphy"], seeds=[0, 1], backend="stand-in")
    one = X.run_all(exps, tmp_path / "one", **X.STAND_INS)
    two = X.run_all(exps, tmp_path / "two", jobs=2, **X.STAND_INS)
    assert [r.experiment for r in two] == exps
    cols = ["method", "seed", "k", "pass@1"]
    assert X.results_frame(two)[cols].equals(X.results_frame(one)[cols])
    # every run cached: nothing is recomputed
    again = X.run_all(exps, tmp_path / "two", jobs=2, **X.STAND_INS)
    assert all(r.cached for r in again)


@pytest.mark.slow  # a pool of spawned workers: ~19 s on the loaded machine
def test_a_failed_parallel_run_names_its_experiment(tmp_path):
    exps = X.plan("smoke", methods=["grpo", "murphy"], seeds=[0], backend="stand-in")
    with pytest.raises(RuntimeError, match="experiment tiny/grpo/-/seed0 failed"):
        X.run_all(exps, tmp_path, jobs=2, **{**X.STAND_INS, "evaluate_fn": _fails_for_grpo})


def _fails_for_grpo(exp, model_dir, bench):  # module level: the worker processes unpickle it
    if exp.method == "grpo":
        raise ValueError("boom")
    return X.STAND_INS["evaluate_fn"](exp, model_dir, bench)


def test_the_committed_toy_runs_keep_their_keys():
    """Every committed run folder of reproduce/results (toy, toy-full) is still the run_key of an experiment its
    notebooks plan, at the code version it recorded: a new Experiment field (credit_args) is in the keys only when set."""
    from murphy_lab.experiments.jobs import notebook_plan

    root = Path(__file__).resolve().parents[1] / "reproduce" / "results"
    folders = sorted(root.glob("toy*/runs/*/config.json"))
    assert len(folders) >= 70
    planned = {}
    for profile in {p.parts[-4] for p in folders}:
        for exp in notebook_plan("all", profile):
            planned[json.dumps(exp.resolved(), sort_keys=True)] = exp
    for path in folders:
        cfg = json.loads(path.read_text())
        version = cfg.pop("code_version")
        exp = planned.get(json.dumps(cfg, sort_keys=True))
        assert exp is not None, path
        assert X.run_key(exp, version) == path.parent.name, path


# --- a credit rule's own knobs travel with the experiment ----------------------------------------------------------
def test_an_experiment_carries_a_credit_rules_knobs_to_its_config_keys_and_label():
    from murphy_lab.methods import get_method

    plain = X.Experiment("smoke", "tiny", "murphy", credit="gigpo")
    knob = X.Experiment("smoke", "tiny", "murphy", credit="gigpo", credit_args={"omega": 0.5})
    assert "credit_args" not in plain.train_config() and knob.train_config()["credit_args"] == {"omega": 0.5}
    assert X.train_key(plain) != X.train_key(knob) and knob.variant == "gigpo_1.0_omega0.5"
    assert get_method("murphy").config(knob, "m").credit_args == {"omega": 0.5}
    assert get_method("murphy").config(plain, "m").credit_args == {}
    with pytest.raises(ValueError, match=r"credit rule 'gigpo': omega must lie in \[0, 2\], got 3"):
        X.Experiment("smoke", "tiny", "murphy", credit="gigpo", credit_args={"omega": 3.0})
    with pytest.raises(ValueError, match="credit rule 'mars' has no knob 'omega'"):
        X.Experiment("smoke", "tiny", "murphy", credit="mars", credit_args={"omega": 1.0})


def test_the_credit_ablation_sweeps_any_knob_a_rule_declares(monkeypatch):
    """A rule with a knob of its own (registered here, as docs/architecture.md's recipe adds one) is swept by
    `credit_variants(knobs=...)`: planned, keyed, labelled in the table and paired against MaRS, with no edit to
    the experiments layer; the default ablation is unchanged (no knob swept unless asked)."""
    from murphy_lab import credit
    from murphy_lab.credit import CreditRule, Knob
    from murphy_lab.experiments import paper, verdicts
    from murphy_lab.experiments.jobs import notebook_plan

    kappa = Knob("kappa", 1.0, 0.5, 1.0, "κ, the weight of a node's own reward")
    monkeypatch.setitem(
        credit.CREDIT_RULES, "dmars", CreditRule("dmars", "discounted MaRS", credit.mars, (kappa,))
    )
    default = X.credit_variants("smoke")
    assert {"credit": "dmars", "gamma": 1.0} in default and not [v for v in default if "credit_args" in v]
    swept = X.credit_variants("smoke", credits=["mars", "dmars"], knobs={"kappa": [0.5, 0.75]})
    assert swept == [
        {"credit": "mars", "gamma": 1.0},
        {"credit": "dmars", "gamma": 1.0, "credit_args": {"kappa": 0.5}},
        {"credit": "dmars", "gamma": 1.0, "credit_args": {"kappa": 0.75}},
    ]
    exps = X.plan("smoke", methods=["murphy"], variants=swept)
    assert [e.variant for e in exps] == ["mars", "dmars_kappa0.5", "dmars_kappa0.75"]
    assert len({X.train_key(e) for e in exps}) == 3
    assert paper.credit_name("dmars_kappa0.5") == "discounted MaRS κ=0.5"
    assert verdicts.credit_pairs(swept) == (
        ("murphy:mars", "murphy:dmars_kappa0.5"),
        ("murphy:mars", "murphy:dmars_kappa0.75"),
    )
    assert {e.variant for e in notebook_plan("ablation_credit", "smoke", knobs={"kappa": [0.5]})} >= {
        "dmars_kappa0.5"
    }
    with pytest.raises(
        ValueError, match="no chosen credit rule has a knob 'kapa' \\(did you mean 'kappa'\\?\\)"
    ):
        X.credit_variants("smoke", knobs={"kapa": [0.5]})


def test_an_evaluation_killed_midway_keeps_the_benchmarks_it_finished(tmp_path, fakes):
    two = exp(benchmarks=("toy", "smoke"))

    def killed_on(bench_to_fail):
        def evaluate(e, model_dir, bench):
            if bench == bench_to_fail:
                raise KeyboardInterrupt  # the process killed in the second benchmark
            return fakes.evaluate(e, model_dir, bench)

        return evaluate

    with pytest.raises(KeyboardInterrupt):
        X.run_experiment(two, tmp_path, **{**fakes.kw(), "evaluate_fn": killed_on("smoke")})
    assert [b for _, _, b in fakes.evaluated] == ["toy"]
    run = X.run_experiment(two, tmp_path, **fakes.kw())
    assert [b for _, _, b in fakes.evaluated] == [
        "toy",
        "smoke",
    ]  # the first benchmark is not evaluated again
    assert list(run.results["benchmark"].unique()) == ["toy", "smoke"] and len(fakes.trained) == 1
    assert run.info["eval_resumed"] == ["toy"]
    assert sorted(p.name for p in run.path.iterdir()) == [
        "config.json",
        "done.json",
        "eval.csv",
        "metrics.jsonl",
    ]


def test_a_killed_evaluation_of_another_model_is_started_afresh(tmp_path, fakes):
    two = exp(method="base", benchmarks=("toy", "smoke"))
    first, second = tmp_path / "m1", tmp_path / "m2"
    for d in (first, second):
        d.mkdir()
        (d / "weights").write_text("w")

    def evaluate(e, model_dir, bench):
        if bench == "smoke" and model_dir == str(first):
            raise KeyboardInterrupt
        return fakes.evaluate(e, model_dir, bench)

    with pytest.raises(KeyboardInterrupt):
        X.run_experiment(
            two, tmp_path, **{**fakes.kw(), "evaluate_fn": evaluate, "base_model_fn": lambda e, c: str(first)}
        )
    X.run_experiment(
        two, tmp_path, **{**fakes.kw(), "evaluate_fn": evaluate, "base_model_fn": lambda e, c: str(second)}
    )
    assert [(Path(m).name, b) for _, m, b in fakes.evaluated] == [
        ("m1", "toy"),
        ("m2", "toy"),
        ("m2", "smoke"),
    ]
