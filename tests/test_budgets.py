"""Budget-matched baselines (Experiment.budget = "samples") and the budget curves (curve.csv, budget_curves)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import pandas as pd
import pytest

from murphy_lab import experiments as X
from murphy_lab import viz
from murphy_lab.experiments import paper_tables as T
from murphy_lab.experiments.store import curve_points
from murphy_lab.experiments.verdicts import budget_curves, budget_table, paired_verdicts
from murphy_lab.methods import get_method


def test_toy_full_plans_grpo_mt_and_mucode_twice_once_at_murphys_sample_budget():
    exps = X.plan("toy-full")
    cols = sorted({(e.method, e.variant) for e in exps})
    assert cols == [
        ("base", "-"),
        ("grpo", "-"),
        ("grpo_mt", "-"),
        ("grpo_mt", "samples"),
        ("mucode", "-"),
        ("mucode", "samples"),
        ("murphy", "mars"),
    ]
    assert {e.seed for e in exps if e.method == "murphy"} == {e.seed for e in exps if e.method == "grpo_mt"}
    assert len({e.seed for e in exps if e.method == "murphy"}) >= 5 and {e.n_eval_tasks for e in exps} == {
        288
    }
    assert {e.seed for e in exps if e.method == "mucode"} == {0, 1, 2}  # the profile's method_seeds


def test_the_matched_budget_gives_grpo_mt_more_chains_per_task_and_the_same_tasks_per_step():
    exps = X.plan("toy-full", methods=("grpo_mt", "murphy"), seeds=(0,))
    cfg = {e.variant: get_method(e.method).config(e, "model") for e in exps}
    steps, matched, murphy = cfg["-"], cfg["samples"], cfg["mars"]
    assert matched.g1 > steps.g1 and matched.g2 == steps.g2 == 1
    tasks = {name: c.per_device_train_batch_size // c.g1 for name, c in cfg.items()}
    assert tasks["samples"] == tasks["-"] == tasks["mars"]
    # sequences per task if nearly every first attempt fails: G1 + G2·G1 (GRPO-MT) against G1 + G2·G1 (MURPHY)
    assert matched.g1 * 2 == pytest.approx(murphy.g1 * (1 + murphy.g2), rel=0.05)


def test_a_matched_run_has_its_own_keys_and_the_default_keeps_its_old_ones():
    b, a = X.plan("toy-full", methods=("grpo_mt",), seeds=(0,))  # the sample-matched run is planned first
    assert (a.budget, b.budget) == ("steps", "samples")
    assert X.train_key(a) != X.train_key(b) and X.run_key(a) != X.run_key(b)
    assert "budget" not in a.train_config() and b.train_config()["budget"] == "samples"


def test_budget_samples_is_refused_for_murphy_and_base():
    with pytest.raises(ValueError, match="budget"):
        X.Experiment("toy", "toy", "murphy", budget="samples")
    with pytest.raises(ValueError, match="budget"):
        X.Experiment("toy", "toy", "grpo", budget="tokens")


def test_a_profile_without_a_matched_budget_refuses_to_plan_one():
    with pytest.raises(ValueError, match="no sample-matched budget"):
        X.plan("toy", matched=("grpo_mt",))


@pytest.fixture
def stand_in_runs(tmp_path):
    exps = X.plan("toy-full", seeds=(0, 1), backend="stand-in")
    return X.run_all(exps, tmp_path / "results" / "toy-full", **X.STAND_INS)


def test_a_curve_run_keeps_its_intermediate_checkpoints_scores(stand_in_runs):
    trained = [r for r in stand_in_runs if r.experiment.method != "base"]
    assert all((r.path / "curve.csv").exists() for r in trained)
    assert all(list(r.curve["step"]) == [1] and list(r.curve["k"]) == [3] for r in trained)
    assert all(r.curve is None for r in stand_in_runs if r.experiment.method == "base")


def test_the_main_table_has_a_sample_matched_column_and_a_verdict_against_it(stand_in_runs):
    results = X.results_frame(stand_in_runs)
    table = T.main_tables(T.aggregate(results), profile="toy-full")[0]
    assert "GRPO-MT (sample-matched)" in table.frame.columns
    lines = paired_verdicts(results, k=3)
    assert any(line.startswith("Murphy (MaRS) − GRPO-MT (sample-matched) at Iter-3") for line in lines)
    assert any(line.startswith("Murphy (MaRS) − µCode (sample-matched) at Iter-3") for line in lines)


def test_the_budget_table_of_stand_in_runs_has_every_trained_column(stand_in_runs):
    # the stand-in trainer's metrics carry the keys the budget table reads (they lacked completions/mean_length)
    t = budget_table(X.metrics_frame(stand_in_runs)).frame
    assert "GRPO-MT (sample-matched)" in set(t["method"]) and len(t) == 6


def test_the_budget_table_has_a_row_for_the_matched_baseline():
    m = pd.DataFrame(
        [
            dict(
                method="grpo_mt",
                variant=v,
                seed=0,
                step=1,
                **{
                    "trajectories/total": tot,
                    "trajectories/kept": tot,
                    "completions/mean_length": 10.0,
                    "time/step_s": 1.0,
                },
            )
            for v, tot in (("-", 60), ("samples", 150))
        ]
    )
    t = budget_table(m).frame.set_index("method")
    assert t.loc["GRPO-MT", "sampled sequences"] == 60
    assert t.loc["GRPO-MT (sample-matched)", "sampled sequences"] == 150


def test_budget_curves_start_at_the_base_and_put_each_checkpoint_at_its_sampled_sequences(stand_in_runs):
    c = budget_curves(stand_in_runs)
    base = c[c["method"] == "base"]
    assert set(base["sampled"]) == {0} and len(base) == 2  # one start per seed
    murphy = c[(c["method"] == "murphy") & (c["seed"] == 0)].sort_values("step")
    assert list(murphy["step"]) == [1, 2] and list(murphy["final"]) == [False, True]
    assert list(murphy["sampled"]) == [144, 288]  # Σ trajectories/total up to the step (stand-in: 144 a step)
    assert murphy["pass@1"].iloc[0] < murphy["pass@1"].iloc[1]  # the stand-in is halfway at its checkpoint
    assert "grpo_mt@samples" in set(c["method"])


def test_the_budget_curve_figure_is_written(stand_in_runs, tmp_path):
    path = tmp_path / "curves.png"
    fig = viz.plot_budget_curves(budget_curves(stand_in_runs), path, names={"murphy": "MURPHY"})
    assert path.stat().st_size > 10_000
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "MURPHY" in labels and len(labels) == 6  # every trained column, the matched ones included


def test_a_pipeline_without_step_checkpoints_gives_an_empty_curve(tmp_path):
    # µCode's run folder: rounds and stage lines (no "step"), no checkpoint-N beside them
    (tmp_path / "round1" / "sft").mkdir(parents=True)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"stage": "round1/rollouts", "attempts": 10, "seconds": 1.0}\n')
    exp = X.Experiment("toy-full", "toy", "mucode", curve=True, backend="stand-in")
    curve = curve_points(exp, tmp_path, metrics, X.stand_in_evaluate)
    assert curve.empty and list(curve.columns) == ["step", "benchmark", "k", "pass@1", "runs", "n_tasks"]


def test_budget_curves_of_runs_without_points_refuse_to_plot():
    with pytest.raises(ValueError, match="no curve points"):
        viz.plot_budget_curves(budget_curves([]))


def test_the_budget_table_reads_mucodes_stage_lines():
    # the shape of a real toy µCode run's metrics.jsonl: one line per stage, the rollouts' attempts are its samples
    lines = [
        dict(stage="round1/rollouts", tasks=200, attempts=4609, seconds=138.9),
        dict(stage="round1/verifier", pairs=1072, seconds=23.7),
        dict(stage="round1/sft", rows=2053, seconds=120.4),
        dict(
            stage="round2/rollouts",
            tasks=200,
            attempts=4558,
            seconds=134.2,
            **{"trajectories/total": 4558, "completions/mean_length": 30.0},
        ),
        dict(stage="round2/sft", rows=4079, seconds=211.1),
    ]
    m = pd.DataFrame([dict(method="mucode", variant="-", seed=0, **x) for x in lines])
    t = budget_table(m)
    row = t.frame.set_index("method").loc["µCode"]
    assert row["sampled sequences"] == 4609 + 4558 and row["trained sequences"] == 4079
    assert row["steps"] == "–" and row["completion tokens"] == "–"  # round 1 logged no lengths
    assert row["train time (min)"] == pytest.approx(round((138.9 + 23.7 + 120.4 + 134.2 + 211.1) / 60, 1))
    assert any("µCode has rounds" in n for n in t.notes)


def test_mucode_is_one_curve_point_at_all_its_rollouts_attempts():
    lines = [
        dict(stage="round1/rollouts", attempts=4609, seconds=1.0),
        dict(stage="round1/sft", rows=5, seconds=1.0),
        dict(stage="round2/rollouts", attempts=4558, seconds=1.0),
    ]
    run = X.RunResult(
        X.Experiment("toy-full", "toy", "mucode", seed=1),
        "k",
        Path("."),
        pd.DataFrame([dict(difficulty="all", k=3, **{"pass@1": 12.5})]),
        pd.DataFrame(lines),
    )
    (point,) = budget_curves([run]).itertuples()
    assert point.method == "mucode" and point.sampled == 4609 + 4558 and point.final and point.seed == 1


def test_a_one_point_line_still_starts_at_the_base(tmp_path):
    # µCode's single point sits at step 0 in budget_curves: the base must not replace it
    points = pd.DataFrame(
        [
            dict(method="base", seed=0, step=0, sampled=0.0, **{"pass@1": 5.0}, final=True),
            dict(method="mucode", seed=0, step=0, sampled=9000.0, **{"pass@1": 9.0}, final=True),
        ]
    )
    fig = viz.plot_budget_curves(points)
    (line,) = fig.axes[0].get_lines()
    assert list(line.get_xdata()) == [0.0, 9000.0] and list(line.get_ydata()) == [5.0, 9.0]
    # nothing was measured between its two points: dashed, and the legend says so
    assert line.get_linestyle() == "--" and line.get_label() == "mucode (final model only)"
