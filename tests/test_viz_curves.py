"""murphy_lab.viz.curves: the summary plots (per-turn histograms, advantages per group, learning curves); Agg."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from murphy_lab.credit import mars  # noqa: E402
from murphy_lab.examples import paper_tree  # noqa: E402
from murphy_lab.grpo import group_advantages  # noqa: E402
from murphy_lab.prune import interp  # noqa: E402
from murphy_lab.viz.curves import (  # noqa: E402
    moving_average,
    plot_curves,
    plot_eval_table,
    plot_group_advantages,
    plot_training_curves,
    plot_turn_histograms,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- layout and draw_tree ------------------------------------------------------------------------------------------


def test_turn_histograms_have_one_panel_per_turn():
    fig = plot_turn_histograms([mars(paper_tree(0)), mars(paper_tree(1))])
    assert len(fig.axes) == 2


def test_group_advantages_plot_has_one_column_per_kept_group():
    t = group_advantages(mars(interp(paper_tree(0), 4)))
    fig = plot_group_advantages(t)
    assert len(fig.axes[0].get_xticks()) == 5


def test_curves_plot_one_line_per_run():
    runs = {
        "grpo": [{"step": i, "reward": i / 10} for i in range(5)],
        "murphy": [{"step": i, "reward": i / 5} for i in range(5)],
    }
    fig = plot_curves(runs, y="reward")
    assert len(fig.axes[0].lines) == 2


def test_curves_name_a_missing_metric():
    with pytest.raises(ValueError, match="pass@1"):
        plot_curves({"a": [{"step": 0, "reward": 0.0}]}, y="pass@1")


METRICS = [
    {
        "step": i,
        "reward/turn1_mean": i / 10,
        "reward/mean": i / 20,
        "solved/turn1_frac": i / 30,
        "solved/tree_frac": i / 15,
        "time/step_s": 1.0,
    }
    for i in range(1, 6)
]


def test_training_curves_draw_rewards_and_solved_fractions_a_panel_each():
    fig = plot_training_curves(METRICS, title="run")
    assert [ax.get_title() for ax in fig.axes] == ["mean reward r(v)", "solved (r = 1)"]
    assert [len(ax.lines) for ax in fig.axes] == [2, 2]
    assert list(fig.axes[0].lines[0].get_ydata()) == [r["reward/turn1_mean"] for r in METRICS]


def test_training_curves_leave_out_what_a_run_does_not_log():
    # e.g. a baseline
    rows = [{"step": r["step"], "solved/turn1_frac": r["solved/turn1_frac"]} for r in METRICS]
    fig = plot_training_curves(rows)
    assert [ax.get_title() for ax in fig.axes] == ["solved (r = 1)"] and len(fig.axes[0].lines) == 1


def test_training_curves_name_the_metrics_when_none_is_logged():
    with pytest.raises(ValueError, match="reward/turn1_mean"):
        plot_training_curves([{"step": 1, "time/step_s": 1.0}])


def test_moving_average_averages_the_window_ending_at_each_point():
    assert moving_average([0.0, 2.0, 4.0, 6.0], 2) == [0.0, 1.0, 3.0, 5.0]
    assert moving_average([1.0, 3.0], 1) == [1.0, 3.0]


def test_the_eval_table_figure_has_a_line_per_difficulty_with_its_points(tmp_path):
    import pandas as pd

    df = pd.DataFrame(
        [
            {"difficulty": d, "k": k, "pass@1": p + k, "std": 1.0, "n_tasks": n, "calls": k, "tokens": 9}
            for d, p, n in (("all", 40.0, 5), ("easy", 60.0, 3))
            for k in (1, 3)
        ]
    )
    fig = plot_eval_table(df, title="own", path=tmp_path / "table.png")
    assert (tmp_path / "table.png").stat().st_size > 0
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["all (5 tasks)", "easy (3 tasks)"]
    assert [list(c.lines[0].get_ydata()) for c in ax.containers] == [[41.0, 43.0], [61.0, 63.0]]  # errorbars


# --- budget curves: one seed with each evaluation's standard error ------------------------------------------------


def _one_seed_points(se: bool):
    import pandas as pd

    rows = [dict(method="base", step=0, sampled=0, **{"pass@1": 78.5}, seed=0, final=True)]
    for method, ys in (("grpo", (80.5, 81.5)), ("murphy", (84.0, 90.5))):
        rows += [
            dict(method=method, step=s, sampled=n, **{"pass@1": y}, seed=0, final=s == 40)
            for s, n, y in zip((20, 40), (600, 1200), ys)
        ]
    points = pd.DataFrame(rows)
    return points.assign(se=(points["pass@1"] * (100 - points["pass@1"]) / 200) ** 0.5) if se else points


def test_one_seeds_budget_curves_draw_each_points_standard_error_as_a_bar():
    from matplotlib.container import ErrorbarContainer

    from murphy_lab.viz import plot_budget_curves

    fig = plot_budget_curves(_one_seed_points(se=True))
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2  # one per trained method, base point included in each
    segments = bars[1].lines[2][0].get_segments()  # murphy: base, step 20, step 40
    assert (
        len(segments) == 3
        and abs((segments[2][1][1] - segments[2][0][1]) / 2 - (90.5 * 9.5 / 200) ** 0.5) < 1e-9
    )
    assert "standard error" in fig.axes[0].get_title()


def test_budget_curves_without_standard_errors_keep_the_std_band_and_say_so():
    from matplotlib.container import ErrorbarContainer

    from murphy_lab.viz import plot_budget_curves

    fig = plot_budget_curves(_one_seed_points(se=False))
    assert not [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert "± std over 1 seed(s)" in fig.axes[0].get_title()


# --- live generation -----------------------------------------------------------------------------------------------


def test_stream_tokens_prints_what_the_policy_samples_and_restores_generate(tiny_model_path, capsys):
    from murphy_lab.policy import TransformersPolicy
    from murphy_lab.viz.live import stream_tokens

    policy = TransformersPolicy(tiny_model_path, max_new_tokens=12, temperature=0.0)
    quiet = policy.sample(["def f(x):"], n=1)[0][0]
    with stream_tokens(policy):
        streamed = policy.sample(["def f(x):"], n=1)[0][0]
    printed = capsys.readouterr().out
    assert streamed == quiet and quiet.strip() and quiet.strip() in printed
    assert "generate" not in vars(policy.model)  # the model's own method again
