"""murphy_lab.viz.table_figures: the reproduce tables' figures, drawn from what experiments.tables selected."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

from murphy_lab import experiments as X
from murphy_lab.experiments import ablation_tables as A
from murphy_lab.viz.table_figures import draw_cost_bars, draw_pass_at_k


def test_pass_at_k_draws_one_panel_per_benchmark_with_a_line_per_method():
    fig = draw_pass_at_k(
        [
            (
                "toy · toy",
                [("GRPO", [1, 3], [2.0, 4.0], [0.5, 0.5]), ("MURPHY", [1, 3], [3.0, 6.0], [0.0, 1.0])],
            ),
            ("toy · other", [("GRPO", [1], [1.0], [0.0])]),
        ]
    )
    assert len(fig.axes) == 2 and fig.axes[0].get_ylim()[0] == 0
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["GRPO"]


def test_pass_at_k_without_panels_is_an_error():
    with pytest.raises(ValueError, match="nothing to plot"):
        draw_pass_at_k([])


def test_pruning_cost_bars_hatch_the_variants_whose_backup_sees_the_pruned_tree(tmp_path):
    exps = X.plan("smoke", methods=["murphy"], variants=X.pruning_variants(), backend="stand-in")
    runs = X.run_all(exps, tmp_path / "results" / "smoke", **X.STAND_INS)
    fig = A.plot_pruning_cost(X.metrics_frame(runs), tmp_path / "cost.png")
    assert (tmp_path / "cost.png").stat().st_size > 5_000
    bars = fig.axes[0].patches
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    # IntraP / InterP, backup on pruned
    assert len(bars) == 5 and sum(b.get_hatch() == "//" for b in bars) == 2
    assert all(("pruned" in label) == (b.get_hatch() == "//") for label, b in zip(labels, bars))


def test_cost_bars_draw_a_panel_per_series():
    fig = draw_cost_bars(
        ["a", "b"], [("kept", [1, 2]), ("time", [0.1, 0.2])], ["gray", "gray"], [False, True]
    )
    assert len(fig.axes) == 2 and [b.get_hatch() for b in fig.axes[1].patches] == [None, "//"]
