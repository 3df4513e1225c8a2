"""Knobs for the ablation playground: recompute pruning, credit and advantages on a tree and redraw it.

`compute(tree, ...)` is `scoring.score_tree` — the pipeline the trainer runs — on a *copy* of the tree:

    interp(b_grp) -> intrap(b_traj) -> the credit rule's backup -> its advantages (GRPO in each sibling group,
    or the rule's own baseline: MT-GRPO, GiGPO, reward-to-go)

A budget of None is off, as in the trainer; the sliders' 0 ("off") is turned into None where the sliders are read
(`playground`), and nowhere else.

`render(tree, ...)` draws the result (a static Figure: papermill, printed notes). `playground(trees)` wraps both in
ipywidgets controls (credit rule, one slider per knob of the rule table — γ, λ, ω — with the knob's range, b_grp,
b_traj, backup on the pruned or the full tree, which tree, color) that redraw live in JupyterLab; a slider the
selected rule does not read is disabled. ipywidgets is imported only inside `playground`, so this module imports without it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from murphy_lab.credit import CREDIT_RULES, Knob, credit_rule
from murphy_lab.scoring import score_tree
from murphy_lab.tree import RolloutTree
from murphy_lab.viz import palette
from murphy_lab.viz.curves import plot_group_advantages
from murphy_lab.viz.trees import draw_tree


def copy_tree(tree: RolloutTree) -> RolloutTree:
    """A deep copy through the tree's own JSON form (what a training run saves), so knobs never touch the input."""
    return RolloutTree.from_json(tree.to_json())


def compute(
    tree: RolloutTree,
    credit: str = "mars",
    gamma: float = 1.0,  # = γ, the discount of the rules that read one (ignored by MaRS)
    b_grp: int | None = None,  # = b_grp, InterP budget; None = no InterP
    b_traj: int | None = None,  # = b_traj, IntraP budget; None = no IntraP
    # back credit up over all children ("full", the default) or the kept ones ("pruned")
    backup_on: str = "full",
    **credit_args: float,  # the rule's other knobs (credit.CREDIT_RULES), e.g. omega=0.5 for "gigpo"
) -> RolloutTree:
    """Prune, back up credit and compute advantages on a copy of `tree`; return the copy (the input is unchanged).

    `credit` names a rule of `credit.CREDIT_RULES` ('mars', 'mers', 'none' = no backup, 'gigpo', ...); every knob
    is MurphyConfig's field of the same name (a rule's own knobs are MurphyConfig.credit_args).
    """
    if not isinstance(tree, RolloutTree):
        raise TypeError(f"tree must be a RolloutTree, got {type(tree).__name__}")
    credit_rule(credit)  # an unknown rule is an error naming the known ones
    return score_tree(
        copy_tree(tree),
        mode="murphy",
        credit=credit,
        gamma=gamma,
        b_grp=b_grp,
        b_traj=b_traj,
        backup_on=backup_on,
        credit_args=credit_args,
    )


def knobs_of_all_rules() -> dict[str, Knob]:
    """Every knob of the rule table by name (the first rule's range for a shared name): one slider each."""
    found: dict[str, Knob] = {}
    for rule in CREDIT_RULES.values():
        for k in rule.knobs:
            found.setdefault(k.name, k)
    return found


def slider_budget(value: int) -> int | None:
    """A budget slider's value as the library reads it: 0 ("off" on the slider) is None."""
    return None if value == 0 else value


def summary(tree: RolloutTree) -> dict:
    """Counts a knob changes: trajectories kept, groups kept, and how many kept nodes carry a non-zero advantage."""
    kept = tree.nodes(kept_only=True)
    return {
        "trajectories": len(tree.nodes()),
        "kept": len(kept),
        "groups_kept": len(tree.groups(kept_only=True)),
        "nonzero_advantage": sum(1 for n in kept if n.advantage is not None and abs(n.advantage) > 1e-6),
    }


def render(tree: RolloutTree, color_by: str = "credit", advantages: bool = True, **knobs) -> Figure:
    """`compute(tree, **knobs)` then draw it (and, with `advantages`, the advantage of every kept group beside it)."""
    t = compute(tree, **knobs)
    if not advantages:
        return draw_tree(t, color_by=color_by)
    fig = plt.figure(figsize=(16, 8.5))
    gs = fig.add_gridspec(2, 1, height_ratios=[1.7, 1.0], hspace=0.25)
    ax_tree, ax_adv = fig.add_subplot(gs[0]), fig.add_subplot(gs[1])
    s = summary(t)
    rule = credit_rule(knobs.get("credit", "mars"))
    own = "".join(
        f", {k.name}={knobs[k.name]:g}" for k in rule.knobs if k.name != "gamma" and k.name in knobs
    )
    rule = rule.table_label(knobs.get("gamma", 1.0)) + own
    title = (
        f"{rule}  ·  kept {s['kept']}/{s['trajectories']} trajectories, "
        f"{s['groups_kept']} groups, {s['nonzero_advantage']} non-zero advantages"
    )
    draw_tree(t, color_by=color_by, ax=ax_tree, title=title, legend=False)
    plot_group_advantages(t, ax=ax_adv)
    ax_adv.set_title("advantages per kept group", fontsize=9 * max(1.0, fig.get_size_inches()[0] / 9))
    return fig


def playground(
    trees: RolloutTree | Sequence[RolloutTree] | Mapping[str, RolloutTree], color_by: str = "credit"
):
    """ipywidgets controls over `render`: credit rule, its knobs, b_grp, b_traj, backup_on, which tree, color.

    Returns a VBox (controls, then an Output holding the current figure as a PNG) to display in a notebook. Needs
    ipywidgets (the `notebooks` extra); the controls act only in a live kernel, so in a papermill run call
    `render` with fixed knobs as well.
    """
    import ipywidgets as w  # imported here so that murphy_lab.viz.widgets imports without ipywidgets
    from IPython.display import Image

    if isinstance(trees, RolloutTree):
        trees = {trees.task_id or "tree": trees}
    elif not isinstance(trees, Mapping):
        trees = {t.task_id or f"tree {i}": t for i, t in enumerate(trees)}
    if not trees:
        raise ValueError("trees is empty")
    names = list(trees)
    max_group = max(len(m) for t in trees.values() for _, m in t.groups())
    max_groups = max(len(t.groups()) for t in trees.values())

    which = w.Dropdown(options=names, value=names[0], description="tree")
    credit = w.ToggleButtons(options=list(CREDIT_RULES), value="mars", description="credit")
    sliders = {
        name: w.FloatSlider(
            value=1.0 if name == "gamma" else k.default,
            min=k.low,
            max=k.high,
            step=0.05,
            description=k.doc.partition(",")[0],
            tooltip=k.doc,
        )
        for name, k in knobs_of_all_rules().items()
    }  # built from the rule table: γ, λ, ω
    b_grp = w.IntSlider(value=0, min=0, max=max_groups, description="b_grp", tooltip="InterP budget; 0 = off")
    b_traj = w.SelectionSlider(
        options=[0] + list(range(2, max_group + 1)),
        value=0,
        description="b_traj",
        tooltip="IntraP budget; 0 = off (a kept group needs at least 2 members)",
    )
    backup_on = w.ToggleButtons(options=["full", "pruned"], value="full", description="backup on")
    color = w.ToggleButtons(options=["reward", "credit", "advantage"], value=color_by, description="color")
    out = w.Output()

    def redraw(*_):
        reads = {k.name for k in credit_rule(credit.value).knobs}
        for name, slider in sliders.items():
            slider.disabled = name not in reads
        # Outputs are set on the widget itself (not captured with `with out:`), so the figure shows the same in
        # JupyterLab, in VS Code and in a kernel without a frontend (where the tests look at `out.outputs`).
        try:
            own = {name: s.value for name, s in sliders.items() if name in reads and name != "gamma"}
            fig = render(
                trees[which.value],
                color_by=color.value,
                credit=credit.value,
                gamma=sliders["gamma"].value,
                b_grp=slider_budget(b_grp.value),
                b_traj=slider_budget(b_traj.value),
                backup_on=backup_on.value,
                **own,
            )
        except ValueError as err:  # e.g. b_traj larger than a group: say so instead of a traceback
            out.outputs = ()
            out.append_stdout(f"cannot compute with these knobs: {err}\n")
            return
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
        plt.close(fig)
        out.outputs = ()
        out.append_display_data(Image(buf.getvalue()))

    for control in (which, credit, *sliders.values(), b_grp, b_traj, backup_on, color):
        control.observe(redraw, names="value")
    redraw()
    knobs = w.VBox(
        [w.HBox([which, color]), credit, w.HBox([*sliders.values(), backup_on]), w.HBox([b_grp, b_traj])]
    )
    return w.VBox([knobs, out])


def compare_rules(tree: RolloutTree, rules: Sequence[str] | None = None, **knobs) -> dict[str, RolloutTree]:
    """`compute(tree, credit=rule, **knobs)` for every rule of the table (or `rules`): one scored copy each."""
    return {name: compute(tree, credit=name, **knobs) for name in (rules or list(CREDIT_RULES))}


def draw_rule_comparison(
    tree: RolloutTree, rules: Sequence[str] | None = None, gamma: float | None = None, **knobs
) -> Figure:
    """How each credit rule distributes advantage over one tree: a row per rule, a column per node (the turn-1
    group, then each failure's refinements beside it), colored by Â (red < 0 < blue); the top row is r(v).

    `gamma=None` gives every rule that reads γ its own ablation value (`CreditRule.ablation_gammas()[0]`).
    """
    scored = {}
    for name in rules or list(CREDIT_RULES):
        rule = credit_rule(name)
        g = rule.ablation_gammas()[0] if gamma is None else gamma
        scored[rule.table_label(g)] = compute(tree, credit=name, gamma=g, **knobs)
    first = next(iter(scored.values()))
    order = [v for v in first.root.children] + [u for v in first.root.children for u in v.children]
    index = {id(n): i for i, n in enumerate(first.nodes())}
    columns = [index[id(n)] for n in order]
    rows = [[t.nodes()[i].advantage for i in columns] for t in scored.values()]
    values = [[float("nan") if a is None else a for a in row] for row in rows]
    rewards = [[first.nodes()[i].reward for i in columns]]
    fig, (ax_r, ax) = plt.subplots(
        2,
        1,
        figsize=(min(22, 2 + 0.28 * len(columns)), 1.2 + 0.42 * len(rows)),
        height_ratios=[1, len(rows)],
        sharex=True,
    )
    ax_r.imshow(rewards, cmap=palette.VALUE_CMAP, vmin=0, vmax=1, aspect="auto")
    ax_r.set_yticks([0], ["r(v)"])
    lim = max(1e-6, max(abs(a) for row in values for a in row if a == a))
    im = ax.imshow(values, cmap=palette.ADVANTAGE_CMAP, vmin=-lim, vmax=lim, aspect="auto")
    ax.set_yticks(range(len(scored)), list(scored))
    n1 = len(first.root.children)
    ax.set_xticks([(n1 - 1) / 2], ["turn-1 group"])
    edge = n1 - 0.5
    for a in (ax_r, ax):
        a.axvline(edge, color=palette.INK, lw=1.5)
    for v in first.root.children:
        if v.children:
            a_start = edge
            edge += len(v.children)
            for a in (ax_r, ax):
                a.axvline(edge, color=palette.EDGE, lw=0.5)
            ax.text(
                (a_start + edge) / 2,
                len(scored) - 0.4,
                f"C({first.root.children.index(v) + 1})",
                ha="center",
                va="top",
                fontsize=7,
            )
    fig.colorbar(im, ax=[ax_r, ax], label="advantage Â", shrink=0.8)
    ax_r.set_title(
        f"{tree.task_id or 'tree'}: advantage per node under each credit rule (blank: pruned)", fontsize=10
    )
    return fig
