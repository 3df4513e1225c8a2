"""Every colour the package's figures use, defined once: one colour and one place in the order per method, in every
figure (notebooks, reproduce tables, the trainer's curves.png); the colour maps of the tree figures; the few marks.

    METHOD_ORDER, METHOD_COLORS   base, GRPO, GRPO-MT, µCode, ReVeal, MURPHY: legend order and line colour
    method_key(name)              "GRPO-MT", "grpo_mt", "GRPO-MT (sample-matched)", "MURPHY", "Murphy (MaRS)" -> key
    method_color / method_style   the colour (and a dashed line for a sample-matched baseline) of any such name
    by_method(names)              names in METHOD_ORDER (unknown names last, in their given order)
    SERIES                        colours for lines that are not methods (metrics, difficulties, Iter-k bars)
    VALUE_CMAP, ADVANTAGE_CMAP    node colours of the tree figures: r, r̃ in [0, 1]; Â diverging around 0
    VERDICT_CMAP, HARNESS_COLORS  grids of verdicts (green passed / red not); notebook 11's two reward harnesses

Figures never name a colour themselves (tests/test_palette.py reads their source and draws them to check).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

METHOD_ORDER = ("base", "grpo", "grpo_mt", "mucode", "reveal", "murphy")
"""Left to right in tables, top to bottom in legends: the base model, then the baselines, MURPHY last."""

METHOD_COLORS = {
    "base": "#7f7f7f",  # grey: nothing trained
    "grpo": "#1f77b4",  # blue: single-turn GRPO
    "grpo_mt": "#ff7f0e",  # orange: multi-turn GRPO (chains)
    "mucode": "#9467bd",  # purple
    "reveal": "#8c564b",  # brown
    "murphy": "#d62728",  # red: MURPHY (any credit rule)
}
"""One colour per method (matplotlib's tab10, colour-blind friendlier order for the three the toy world trains)."""

# a baseline at MURPHY's sample budget: same colour, dashed line
SAMPLE_MATCHED = (
    "samples",
    "sample-matched",
)

SERIES = (
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
    "#636363",
    "#9ecae1",
    "#fdae6b",
    "#a1d99b",
    "#bcbddc",
    "#8c6d31",
)
"""Lines that are not methods, in order: metrics of one run, difficulties, Iter-k bars (light to dark pairs use
`ITER_COLORS`)."""

ITER_COLORS = ("#9ecae1", "#3182bd", "#08519c")
"""Iter-1, Iter-3, Iter-5 bars: light to dark blue (more attempts, darker)."""

REWARD_COLOR, CREDIT_COLOR = "#3182bd", "#e6550d"  # histograms of r(v) and r̃(v)
PASS_COLOR, FAIL_COLOR = "#31a354", "#bdbdbd"  # bars of passing / failing shares
BAR, BAR_LIGHT, BAR_DARK = "#9ecae1", "#c6dbef", "#3182bd"  # one series of bars; a light / dark pair
SECONDARY = "#e6550d"  # a second quantity on a twin axis
POSITIVE, NEGATIVE, ZERO = "#e6550d", "#3182bd", "#999999"  # points by the sign of their advantage
PRUNING_COLORS = {
    "intrap": "#1f77b4",
    "interp": "#ff7f0e",
    "none": "#7f7f7f",
}  # the pruning variants' cost bars

VALUE_CMAP = "viridis"  # r(v), r̃(v) in [0, 1]
ADVANTAGE_CMAP = "RdBu"  # Â(v), diverging around 0
PASS_RING = "#d62728"  # ring around candidates that pass every test
FLOW = "#e6550d"  # the credit path in draw_credit_flow
MISSING = "#bdbdbd"  # nodes without a value (the root; advantage of a pruned node)
INK, TEXT, EDGE, FAINT = "#333333", "#111111", "#777777", "#bbbbbb"  # outlines, labels, edges, pruned edges
PANEL, PANEL_EDGE = "#f0f0f0", "#d0d0d0"  # the band behind a response group
BOX, BOX_EDGE = "white", "#cccccc"  # the feedback snippets' boxes
ON_BAR = "white"  # a value written on a filled bar
VERDICT_CMAP = "RdYlGn"  # a grid of verdicts: 1 green (passed, or judged right), 0 red
# notebook 11: the reward's harness (hacked: red)
HARNESS_COLORS = {"naive": "#d62728", "executor": "#1f77b4"}

_ALIASES = {
    "base": "base",
    "grpo": "grpo",
    "grpo-mt": "grpo_mt",
    "grpo_mt": "grpo_mt",
    "µcode": "mucode",
    "mucode": "mucode",
    "μcode": "mucode",
    "reveal": "reveal",
    "murphy": "murphy",
}


def method_key(name: str) -> str | None:
    """The method key of a label or key: "Murphy (MaRS)", "MURPHY", "murphy" -> "murphy"; "GRPO-MT (sample-matched)",
    "grpo_mt@samples" -> "grpo_mt"; None for a name that is no method."""
    head = re.split(r"[\s(@\[]", str(name).strip(), maxsplit=1)[0].lower()
    return _ALIASES.get(head)


def is_sample_matched(name: str) -> bool:
    return any(tag in str(name).lower() for tag in SAMPLE_MATCHED)


def method_color(name: str, default: str | None = None) -> str:
    """The colour of a method's label or key (`method_key`); `default` (else the first of `SERIES`) for others."""
    key = method_key(name)
    return METHOD_COLORS[key] if key is not None else (default or SERIES[0])


def method_style(name: str) -> dict:
    """Line keyword arguments for a method: its colour, dashed when it is a baseline at MURPHY's sample budget."""
    return dict(color=method_color(name), linestyle="--" if is_sample_matched(name) else "-")


def by_method(names: Iterable[str]) -> list[str]:
    """`names` in METHOD_ORDER (a sample-matched baseline right after its default run); the others last, as given."""
    names = list(names)

    def rank(i_name):
        i, name = i_name
        key = method_key(name)
        return (METHOD_ORDER.index(key) if key is not None else len(METHOD_ORDER), is_sample_matched(name), i)

    return [name for _, name in sorted(enumerate(names), key=rank)]


def series_color(i: int) -> str:
    """The i-th colour of `SERIES` (cycling)."""
    return SERIES[i % len(SERIES)]


__all__ = [
    "ADVANTAGE_CMAP",
    "BOX",
    "HARNESS_COLORS",
    "BOX_EDGE",
    "CREDIT_COLOR",
    "EDGE",
    "FAIL_COLOR",
    "FAINT",
    "FLOW",
    "INK",
    "ITER_COLORS",
    "METHOD_COLORS",
    "METHOD_ORDER",
    "MISSING",
    "ON_BAR",
    "PANEL",
    "PANEL_EDGE",
    "PASS_COLOR",
    "PASS_RING",
    "PRUNING_COLORS",
    "REWARD_COLOR",
    "VERDICT_CMAP",
    "SERIES",
    "TEXT",
    "VALUE_CMAP",
    "by_method",
    "is_sample_matched",
    "method_color",
    "method_key",
    "method_style",
    "series_color",
]
