"""murphy_lab.viz.widgets: the compute path (the library pipeline on a copy), render, and the ipywidgets playground."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from murphy_lab.credit import CREDIT_RULES, credit_rule, mers  # noqa: E402
from murphy_lab.examples import informative_failure_tree, paper_tree  # noqa: E402
from murphy_lab.grpo import group_advantages  # noqa: E402
from murphy_lab.prune import intrap  # noqa: E402
from murphy_lab.viz.widgets import compute, render, summary  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_compute_leaves_the_input_tree_untouched():
    t = paper_tree(0)
    compute(t, credit="mars", b_grp=4)
    assert all(n.credit is None and not n.pruned for n in t.nodes())


def test_compute_matches_the_library_pipeline():
    t = compute(paper_tree(0), credit="mers", gamma=0.9, b_traj=4)
    ref = group_advantages(mers(intrap(paper_tree(0), 4), gamma=0.9))
    assert [n.advantage for n in t.nodes()] == [n.advantage for n in ref.nodes()]


def test_compute_mers_backup_on_full_differs_from_pruned_on_the_paper_tree():
    full = compute(paper_tree(0), credit="mers", b_traj=4, backup_on="full")
    pruned = compute(paper_tree(0), credit="mers", b_traj=4, backup_on="pruned")
    assert [n.credit for n in full.nodes()] != [n.credit for n in pruned.nodes()]


def test_summary_counts_kept_trajectories():
    assert summary(compute(paper_tree(0), b_grp=4))["kept"] == 40


def test_render_returns_tree_and_advantage_panels():
    fig = render(informative_failure_tree(), credit="mars")
    assert len(fig.axes) == 4  # tree + colorbar, advantages + colorbar


def _controls(widget) -> dict:
    found = {}
    for child in getattr(widget, "children", ()):
        found.update(_controls(child))
    if getattr(widget, "description", ""):
        found[widget.description] = widget
    return found


def test_playground_shows_a_figure_when_built():
    pytest.importorskip("ipywidgets")
    from murphy_lab.viz.widgets import playground

    _, out = playground([informative_failure_tree(), paper_tree(0)]).children
    assert [list(o["data"]) for o in out.outputs] == [["image/png", "text/plain"]]


def test_playground_redraws_when_a_knob_changes():
    pytest.importorskip("ipywidgets")
    from murphy_lab.viz.widgets import playground

    knobs, out = playground({"ex": informative_failure_tree(), "big": paper_tree(0)}).children
    before = out.outputs[0]["data"]["image/png"]
    controls = _controls(knobs)
    controls["tree"].value = "big"
    controls["b_grp"].value = 4
    assert len(out.outputs) == 1 and out.outputs[0]["data"]["image/png"] != before


def test_playground_explains_knobs_the_library_rejects():
    pytest.importorskip("ipywidgets")
    from murphy_lab.viz.widgets import playground

    knobs, out = playground({"ex": informative_failure_tree(), "big": paper_tree(0)}).children
    _controls(knobs)["b_traj"].value = 8  # larger than the example's groups of 4: intrap raises ValueError
    assert "cannot compute" in out.outputs[0]["text"] and "b_traj" in out.outputs[0]["text"]


def test_viz_and_widgets_import_without_loading_ipywidgets():
    import subprocess
    import sys

    code = "import sys, murphy_lab.viz, murphy_lab.viz.widgets; sys.exit('ipywidgets' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], env={"MPLBACKEND": "Agg"}).returncode == 0


def test_compute_passes_a_rules_own_knobs():
    t0 = compute(informative_failure_tree(), credit="mt_grpo", lam=0.0)
    t1 = compute(informative_failure_tree(), credit="mt_grpo", lam=1.0)
    assert [n.advantage for n in t0.nodes()] != [n.advantage for n in t1.nodes()]
    with pytest.raises(ValueError, match="has no knob 'omega'"):
        compute(informative_failure_tree(), credit="mars", omega=0.5)


@pytest.mark.parametrize("credit", list(CREDIT_RULES))
def test_render_draws_every_rule_of_the_table(credit):
    fig = render(paper_tree(0), credit=credit, b_grp=4)
    assert credit_rule(credit).label in fig.axes[0].get_title()


def test_playground_builds_one_slider_per_knob_of_the_rule_table_and_disables_the_unread_ones():
    pytest.importorskip("ipywidgets")
    from murphy_lab.viz.widgets import knobs_of_all_rules, playground

    knobs, out = playground({"ex": informative_failure_tree()}).children
    controls = _controls(knobs)
    for k in knobs_of_all_rules().values():
        slider = controls[k.doc.partition(",")[0]]
        assert (slider.min, slider.max) == (k.low, k.high)
        assert slider.disabled  # MaRS, the default rule, reads no knob
    controls["credit"].value = "gigpo"
    assert not controls["ω"].disabled and not controls["γ"].disabled and controls["λ"].disabled
    before = out.outputs[0]["data"]["image/png"]
    controls["ω"].value = 0.0
    assert out.outputs[0]["data"]["image/png"] != before


def test_rule_comparison_scores_every_rule_and_draws_one_row_each():
    from murphy_lab.viz.widgets import compare_rules, draw_rule_comparison

    scored = compare_rules(informative_failure_tree())
    assert list(scored) == list(CREDIT_RULES)
    assert scored["mars"].root.children[0].credit == 1.0 and scored["treerpo"].root.children[0].credit == 0.75
    fig = draw_rule_comparison(paper_tree(0), b_grp=4)
    labels = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert labels == [r.table_label(r.ablation_gammas()[0]) for r in CREDIT_RULES.values()]
    assert len(fig.axes[1].images[0].get_array()[0]) == 72  # every node, pruned ones blank
