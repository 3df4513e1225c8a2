"""Pruning (MURPHY §3.3): drop uninformative trajectories before the loss, to cut optimization cost.

Both rules look at *immediate* rewards r(u) (they run after execution, before credit backup) and mark dropped
nodes with `node.pruned = True`; nothing is deleted, so a figure can still show what was dropped.

InterP (inter-group), per turn s >= 2: keep the `b_grp` groups with the highest reward variance
    Var({ r(u) : u in g })                                   (population variance)
and prune every member of the others. The turn-1 group is always kept. Paper: 72 -> 40 trajectories (b_grp = 4).

IntraP (intra-group), inside every group: keep the `b_traj` members that contribute most to the group's variance,
    ΔVar(u; C) = Var(C) - Var(C \\ {u})                       (leave-one-out, population variance)
ΔVar grows with |r(u) - mean(C)|, so tied members sit at mean ± d; a tie at the budget's edge is broken so that
the kept set has the largest variance, then by sample order ([1,1,1,1,0,0,0,0], b_traj = 4 keeps [1,1,0,0], not
the four 1s whose advantages would all be 0). `method="exact"` keeps instead the max-variance subset of size b_traj, which is always
the i lowest and b_traj - i highest rewards for some i. Paper: 72 -> 36 trajectories (b_traj = 4).

A dropped node does not drop the group below it: its refinements still carry their own (prompt, completion)
pairs, which is what makes the paper's 72 -> 36 count (9 groups x 4).
"""

from __future__ import annotations

from murphy_lab.tree import Node, RolloutTree


def variance(xs: list[float]) -> float:
    """Population variance (ddof = 0); 0.0 for fewer than two values."""
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def _check_budget(name: str, b: object) -> int:
    if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
        raise ValueError(f"{name} must be a positive integer, got {b!r}")
    return b


def interp(tree: RolloutTree, b_grp: int) -> RolloutTree:
    """InterP: at every turn s >= 2, keep the `b_grp` groups of highest reward variance; prune the rest.

    Ties between groups are broken by order (earlier groups first). If a turn has at most `b_grp` groups, all stay.
    """
    b_grp = _check_budget("b_grp", b_grp)
    tree.validate()
    by_turn: dict[int, list[tuple[Node, list[Node]]]] = {}
    for parent, members in tree.groups():
        by_turn.setdefault(members[0].turn, []).append((parent, members))
    for turn, groups in by_turn.items():
        if turn <= 1:
            continue  # the turn-1 group is always kept
        # stable
        order = sorted(range(len(groups)), key=lambda i: -variance([u.reward for u in groups[i][1]]))
        for i in order[b_grp:]:
            for u in groups[i][1]:
                u.pruned = True
    return tree


def delta_var(rewards: list[float]) -> list[float]:
    """Leave-one-out contributions ΔVar(u; C) = Var(C) - Var(C \\ {u}) for every member u."""
    total = variance(rewards)
    return [total - variance(rewards[:i] + rewards[i + 1 :]) for i in range(len(rewards))]


def _keep_loo(rewards: list[float], b_traj: int, tol: float = 1e-12) -> set[int]:
    dv = delta_var(rewards)
    order = sorted(range(len(rewards)), key=lambda i: -dv[i])
    edge = dv[order[b_traj - 1]]  # the smallest ΔVar that makes the budget
    sure = [i for i in order if dv[i] > edge + tol]
    tied = [i for i in range(len(rewards)) if abs(dv[i] - edge) <= tol]  # equally far from the mean: mean ± d
    mean = sum(rewards) / len(rewards)
    hi, lo = [i for i in tied if rewards[i] >= mean], [i for i in tied if rewards[i] < mean]
    need = b_traj - len(sure)
    # k members from above the mean, need - k below
    splits = range(max(0, need - len(lo)), min(need, len(hi)) + 1)
    picks = [sure + hi[:k] + lo[: need - k] for k in splits]
    # the kept set of largest variance
    return set(max(picks, key=lambda idx: variance([rewards[j] for j in idx])))


def _keep_exact(rewards: list[float], b_traj: int) -> set[int]:
    order = sorted(range(len(rewards)), key=lambda i: rewards[i])  # ascending, stable
    best, best_var = None, -1.0
    for i in range(b_traj + 1):  # i lowest + (b_traj - i) highest
        idx = order[:i] + (order[len(order) - (b_traj - i) :] if b_traj - i > 0 else [])
        v = variance([rewards[j] for j in idx])
        if v > best_var + 1e-12:
            best, best_var = idx, v
    return set(best)


def intrap(tree: RolloutTree, b_traj: int, method: str = "loo") -> RolloutTree:
    """IntraP: inside every group keep the `b_traj` members with the largest variance contribution; prune the rest.

    `method="loo"` ranks members by leave-one-out ΔVar (the paper's rule); `"exact"` keeps the max-variance subset.
    Groups already dropped whole by InterP are left as they are. `b_traj` must be at least 2 (a group of one
    member has no relative advantage) and at most the size of every group.
    """
    b_traj = _check_budget("b_traj", b_traj)
    if b_traj < 2:
        raise ValueError(
            f"b_traj must be >= 2 (a group of size 1 has no group-relative advantage), got {b_traj}"
        )
    if method not in ("loo", "exact"):
        raise ValueError(f"method must be 'loo' or 'exact', got {method!r}")
    tree.validate()
    for _, members in tree.groups():
        if len(members) < b_traj:
            raise ValueError(f"b_traj={b_traj} is larger than a group of {len(members)} members")
        live = [u for u in members if not u.pruned]
        if len(live) <= b_traj:
            continue
        rewards = [u.reward for u in live]
        keep = _keep_loo(rewards, b_traj) if method == "loo" else _keep_exact(rewards, b_traj)
        for i, u in enumerate(live):
            if i not in keep:
                u.pruned = True
    return tree


def unprune(tree: RolloutTree) -> RolloutTree:
    """Clear every `pruned` mark (to compare pruning rules on the same tree)."""
    for n in tree.root.walk():
        n.pruned = False
    return tree
