"""Figures, widgets' compute path and the teaching examples: one property per test, Agg backend."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from murphy_lab.credit import mars, mers  # noqa: E402
from murphy_lab.examples import ScriptedTaxPolicy, informative_failure_tree, paper_tree, small_tree  # noqa: E402
from murphy_lab.grpo import group_advantages  # noqa: E402
from murphy_lab.prune import interp, intrap  # noqa: E402
from murphy_lab.tree import Node, RolloutTree, build_tree  # noqa: E402
from murphy_lab.viz import (  # noqa: E402
    credit_path,
    draw_credit_flow,
    draw_tree,
    plot_curves,
    plot_group_advantages,
    plot_turn_histograms,
    snippet,
    tree_layout,
)
from murphy_lab.widgets import compute, render, summary  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- examples ------------------------------------------------------------------------------------------------------
def test_paper_tree_has_72_trajectories_in_9_groups_with_every_turn1_failing():
    t = paper_tree(seed=3)
    assert len(t) == 72 and len(t.groups()) == 9
    assert all(v.reward < 1.0 for v in t.root.children)


def test_paper_tree_prunes_to_40_with_interp_and_36_with_intrap():
    assert len(interp(paper_tree(0), 4).nodes(kept_only=True)) == 40
    assert len(intrap(paper_tree(0), 4).nodes(kept_only=True)) == 36


def test_informative_failure_is_credited_by_mars_and_uninformative_is_not():
    t = mars(informative_failure_tree())
    a, b, _, _ = t.root.children
    assert (a.credit, b.credit) == (1.0, 0.0)


def test_mers_ranks_the_lucky_failure_below_the_informative_one():
    t = mers(informative_failure_tree(), gamma=1.0)
    a, _, _, d = t.root.children
    assert a.credit == pytest.approx(0.75 / 2) and d.credit == pytest.approx(0.125)


def test_informative_and_uninformative_failures_share_the_same_immediate_reward():
    a, b, _, d = informative_failure_tree().root.children
    assert a.reward == b.reward == d.reward == 0.0


def test_example_feedback_matches_what_the_executor_writes():
    pytest.importorskip("murphy_lab.executor")
    from murphy_lab.examples import TAX_TESTS
    from murphy_lab.executor import Executor

    a, b, _, d = informative_failure_tree().root.children
    with Executor(timeout=2.0, workers=1) as ex:
        results = ex.run_many([(v.code, TAX_TESTS) for v in (a, b, d)])
    assert [r.feedback for r in results] == [a.feedback, b.feedback, d.feedback]
    assert [r.reward for r in results] == [0.0, 0.0, 0.0]


def test_scripted_policy_makes_one_sample_call_per_turn_in_build_tree():
    policy = ScriptedTaxPolicy(seed=0)
    run = lambda program, tests: type("R", (), {"reward": float("1.2" in program), "feedback": "== 12.0 output:"})()  # noqa: E731
    t = build_tree("task", [], policy, run, g1=4, g2=3, turns=2)
    assert policy.calls == 2 and len(t.root.children) == 4


def test_scripted_policy_rejects_probabilities_outside_unit_interval():
    with pytest.raises(ValueError, match="p_fix_blind"):
        ScriptedTaxPolicy(p_fix_blind=1.5)


# --- layout and draw_tree ------------------------------------------------------------------------------------------
def test_layout_puts_every_node_on_the_row_of_its_turn():
    t = paper_tree(0)
    pos = tree_layout(t)
    assert all(pos[n][1] == -n.turn for n in t.root.walk())


def test_layout_keeps_each_group_contiguous_and_in_order():
    t = paper_tree(0)
    pos = tree_layout(t)
    spans = [(pos[m[0]][0], pos[m[-1]][0]) for _, m in t.groups() if m[0].turn == 2]
    assert all(a1 < b0 for (_, a1), (b0, _) in zip(spans, spans[1:]))


def test_layout_centres_a_parent_over_its_group():
    t = small_tree()
    pos = tree_layout(t)
    v1 = t.root.children[0]
    assert pos[v1][0] == pytest.approx(sum(pos[c][0] for c in v1.children) / 2)


@pytest.mark.parametrize("color_by", ["reward", "credit", "advantage"])
def test_draw_tree_returns_a_figure_with_a_colorbar(color_by):
    t = group_advantages(mars(informative_failure_tree()))
    fig = draw_tree(t, color_by=color_by)
    assert len(fig.axes) == 2  # the tree and its colorbar


def test_draw_tree_rejects_unknown_color():
    with pytest.raises(ValueError, match="color_by"):
        draw_tree(small_tree(), color_by="loss")


def test_draw_tree_asks_for_credit_before_coloring_by_it():
    with pytest.raises(ValueError, match="mars"):
        draw_tree(small_tree(), color_by="credit")


def test_draw_tree_labels_show_reward_arrow_credit():
    fig = draw_tree(mars(small_tree()), color_by="credit", labels=True, feedback=False)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert "0→1" in texts and "0.5→0.5" in texts


def test_draw_tree_annotates_each_expanded_group_with_its_feedback():
    fig = draw_tree(small_tree(), feedback=True)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "f(2) == 4" in texts and "f(0) == 0" in texts


def test_draw_tree_fades_pruned_nodes():
    t = intrap(paper_tree(0), 4)
    fig = draw_tree(t)
    alphas = sorted({c.get_alpha() for c in fig.axes[0].collections if c.get_alpha() is not None})
    assert alphas and alphas[0] < 0.5


def test_draw_tree_draws_into_a_given_axes():
    fig, ax = plt.subplots()
    assert draw_tree(small_tree(), ax=ax, colorbar=False) is fig


def test_snippet_prefers_the_first_failed_assert_and_shortens():
    assert snippet("Tests failed:\nassert f(1) == 2  # output: 3 and a very long tail", width=20).endswith("…")
    assert snippet("Tests failed:\nassert f(1) == 2\nassert f(2) == 3", width=40) == "assert f(1) == 2"


def test_snippet_shows_the_exception_of_a_program_that_does_not_compile():
    text = 'The program does not compile:\nFile "solution.py", line 1\n    def f(x)\n            ^\nSyntaxError: bad'
    assert snippet(text, width=40) == "SyntaxError: bad"


# --- credit flow ---------------------------------------------------------------------------------------------------
def test_credit_path_follows_mars_argmax_to_a_node_whose_reward_is_the_credit():
    t = mars(informative_failure_tree())
    path = credit_path(t, (0,))
    assert path[0] is t.root.children[0] and path[-1].reward == path[0].credit and len(path) == 2


def test_credit_path_of_a_solved_node_is_itself():
    t = mars(informative_failure_tree())
    assert credit_path(t, (2,)) == [t.root.children[2]]


def test_credit_path_rejects_mers_credits():
    t = mers(informative_failure_tree())
    with pytest.raises(ValueError, match="MaRS"):
        credit_path(t, (0,))


def test_credit_path_rejects_an_out_of_range_node_path():
    with pytest.raises(ValueError, match="out of range"):
        credit_path(mars(small_tree()), (7,))


def test_draw_credit_flow_draws_one_arrow_per_path_step():
    t = mars(informative_failure_tree())
    fig = draw_credit_flow(t, (3,))
    arrows = [a for a in fig.axes[0].texts if getattr(a, "arrow_patch", None) is not None]
    assert len(arrows) == len(credit_path(t, (3,))) - 1


# --- summary plots -------------------------------------------------------------------------------------------------
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


# --- widgets' compute path ----------------------------------------------------------------------------------------
def test_compute_leaves_the_input_tree_untouched():
    t = paper_tree(0)
    compute(t, rule="mars", b_grp=4)
    assert all(n.credit is None and not n.pruned for n in t.nodes())


def test_compute_matches_the_library_pipeline():
    t = compute(paper_tree(0), rule="mers", gamma=0.9, b_traj=4)
    ref = group_advantages(mers(intrap(paper_tree(0), 4), gamma=0.9))
    assert [n.advantage for n in t.nodes()] == [n.advantage for n in ref.nodes()]


def test_compute_mers_backup_on_full_differs_from_pruned_on_the_paper_tree():
    full = compute(paper_tree(0), rule="mers", b_traj=4, backup_on="full")
    pruned = compute(paper_tree(0), rule="mers", b_traj=4, backup_on="pruned")
    assert [n.credit for n in full.nodes()] != [n.credit for n in pruned.nodes()]


def test_summary_counts_kept_trajectories():
    assert summary(compute(paper_tree(0), b_grp=4))["kept"] == 40


def test_render_returns_tree_and_advantage_panels():
    fig = render(informative_failure_tree(), rule="mars")
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
    from murphy_lab.widgets import playground

    _, out = playground([informative_failure_tree(), paper_tree(0)]).children
    assert [list(o["data"]) for o in out.outputs] == [["image/png", "text/plain"]]


def test_playground_redraws_when_a_knob_changes():
    pytest.importorskip("ipywidgets")
    from murphy_lab.widgets import playground

    knobs, out = playground({"ex": informative_failure_tree(), "big": paper_tree(0)}).children
    before = out.outputs[0]["data"]["image/png"]
    controls = _controls(knobs)
    controls["tree"].value = "big"
    controls["b_grp"].value = 4
    assert len(out.outputs) == 1 and out.outputs[0]["data"]["image/png"] != before


def test_playground_explains_knobs_the_library_rejects():
    pytest.importorskip("ipywidgets")
    from murphy_lab.widgets import playground

    knobs, out = playground({"ex": informative_failure_tree(), "big": paper_tree(0)}).children
    _controls(knobs)["b_traj"].value = 8  # larger than the example's groups of 4: intrap raises ValueError
    assert "cannot compute" in out.outputs[0]["text"] and "b_traj" in out.outputs[0]["text"]


def test_viz_and_widgets_import_without_loading_ipywidgets():
    import subprocess
    import sys

    code = "import sys, murphy_lab.viz, murphy_lab.widgets; sys.exit('ipywidgets' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], env={"MPLBACKEND": "Agg"}).returncode == 0


def test_draw_tree_accepts_a_hand_built_three_node_tree():
    t = RolloutTree(Node(children=[Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)]), Node(reward=1.0)]))
    assert draw_tree(t) is not None


def test_check_answer_accepts_a_right_number_and_rejects_a_wrong_one(capsys):
    from murphy_lab.examples import check_answer

    check_answer("x", 0.5, 0.5)
    assert "correct" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="exercise x"):
        check_answer("x", 0.4, 0.5)
