"""The ablation playground's knobs, kept importable here: the module is murphy_lab/viz/widgets.py."""

from murphy_lab.viz.widgets import RULES, compute, copy_tree, playground, render, slider_budget, summary

__all__ = ["RULES", "compute", "copy_tree", "playground", "render", "slider_budget", "summary"]
