"""ReVeal's rewards and TAPO (turn-aware policy optimization) advantages, as pure functions over chains.

ReVeal §3.2 decomposes the reward into an outcome reward, a dense generation reward per generation turn and a
verification reward per verification turn, and gives each turn's tokens a turn-level advantage (TAPO). The paper
states the ingredients but not every formula; the exact definitions used here (docs/reveal.md) are:

For chain i of a task with rounds t = 1..T_i, candidate c_t, oracle (hidden-test) pass rate h_t ∈ [0, 1], h_0 = 0:

    outcome        R_i       = 1[c_{T_i} passes every oracle test]                           (binary, final program)
    generation     r^g_{i,t} = h_t − h_{t−1}                           (improvement over the previous generation turn)
    verification   r^v_{i,t} = (|V_t| / max(1, |T_t|)) · 1[ verdict_t = oracle_t ]
                   T_t: the tests written in round t; V_t ⊆ T_t: the valid ones (pass the reference);
                   verdict_t = [|V_t| ≥ 1 and c_t passes every test in V_t]   (the model's own judgement);
                   oracle_t  = [c_t passes every oracle test].
                   So a wrong program earns verification reward only when a valid test catches it, a right one only
                   when valid tests confirm it; invalid tests scale the reward down; no tests earn nothing.

    turn returns   G^g_{i,t} = Σ_{t' ≥ t} γ^{t'−t} r^g_{i,t'}     G^v_{i,t} = Σ_{t' ≥ t} γ^{t'−t} r^v_{i,t'}
                   (with γ = 1, G^g_{i,t} = h_{T_i} − h_{t−1}: how much this and later generation turns improved)
    TAPO           A_{i,t}^{gen} = Â^out_i + Â^g_{i,t}      A_{i,t}^{ver} = Â^out_i + Â^v_{i,t}
                   Â^out_i   = (R_i − mean_j R_j) / (std_j R_j + ε)        over the task's G chains (GRPO)
                   Â^g_{i,t} = (G^g_{i,t} − mean_j G^g_{j,t}) / (std_j + ε) over the chains that reached round t
                   (0 when fewer than two did); likewise Â^v.  Bessel std, ε = 1e-4 (TRL's convention).

Our choices where the paper is silent: generation and verification returns are kept apart (a verification reward
never flows into generation tokens, so writing worse code to make tests "catch" it is never rewarded — the reward
hacking the paper guards against); the outcome advantage is added to every token of the chain; chains that stop
early (self-verified) are normalized only against chains that played the same round.
"""

from __future__ import annotations

from collections.abc import Sequence

from murphy_lab.baselines.reveal.chain import Chain, Turn
from murphy_lab.grpo import EPS, normalize


def generation_reward(h_t: float, h_prev: float) -> float:
    """r^g_t = h_t − h_{t−1}: the change in oracle pass rate this generation turn brought."""
    return h_t - h_prev


def verification_reward(turn: Turn) -> float:
    """r^v_t = (|V_t| / max(1, |T_t|)) · 1[verdict_t = oracle_t] (see the module docstring)."""
    c = turn.check
    if c.solved is None:
        raise ValueError("verification_reward needs the oracle verdict: run the chain with oracle tests")
    valid_frac = c.n_valid / max(1, len(c.tests))
    return valid_frac * float(c.verdict == c.solved)


def turn_rewards(chain: Chain) -> Chain:
    """Fill r_gen and r_ver on every turn and the chain's outcome R; returns the chain."""
    if not chain.turns:
        raise ValueError(f"chain {chain.task_id}/{chain.index} has no turns")
    h_prev = 0.0  # h_0 = 0
    for t in chain.turns:
        if t.check.oracle is None:
            raise ValueError(
                f"chain {chain.task_id}/{chain.index}: a turn has no reward-test pass rate (reward_tests=None)"
            )
        t.r_gen = generation_reward(t.check.oracle, h_prev)  # r^g_t = h_t − h_{t−1}
        t.r_ver = verification_reward(t)  # r^v_t
        h_prev = t.check.oracle
    chain.outcome = float(bool(chain.turns[-1].check.solved))  # R = 1[final program solves the oracle tests]
    return chain


def returns(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    """G_t = Σ_{t' ≥ t} γ^{t'−t} r_{t'} (discounted reward-to-go over one chain's turns)."""
    out, g = [], 0.0
    for r in reversed(list(rewards)):
        g = r + gamma * g
        out.append(g)
    return out[::-1]


def tapo(chains: Sequence[Chain], gamma: float = 1.0, eps: float = EPS) -> list[Chain]:
    """TAPO advantages for ONE task's group of chains (rewards filled first if missing); returns the chains.

    Sets `turn.adv_gen` (generation-turn tokens) and `turn.adv_ver` (verification-turn tokens) on every turn.
    """
    chains = list(chains)
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    if len({c.task_id for c in chains}) > 1:
        raise ValueError("tapo normalizes within one task's group: the chains come from several tasks")
    for c in chains:
        if c.outcome is None or any(t.r_gen is None or t.r_ver is None for t in c.turns):
            turn_rewards(c)
    outcome = [c.outcome for c in chains]
    a_out = normalize(outcome, eps=eps) if len(chains) >= 2 else [0.0] * len(chains)  # Â^out_i
    g_gen = [returns([t.r_gen for t in c.turns], gamma) for c in chains]  # G^g_{i,t}
    g_ver = [returns([t.r_ver for t in c.turns], gamma) for c in chains]  # G^v_{i,t}
    for t in range(max(len(c.turns) for c in chains)):
        present = [i for i, c in enumerate(chains) if len(c.turns) > t]
        if len(present) >= 2:
            a_g = normalize([g_gen[i][t] for i in present], eps=eps)  # Â^g_{i,t}, across the group
            a_v = normalize([g_ver[i][t] for i in present], eps=eps)  # Â^v_{i,t}
        else:
            a_g = a_v = [0.0] * len(present)
        for i, ag, av in zip(present, a_g, a_v):
            turn = chains[i].turns[t]
            turn.adv_gen = a_out[i] + ag  # A^gen_{i,t} = Â^out_i + Â^g_{i,t}
            turn.adv_ver = a_out[i] + av  # A^ver_{i,t} = Â^out_i + Â^v_{i,t}
    return chains


def tapo_groups(chains: Sequence[Chain], gamma: float = 1.0, eps: float = EPS) -> list[Chain]:
    """`tapo` on every task's group (chains grouped by task_id, order kept)."""
    groups: dict[str, list[Chain]] = {}
    for c in chains:
        groups.setdefault(c.task_id, []).append(c)
    for g in groups.values():
        tapo(g, gamma=gamma, eps=eps)
    return list(chains)
