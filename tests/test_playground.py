"""Notebook 07's playground redraws: moving each control of the widget box (`murphy_lab.viz.widgets.playground`)
changes the figure it shows, through the widgets' own API (setting `.value`, as a slider or a button does in
JupyterLab; the box's Output then holds the new PNG). Moving a control back restores the first figure, so the
comparison is of figures, not of render noise."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

pytest.importorskip("ipywidgets")

import ipywidgets as w  # noqa: E402

from murphy_lab.credit import credit_rule  # noqa: E402
from murphy_lab.examples import informative_failure_tree, paper_tree  # noqa: E402
from murphy_lab.viz.widgets import playground  # noqa: E402


def _controls(box) -> dict:
    """The box's controls by their description (which tree, credit, γ, b_grp, b_traj, backup on, color)."""
    found, todo = {}, [box]
    while todo:
        x = todo.pop()
        if isinstance(x, w.Box):
            todo += list(x.children)
        elif isinstance(x, w.ValueWidget) and getattr(x, "description", ""):
            found[x.description] = x
    return found


def _figure(box) -> bytes:
    """The PNG the box's Output shows now."""
    out = box.children[-1]
    assert isinstance(out, w.Output)
    (shown,) = out.outputs
    assert "image/png" in shown["data"], shown
    return shown["data"]["image/png"]


@pytest.fixture(scope="module")
def box():
    # the notebook's built-in trees: the informative-failure example and two 72-trajectory trees
    trees = {
        "informative failure": informative_failure_tree(),
        "72 (seed 0)": paper_tree(seed=0),
        "72 (seed 1)": paper_tree(seed=1),
    }
    return playground(trees)


def _moves(c: dict) -> list:
    """(control, new value, the settings it needs to matter) for every control of the box."""
    discounted = next(name for name in c["credit"].options if credit_rule(name).discounted)
    other_rule = next(name for name in c["credit"].options if name != c["credit"].value)
    return [
        (c["tree"], c["tree"].options[1], {}),
        (c["color"], "reward", {}),
        (c["credit"], other_rule, {}),
        (c["γ"], 0.5, {c["credit"]: discounted}),  # γ discounts a discounted rule's backup only
        (c["λ"], 0.5, {c["credit"]: "mt_grpo"}),  # MT-GRPO's weight of the outcome advantage
        (c["ω"], 0.5, {c["credit"]: "gigpo"}),  # GiGPO's weight of the step-level advantage
        (c["b_grp"], 2, {c["tree"]: c["tree"].options[1]}),  # InterP on a tree with 8 groups
        (c["b_traj"], 2, {c["tree"]: c["tree"].options[1]}),
        (c["backup on"], "pruned", {c["tree"]: c["tree"].options[1], c["b_grp"]: 2}),  # matters once pruned
    ]


def test_the_box_has_a_control_per_setting_and_per_knob_of_the_credit_rules(box):
    assert set(_controls(box)) == {"tree", "credit", "γ", "λ", "ω", "b_grp", "b_traj", "backup on", "color"}


@pytest.mark.parametrize(
    "i", range(9), ids=["tree", "color", "credit", "gamma", "lambda", "omega", "b_grp", "b_traj", "backup_on"]
)
def test_moving_each_control_redraws_the_figure(box, i):
    c = _controls(box)
    control, value, context = _moves(c)[i]
    start = {x: x.value for x in c.values()}
    try:
        for x, v in context.items():
            x.value = v
        before = _figure(box)
        old = control.value
        control.value = value
        after = _figure(box)
        assert after != before, f"moving {control.description!r} to {value!r} did not change the figure"
        control.value = old
        assert _figure(box) == before, f"moving {control.description!r} back did not restore the figure"
    finally:
        for x, v in start.items():
            x.value = v
