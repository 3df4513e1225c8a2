"""murphy_lab.viz.trees: layout, draw_tree and credit flow; one property per test, Agg backend."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import murphy_lab.viz  # noqa: E402
from murphy_lab.credit import mars, mers  # noqa: E402
from murphy_lab.examples import informative_failure_tree, paper_tree, small_tree  # noqa: E402
from murphy_lab.grpo import group_advantages  # noqa: E402
from murphy_lab.prune import interp, intrap  # noqa: E402
from murphy_lab.tree import Node, RolloutTree  # noqa: E402
from murphy_lab.viz import credit_flow, curves, trees  # noqa: E402
from murphy_lab.viz.credit_flow import credit_path, draw_credit_flow  # noqa: E402
from murphy_lab.viz.trees import draw_tree, snippet, tree_layout  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


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


def test_draw_tree_accepts_a_hand_built_three_node_tree():
    t = RolloutTree(
        Node(children=[Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)]), Node(reward=1.0)])
    )
    assert draw_tree(t) is not None


def test_snippet_prefers_the_first_failed_assert_and_shortens():
    assert snippet("Tests failed:\nassert f(1) == 2  # output: 3 and a very long tail", width=20).endswith(
        "…"
    )
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


def test_credit_path_with_defaults_follows_the_default_full_backup_on_a_pruned_tree():
    # mars() backs up over the full tree by default; credit_path's default must read the same backup
    t = mars(interp(paper_tree(0), 2))
    v = next(n for n in t.root.children if n.credit > n.reward)
    assert credit_path(t, v)[-1].reward == v.credit


def test_the_package_keeps_the_figure_functions_of_the_old_viz_module():
    for name in ("draw_tree", "tree_layout", "snippet"):
        assert getattr(murphy_lab.viz, name) is getattr(trees, name)
    for name in ("draw_credit_flow", "credit_path"):
        assert getattr(murphy_lab.viz, name) is getattr(credit_flow, name)
    for name in ("plot_curves", "plot_group_advantages", "plot_turn_histograms"):
        assert getattr(murphy_lab.viz, name) is getattr(curves, name)


def test_named_nodes_are_labelled_with_their_letter():
    tree = mars(informative_failure_tree())
    labels = {v.meta["name"]: trees.node_label(v, "credit") for v in tree.root.children}
    assert labels == {"A": "A: 0→1", "B": "B: 0→0", "C": "C: 1→1", "D": "D: 0→1"}
    fig = trees.draw_tree(tree, color_by="credit")
    shown = {t.get_text() for t in fig.axes[0].texts}
    assert {"A: 0→1", "B: 0→0", "C: 1→1", "D: 0→1"} <= shown
