"""Credit assignment over a rollout tree: MURPHY's retrospective backup (§3.2) and the multi-turn rules beside it.

MURPHY backs successes of refinements up to the attempts that led there, bottom-up, leaves first, so a failed
attempt whose feedback enabled a successful refinement is credited:

    leaf:  r~(v) = r(v)
    MaRS:  r~(v) = max( r(v), max_{u in C(v)} r~(u) )                 (max-reward strategy)
    MeRS:  r~(v) = ( r(v) + gamma * mean_{u in C(v)} r~(u) ) / Z(v)    (mean-reward strategy)

The paper states Z = 2 for unsolved (expanded) nodes and Z = 1 for terminal nodes in the two-turn setting; our
default Z(v) = 1 + [v has children] generalises that to any depth and keeps r~ in [0, 1]. Pass `z=` to change it.

`backup_on="full"` (default) backs up over every child, pruned or not: pruning only filters what enters the
gradient, as the paper's text says. `"pruned"` backs up over kept children only, the order of the paper's
flowchart (prune, then back up); a node all of whose children were pruned is then a leaf, so InterP can take the
credit of a failure whose refinements all pass (docs/notation.md, "Backup order", has the example).

Beside them, the multi-turn rules other trainers use, each written for our trees (docs/credit_rules.md compares
them on one example and in the toy ablation): TreeRPO's recursive mean over a node's refinements, Kevin's discounted reward-to-go
with every turn one sample, prime-rl's `turn_credit` (progress deltas smeared back), MT-GRPO's per-turn-index
advantages and GiGPO's anchor-state groups.

`CREDIT_RULES` is the ONE table of rules: each `CreditRule` carries its backup function, its knobs (name,
default, range, the values the ablation trains), its table label and its source; config validation, `score_tree`,
the widgets' sliders, the ablation's rows and its verdict pairs are all built from it. A rule whose baseline is
not the sibling group (MT-GRPO, GiGPO, Kevin) also has an `advantages` function: `score_tree` calls it instead of
GRPO inside each sibling group, passing `normalize` in, so this module stays free of torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from murphy_lab.tree import Node, RolloutTree

ZFn = Callable[[Node, list[Node]], float]


def default_z(node: Node, children: list[Node]) -> float:
    """Z(v) = 1 + [v has children]: 2 for an expanded node, 1 for a terminal one (the paper's two-turn values)."""
    return 1.0 + (1.0 if children else 0.0)


def _children(node: Node, backup_on: str) -> list[Node]:
    if backup_on == "pruned":
        return node.kept_children()
    if backup_on == "full":
        return list(node.children)
    raise ValueError(f"backup_on must be 'pruned' or 'full', got {backup_on!r}")


def _post_order(root: Node) -> list[Node]:
    order = list(root.walk())  # pre-order; reversed, every child comes before its parent
    return order[::-1]


def mars(tree: RolloutTree, backup_on: str = "full") -> RolloutTree:
    """MaRS: credit every node with the best reward reachable through its refinements.

    >>> t = RolloutTree(Node(children=[Node(reward=0.0, children=[Node(reward=1.0), Node(reward=0.0)])]))
    >>> [n.credit for n in mars(t).nodes()]
    [1.0, 1.0, 0.0]
    """
    tree.validate()
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        best_child = max((c.credit for c in kids), default=node.reward)
        node.credit = max(node.reward, best_child)  # MaRS: r~(v) = max(r(v), max_{u in C(v)} r~(u))
    return tree


def mers(tree: RolloutTree, gamma: float = 1.0, z: ZFn = default_z, backup_on: str = "full") -> RolloutTree:
    """MeRS: credit every node with its own reward plus the discounted mean credit of its refinements, over Z(v).

    `gamma` is the paper's γ (0.9 or 1.0 in its ablations); `z(node, children) -> float > 0` is Z(v).
    """
    if not isinstance(gamma, (int, float)) or not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    tree.validate()
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        if not kids:
            node.credit = node.reward  # leaf: r~(v) = r(v)
            continue
        zv = z(node, kids)
        if not zv > 0:
            raise ValueError(f"z must return a positive normaliser, got {zv!r}")
        mean_child = sum(c.credit for c in kids) / len(kids)
        node.credit = (node.reward + gamma * mean_child) / zv  # MeRS: (r(v) + γ·mean_{u∈C(v)} r~(u)) / Z(v)
    return tree


def no_backup(tree: RolloutTree, gamma: float = 1.0, backup_on: str = "full") -> RolloutTree:
    """No retrospective credit: r~(v) = r(v) on every node (plain GRPO inside each group of the tree)."""
    tree.validate()
    for node in tree.root.walk():
        node.credit = node.reward
    return tree


# --- the multi-turn rules beside MaRS / MeRS -------------------------------------------------------------------------
def treerpo(tree: RolloutTree, backup_on: str = "full") -> RolloutTree:
    """TreeRPO's backup: a node is worth the expected reward of the final attempts below it.

    TreeRPO (Yang et al., "TreeRPO: Tree Relative Policy Optimization", arXiv 2506.05183) scores the leaves with the
    verifiable reward and backs them up by a bottom-up recursive expectation, each node the mean of its children,
    then compares siblings (GRPO inside each sibling group, as MaRS / MeRS). Our intermediate nodes are complete
    programs with a reward of their own, which TreeRPO's steps are not: r(v) does not enter once v has refinements
    (MeRS with γ = 1, Z = 1 and without r(v)).
    """
    tree.validate()
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        if not kids:
            node.credit = node.reward  # leaf: r~(v) = r(v)
            continue
        node.credit = sum(c.credit for c in kids) / len(kids)  # TreeRPO: r~(v) = mean_{u in C(v)} r~(u)
    return tree


def _returns(tree: RolloutTree, gamma: float, backup_on: str) -> None:
    for node in _post_order(tree.root):
        kids = _children(node, backup_on)
        mean_child = sum(c.credit for c in kids) / len(kids) if kids else 0.0
        node.credit = node.reward + gamma * mean_child  # R(v) = r(v) + γ·mean_{u∈C(v)} R(u)


def reward_to_go(tree: RolloutTree, gamma: float = 0.4, backup_on: str = "full") -> RolloutTree:
    """Discounted per-turn return: every turn a sample, worth its reward plus γ times what follows it.

    Kevin (Baronio et al., "Kevin: Multi-Turn RL for Generating CUDA Kernels", arXiv 2507.11948) scores turn t of a
    trajectory with R_t = r_t + γ·R_{t+1} (its best setting: the sum with γ = 0.4) and trains every turn as its own
    sample. In a tree a node has several futures, so R(v) averages them. Credits are not bounded by 1 (r + γ·R).
    The advantages are `reward_to_go_advantages`: normalised over every turn of the tree at once.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    tree.validate()
    _returns(tree, gamma, backup_on)
    return tree


def turn_credit(tree: RolloutTree, gamma: float = 0.9, backup_on: str = "full") -> RolloutTree:
    """prime-rl's `turn_credit`: a turn earns its progress δ(v) = r(v) - r(parent), smeared back over its past.

    prime-rl (PrimeIntellect-ai/prime-rl pull request 3282, "turn-credit shaping") scores the state after each turn,
    credits a turn with the change it made (deltas telescope: on a chain the credits sum to its final score), spreads
    the progress of turn t over turns t, t-1, ..., 1 with weights γ^d normalised to sum to 1. It is well-defined
    here because a pass fraction scores the state: each refinement replaces the program, so r(v) is the state
    after turn v; the task prompt (the root) passes nothing, r(root) = 0. In a tree, the share a node receives from
    its descendants is averaged over its children, as any expectation over futures:

        w_d(t)  = γ^d / sum_{k=0}^{t-1} γ^k              weight of distance d for progress made at turn t
        c(v)    = F(v, 0),   F(v, d) = w_d(turn(v))·δ(v) + mean_{u∈C(v)} F(u, d + 1)

    With γ = 0 a turn keeps exactly its own progress; with γ = 1 progress is spread evenly over the path.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    tree.validate()
    tree.root.credit = 0.0
    parent_reward = {id(c): 0.0 for c in tree.root.children}  # r(root) = 0: the empty state passes nothing
    for node in tree.nodes():
        for c in node.children:
            parent_reward[id(c)] = node.reward

    def share(node: Node, d: int) -> float:  # F(v, d)
        t = node.turn
        weight = gamma**d / sum(gamma**k for k in range(t))  # w_d(t) = γ^d / Σ_{k<t} γ^k  (0^0 = 1)
        delta = node.reward - parent_reward[id(node)]  # δ(v) = r(v) - r(parent(v))
        kids = _children(node, backup_on)
        below = sum(share(u, d + 1) for u in kids) / len(kids) if kids else 0.0
        return weight * delta + below

    for node in tree.nodes():
        node.credit = share(node, 0)  # c(v) = F(v, 0)
    return tree


def mt_grpo(tree: RolloutTree, backup_on: str = "full") -> RolloutTree:
    """MT-GRPO's credit, shown in figures: the outcome o(v), the expected final reward reached through v (TreeRPO's
    r~). MT-GRPO is an advantage rule (`mt_grpo_advantages`); its credit field records the outcome term it uses."""
    return treerpo(tree, backup_on)  # o(v): the recursive mean of the final rewards below v


# --- rules whose baseline is not the sibling group: they fill the advantages themselves ---------------------------
Normalize = Callable[[list[float]], list[float]]  # grpo.normalize: (x - mean) / (std + eps), Bessel's std


def _standardised(nodes: list[Node], values: list[float], normalize: Normalize) -> dict[int, float]:
    """Each node's normalised value inside `nodes`; a group of one has no baseline and gets 0."""
    if len(nodes) < 2:
        return {id(n): 0.0 for n in nodes}
    return {id(n): a for n, a in zip(nodes, normalize(values))}


def _kept(tree: RolloutTree) -> list[Node]:
    for n in tree.nodes():
        n.advantage = None
    return tree.nodes(kept_only=True)


def reward_to_go_advantages(trees: list[RolloutTree], normalize: Normalize, **_: float) -> None:
    """Kevin's baseline: Â(v) = (R(v) - mean_T R) / (std_T R + eps) over every kept turn T of the tree at once."""
    for tree in trees:
        kept = _kept(tree)
        adv = _standardised(kept, [n.credit for n in kept], normalize)
        for n in kept:
            n.advantage = adv[id(n)]  # one group: every turn of the tree is a sample


def mt_grpo_advantages(
    trees: list[RolloutTree], normalize: Normalize, lam: float = 1.0, per_turn: bool = True
) -> None:
    """MT-GRPO's turn-level advantage, normalised per turn index s (the kept nodes of the tree at turn s):

        Â(v) = Â^T_s(v) + λ·Â^O_s(v),   Â^T: the turn's own reward r(v), Â^O: the outcome o(v) (expected final reward)

    after MT-GRPO ("Reinforcing Multi-Turn Reasoning in LLM Agents via Turn-Level Credit Assignment", arXiv
    2505.11821: turn reward plus λ times outcome, each normalised over its group). For a chain, o(v) is the chain's
    final reward and the last turn's two terms coincide. `per_turn=False` normalises across all turns at once, the
    construction the verl RFC on per-turn rewards (verl-project/verl issue 7244) warns about: when later turns
    score higher (refinements see feedback), pooling hands every first attempt a negative advantage whatever its
    quality (tests/test_credit.py shows it on a hand tree).
    """
    for tree in trees:
        kept = _kept(tree)
        turns = sorted({n.turn for n in kept}) if per_turn else [None]
        for s in turns:
            group = [n for n in kept if s is None or n.turn == s]
            a_t = _standardised(group, [n.reward for n in group], normalize)  # Â^T: turn-level reward r(v)
            a_o = _standardised(group, [n.credit for n in group], normalize)  # Â^O: outcome o(v)
            for n in group:
                n.advantage = a_t[id(n)] + lam * a_o[id(n)]  # Â = Â^T + λ·Â^O


def anchor(node: Node, parent: Node, task_id: str) -> tuple:
    """GiGPO's anchor state of `node`: the prompt it was sampled from. Turn-1 nodes share the task prompt; a
    refinement shares its state with every refinement of the same failed program and feedback (across trees of
    one task); a parent without recorded code (a hand-built tree) is its own state."""
    if parent.turn == 0:
        return (task_id, "task prompt")
    return (task_id, parent.code, parent.feedback) if parent.code else (task_id, id(parent))


def gigpo(tree: RolloutTree, gamma: float = 1.0, backup_on: str = "full") -> RolloutTree:
    """GiGPO's credit: the discounted return R(v) = r(v) + γ·mean_{u∈C(v)} R(u) of every step (shown in figures);
    the rule is its two-level advantage, `gigpo_advantages`."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    tree.validate()
    _returns(tree, gamma, backup_on)
    return tree


def gigpo_advantages(trees: list[RolloutTree], normalize: Normalize, omega: float = 1.0) -> None:
    """GiGPO's group-in-group advantage over the trees of ONE task:

        Â(v) = A^E(v) + ω·A^S(v)
        A^E: the episode's return R(e) of v's turn-1 ancestor e, normalised over every turn-1 node of the task
        A^S: the step return R(v), normalised inside v's anchor group (nodes sampled from the same state)

    after GiGPO (Feng et al., "Group-in-Group Policy Optimization for LLM Agent Training", arXiv 2505.10978), with
    the anchor states of `anchor`: refinements of identical failed programs with identical feedback share one
    group, so duplicate failures pool their refinements (within a tree and across trees of the task). A state seen
    once has the plain sibling group; a node alone in its group gets A^S = 0.
    """
    kept_by_tree = [(t, _kept(t)) for t in trees]
    parent: dict[int, Node] = {}
    for t, _ in kept_by_tree:
        for p in t.root.walk():
            for c in p.children:
                parent[id(c)] = p
    episodes = [n for t, kept in kept_by_tree for n in kept if n.turn == 1]
    # A^E over the episodes of the task
    a_e = _standardised(episodes, [n.credit for n in episodes], normalize)
    groups: dict[tuple, list[Node]] = {}
    for t, kept in kept_by_tree:
        for n in kept:
            groups.setdefault(anchor(n, parent[id(n)], t.task_id), []).append(n)
    a_s: dict[int, float] = {}
    for members in groups.values():
        # A^S inside the anchor group
        a_s.update(_standardised(members, [n.credit for n in members], normalize))
    for _, kept in kept_by_tree:
        for n in kept:
            e = n
            while e.turn > 1:
                e = parent[id(e)]
            n.advantage = a_e.get(id(e), 0.0) + omega * a_s[id(n)]  # Â = A^E + ω·A^S


# --- the rule table ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Knob:
    """A number a rule reads, with its range: a config field (`gamma`) or an entry of `credit_args`."""

    name: str
    default: float
    low: float
    high: float
    doc: str
    # the values the credit ablation trains (γ only: the Experiment's one knob)
    ablate: tuple[float, ...] = ()
    stage: str = "backup"  # which function reads it: the rule's "backup" or its "advantages"


GAMMA_DOC = "γ, the discount of what follows a turn"


@dataclass(frozen=True)
class CreditRule:
    """One credit rule: its config name, table label, backup, knobs, optional own advantages, and source.

    `backup(tree, backup_on=..., **knobs)` fills `node.credit`; `advantages(trees, normalize, **knobs)` (None:
    GRPO inside every kept sibling group, `grpo.group_advantages`) fills `node.advantage` for the trees of one task.
    """

    name: str
    label: str  # the table's and figures' name
    backup: Callable[..., RolloutTree]
    knobs: tuple[Knob, ...] = ()
    advantages: Callable[..., None] | None = None
    source: str = ""  # where the rule comes from (the docstring of `backup` cites it in full)

    @property
    def discounted(self) -> bool:
        """Reads γ: its ablation label and recipe name carry it ("mers_0.9")."""
        return any(k.name == "gamma" for k in self.knobs)

    def stage_values(self, stage: str, values: dict[str, float]) -> dict[str, float]:
        """The knob values one function of the rule reads ("backup" or "advantages")."""
        return {k.name: values[k.name] for k in self.knobs if k.stage == stage}

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)

    def knob_values(self, gamma: float | None = None, **credit_args: float) -> dict[str, float]:
        """This rule's knobs from the config's γ and `credit_args`, defaults filled, ranges checked (one-line error)."""
        names = [k.name for k in self.knobs]
        unknown = sorted(set(credit_args) - set(names))
        if unknown:
            raise ValueError(f"credit rule {self.name!r} has no knob {unknown[0]!r}; its knobs: {names}")
        given = dict(credit_args, **({} if gamma is None else {"gamma": gamma}))
        values = {}
        for k in self.knobs:
            v = given.get(k.name, k.default)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not k.low <= v <= k.high:
                raise ValueError(
                    f"credit rule {self.name!r}: {k.name} must lie in [{k.low:g}, {k.high:g}], got {v!r}"
                )
            values[k.name] = float(v)
        return values

    def ablation_gammas(self) -> tuple[float, ...]:
        """The γ values the credit ablation trains this rule with (1.0, unused, for a rule without γ)."""
        return (self.knob("gamma").ablate or (self.knob("gamma").default,)) if self.discounted else (1.0,)

    def variant(self, gamma: float = 1.0) -> str:
        """The run's variant label: the name, with γ for a rule that reads it ("mars", "mers_0.9")."""
        return f"{self.name}_{_fmt(gamma)}" if self.discounted else self.name

    def table_label(self, gamma: float = 1.0) -> str:
        """The table's row label: "MaRS", "MeRS γ=0.9"."""
        return f"{self.label} γ={_fmt(gamma)}" if self.discounted else self.label


def _fmt(gamma: float) -> str:
    return f"{gamma:g}" if gamma % 1 else f"{gamma:.1f}"


def _gamma(default: float, ablate: tuple[float, ...]) -> Knob:
    return Knob("gamma", default, 0.0, 1.0, GAMMA_DOC, ablate)


def _mars(tree: RolloutTree, backup_on: str) -> RolloutTree:
    return mars(tree, backup_on=backup_on)


def _none(tree: RolloutTree, backup_on: str) -> RolloutTree:
    return no_backup(tree)


# The ONE table of credit rules. A rule added here is selectable everywhere (MurphyConfig.credit, Experiment.credit,
# the widgets, `score_tree`) and appears in the credit ablation with its verdict line against MaRS.
CREDIT_RULES: dict[str, CreditRule] = {
    "mars": CreditRule("mars", "MaRS", _mars, source="MURPHY §3.2 (arXiv 2511.07833)"),
    "mers": CreditRule(
        "mers", "MeRS", mers, (_gamma(1.0, (0.9, 1.0)),), source="MURPHY §3.2 (arXiv 2511.07833)"
    ),
    "none": CreditRule("none", "no backup", _none, source="GRPO inside each group of the tree"),
    "treerpo": CreditRule("treerpo", "TreeRPO", treerpo, source="TreeRPO (arXiv 2506.05183)"),
    "reward_to_go": CreditRule(
        "reward_to_go",
        "reward-to-go",
        reward_to_go,
        (_gamma(0.4, (0.4,)),),
        reward_to_go_advantages,
        source="Kevin (arXiv 2507.11948)",
    ),
    "turn_credit": CreditRule(
        "turn_credit",
        "turn credit",
        turn_credit,
        (_gamma(0.9, (0.9,)),),
        source="prime-rl turn_credit (PrimeIntellect-ai/prime-rl#3282)",
    ),
    "mt_grpo": CreditRule(
        "mt_grpo",
        "MT-GRPO turn-level",
        mt_grpo,
        (Knob("lam", 1.0, 0.0, 2.0, "λ, weight of the outcome term Â^O", stage="advantages"),),
        mt_grpo_advantages,
        source="MT-GRPO (arXiv 2505.11821)",
    ),
    "gigpo": CreditRule(
        "gigpo",
        "GiGPO anchors",
        gigpo,
        (
            _gamma(1.0, (1.0,)),
            Knob("omega", 1.0, 0.0, 2.0, "ω, weight of the step-level term A^S", stage="advantages"),
        ),
        gigpo_advantages,
        source="GiGPO (arXiv 2505.10978)",
    ),
}


def credit_rule(name: str) -> CreditRule:
    """The CreditRule called `name` (ValueError naming the known ones otherwise)."""
    if name not in CREDIT_RULES:
        raise ValueError(f"credit rule must be one of {tuple(CREDIT_RULES)}, got {name!r}")
    return CREDIT_RULES[name]


def assign_credit(
    tree: RolloutTree,
    credit: str = "mars",
    gamma: float | None = None,
    backup_on: str = "full",
    **credit_args: float,
) -> RolloutTree:
    """Back credit up by the rule called `credit` (`CREDIT_RULES`); knobs default to the rule's own."""
    rule = credit_rule(credit)
    knobs = rule.knob_values(gamma=gamma if rule.discounted else None, **credit_args)
    return rule.backup(tree, backup_on=backup_on, **rule.stage_values("backup", knobs))
