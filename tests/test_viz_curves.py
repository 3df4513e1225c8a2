"""murphy_lab.viz.curves: the summary plots (per-turn histograms, advantages per group, learning curves); Agg."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from murphy_lab.credit import mars  # noqa: E402
from murphy_lab.examples import paper_tree  # noqa: E402
from murphy_lab.grpo import group_advantages  # noqa: E402
from murphy_lab.prune import interp  # noqa: E402
from murphy_lab.viz.curves import plot_curves, plot_group_advantages, plot_turn_histograms  # noqa: E402


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
    runs = {"grpo": [{"step": i, "reward": i / 10} for i in range(5)],
            "murphy": [{"step": i, "reward": i / 5} for i in range(5)]}
    fig = plot_curves(runs, y="reward")
    assert len(fig.axes[0].lines) == 2


def test_curves_name_a_missing_metric():
    with pytest.raises(ValueError, match="pass@1"):
        plot_curves({"a": [{"step": 0, "reward": 0.0}]}, y="pass@1")
