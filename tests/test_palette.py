"""murphy_lab.viz.palette is the one definition of the figures' colours: every figure-drawing function takes its colours
from it (read in the source: no colour literal anywhere else; and drawn: change the palette, the figures follow), and
every method has one colour and one place in the legend order in every figure."""

import ast
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib import colors as mcolors  # noqa: E402

from murphy_lab.experiments import paper_tables as T  # noqa: E402
from murphy_lab.viz import curves, palette  # noqa: E402
from murphy_lab.viz.table_figures import draw_pass_at_k  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# every module that draws a figure, and every notebook (they draw too); palette.py is the one place colours live
DRAWING_SOURCES = sorted(
    [p for p in (ROOT / "murphy_lab" / "viz").glob("*.py") if p.name != "palette.py"]
    + [ROOT / "murphy_lab" / "experiments" / "paper_tables.py"]
    + list((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    + list((ROOT / "reproduce").glob("*.py"))
)
HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}(?:[0-9a-fA-F]{2})?$")
NAMED = set(mcolors.CSS4_COLORS) | {c.partition(":")[2] for c in mcolors.TABLEAU_COLORS} | set("bgrcmykw")
COLOR_KWARGS = {
    "color",
    "colors",
    "c",
    "facecolor",
    "facecolors",
    "edgecolor",
    "edgecolors",
    "edge_color",
    "node_color",
    "markerfacecolor",
    "markeredgecolor",
    "cmap",
    "ecolor",
}
CMAPS = set(plt.colormaps())


def _colour_literals(path: Path) -> list[str]:
    """Colours written as literals in a file: hex strings, "tab:..." names, colour maps named in get_cmap(...), and
    string or list literals given to a colour keyword (color=, cmap=, edgecolors=, ...); "none" (no fill) is not a
    colour."""
    found = {}  # (line, value) -> how it was written
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if HEX.match(node.value) or node.value.startswith("tab:"):
                found.setdefault((node.lineno, node.value), repr(node.value))
        elif isinstance(node, ast.keyword) and node.arg in COLOR_KWARGS:
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for v in values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value != "none":
                    if (
                        v.value in NAMED
                        or v.value in CMAPS
                        or HEX.match(v.value)
                        or v.value.startswith("tab:")
                    ):
                        found[(v.lineno, v.value)] = f"{node.arg}={v.value!r}"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get_cmap":
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    found[(a.lineno, a.value)] = f"get_cmap({a.value!r})"
    return [f"{path.name}:{line}: {how}" for (line, _), how in sorted(found.items())]


def test_no_figure_names_a_colour_outside_the_palette():
    # viz modules, experiments/paper_tables.py, the notebooks, the reproduce notebooks
    assert len(DRAWING_SOURCES) >= 10
    literals = [hit for path in DRAWING_SOURCES for hit in _colour_literals(path)]
    assert not literals, "colours must come from murphy_lab.viz.palette:\n" + "\n".join(literals)


def test_the_scan_finds_a_colour_literal(tmp_path):
    src = tmp_path / "fig.py"
    src.write_text(
        'ax.plot(x, y, color="#1f77b4")\nax.bar(x, y, color=["tab:blue", "red"])\nplt.get_cmap("RdBu")\n'
    )
    assert len(_colour_literals(src)) == 4


def test_every_method_has_its_own_colour_and_a_place_in_the_order():
    assert set(palette.METHOD_ORDER) == set(palette.METHOD_COLORS)
    assert len(set(palette.METHOD_COLORS.values())) == len(palette.METHOD_COLORS)


@pytest.mark.parametrize(
    "name, key",
    [
        ("base", "base"),
        ("Base", "base"),
        ("GRPO", "grpo"),
        ("GRPO-MT", "grpo_mt"),
        ("grpo_mt@samples", "grpo_mt"),
        ("GRPO-MT (sample-matched)", "grpo_mt"),
        ("µCode", "mucode"),
        ("ReVeal", "reveal"),
        ("MURPHY", "murphy"),
        ("Murphy (MaRS)", "murphy"),
        ("Murphy [MeRS]", "murphy"),
        ("difficulty all", None),
    ],
)
def test_a_method_is_known_by_its_key_or_any_of_its_labels(name, key):
    assert palette.method_key(name) == key


def test_by_method_orders_methods_and_keeps_other_names_last():
    assert palette.by_method(["MURPHY", "other", "GRPO-MT (sample-matched)", "GRPO-MT", "base"]) == [
        "base",
        "GRPO-MT",
        "GRPO-MT (sample-matched)",
        "MURPHY",
        "other",
    ]


# --- drawn: each figure's method lines carry the palette's colour, in its order, and follow a changed palette -------
def _agg():
    rows = [
        dict(
            model="toy",
            method=m,
            variant="mars" if m == "murphy" else "-",
            credit="mars",
            gamma=1.0,
            pruning="none",
            scaffold="reflexion",
            benchmark="toy",
            difficulty="all",
            k=k,
            seed=s,
            **{"pass@1": 80.0 + i + k + s},
            std=1.0,
            backend="real",
        )
        for i, m in enumerate(("murphy", "grpo_mt", "base", "grpo"))
        for k in (1, 3)
        for s in (0, 1)
    ]
    return T.aggregate(pd.DataFrame(rows))


def _metrics_runs():
    return {
        name: [{"step": s, "reward/turn1_mean": 0.1 * s} for s in range(1, 4)]
        for name in ("MURPHY", "GRPO", "GRPO-MT")
    }


def _budget_points():
    return pd.DataFrame(
        [
            dict(method=m, seed=s, step=st, sampled=100 * st, **{"pass@1": 80.0 + st}, final=st == 2)
            for m in ("base", "murphy", "grpo_mt@samples", "grpo")
            for s in (0, 1)
            for st in ((0,) if m == "base" else (1, 2))
        ]
    )


FIGURES = {
    "plot_pass_at_k": lambda: T.plot_pass_at_k(_agg()),
    "draw_pass_at_k": lambda: draw_pass_at_k(
        [("p", [("MURPHY", [1], [50.0], [1.0]), ("GRPO", [1], [40.0], [1.0])])]
    ),
    "plot_curves": lambda: curves.plot_curves(_metrics_runs(), y="reward/turn1_mean"),
    "plot_budget_curves": lambda: curves.plot_budget_curves(_budget_points()),
}


def _method_lines(fig):
    """(label, colour, linestyle) of every labelled line or error-bar point of the figure, panel by panel in drawing
    order (a label drawn in several panels once)."""
    out, seen = [], set()
    for ax in fig.axes:
        artists = [(c.get_label(), c.lines[0]) for c in ax.containers if hasattr(c, "lines")]
        drawn = {id(line) for _, line in artists}
        artists += [(line.get_label(), line) for line in ax.get_lines() if id(line) not in drawn]
        for label, line in artists:
            if label.startswith("_") or label in seen:
                continue
            seen.add(label)
            out.append((label, mcolors.to_hex(line.get_color()), line.get_linestyle()))
    return out


@pytest.mark.parametrize("figure", sorted(FIGURES))
def test_method_lines_take_the_palette_colour_in_the_palette_order(figure):
    lines = [
        (label, colour, style)
        for label, colour, style in _method_lines(FIGURES[figure]())
        if palette.method_key(label)
    ]
    plt.close("all")
    assert len(lines) >= 2
    for label, colour, style in lines:
        assert colour == palette.METHOD_COLORS[palette.method_key(label)], (label, colour)
        assert (style == "--") == palette.is_sample_matched(label) or "final model only" in label
    labels = [label for label, _, _ in lines]
    assert labels == palette.by_method(labels)


@pytest.mark.parametrize("figure", sorted(FIGURES))
def test_a_changed_palette_changes_every_figure(figure, monkeypatch):
    monkeypatch.setitem(palette.METHOD_COLORS, "murphy", "#123456")
    colours = {palette.method_key(label): colour for label, colour, _ in _method_lines(FIGURES[figure]())}
    plt.close("all")
    assert colours["murphy"] == "#123456"


def test_main_table_axis_fits_the_data_so_error_bars_show():
    fig = T.plot_pass_at_k(_agg())
    (ax,) = [ax for ax in fig.axes if "Iter-3" in ax.get_title()]
    lo, hi = ax.get_ylim()
    plt.close(fig)
    assert 80 <= lo < 83 and 87 < hi <= 90  # Iter-3 spans 83-87 (± 0.5): not a 0-100 axis


def test_variants_of_one_method_get_one_colour_each():
    rows = [
        dict(
            model="toy",
            method="murphy",
            variant=v,
            credit="mars",
            gamma=1.0,
            pruning="none",
            scaffold="reflexion",
            benchmark="toy",
            difficulty="all",
            k=3,
            seed=0,
            **{"pass@1": 80.0 + i},
            std=1.0,
            backend="real",
        )
        for i, v in enumerate(("mars", "mars+interp", "mars+intrap"))
    ]
    colours = [colour for _, colour, _ in _method_lines(T.plot_pass_at_k(T.aggregate(pd.DataFrame(rows))))]
    plt.close("all")
    assert len(colours) == 3 and len(set(colours)) == 3
