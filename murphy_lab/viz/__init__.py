"""Figures of MURPHY's trees and runs; they read trees and metrics and compute nothing of MURPHY.

    trees.py     draw_tree, tree_layout, to_networkx, node_label, snippet
    credit_flow.py  draw_credit_flow / credit_path: where a node's MaRS credit came from
    curves.py    plot_turn_histograms, plot_group_advantages, plot_curves, plot_budget_curves
    table_figures.py  draw_by_k, draw_pass_at_k, draw_cost_bars: the reproduce tables' figures
                 (experiments.paper_tables picks the rows)
    palette.py   every colour the figures use: one colour and one legend place per method (tests/test_palette.py)
    widgets.py   the ablation playground: compute (scoring.score_tree on a copy), summary, render, playground
                 (ipywidgets is imported only inside `playground`)

`from murphy_lab.viz import draw_tree, plot_curves` keeps working: the figure functions are re-exported here.
"""

from murphy_lab.viz.credit_flow import credit_path, draw_credit_flow
from murphy_lab.viz.curves import plot_budget_curves, plot_curves, plot_group_advantages, plot_turn_histograms
from murphy_lab.viz.palette import FLOW, MISSING, PASS_RING
from murphy_lab.viz.trees import (
    COLOR_BY,
    draw_tree,
    node_label,
    snippet,
    to_networkx,
    tree_layout,
)

__all__ = [
    "COLOR_BY",
    "FLOW",
    "MISSING",
    "PASS_RING",
    "credit_path",
    "draw_credit_flow",
    "draw_tree",
    "node_label",
    "plot_budget_curves",
    "plot_curves",
    "plot_group_advantages",
    "plot_turn_histograms",
    "snippet",
    "to_networkx",
    "tree_layout",
]
