"""Group-relative advantages and the GRPO loss, in plain torch (the teaching version the TRL trainer agrees with).

MURPHY applies GRPO inside every kept response group of the tree (§3.4):

    Â(u) = ( r~(u) - mean_{g} r~ ) / ( std_{g} r~ + eps )          std with Bessel's correction, eps = 1e-4

where g is u's group (its siblings, pruned ones left out) and r~ the credit (falling back to the immediate reward
r when no credit was computed, which is plain GRPO). A group of identical credits gets zero advantages.

The loss, per completion token t of sequence i (ratio ρ = π_θ / π_old, token level):

    L_it = - min( ρ_it Â_i , clip(ρ_it, 1 - ε, 1 + ε) Â_i ) + β · KL_it
    KL_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1        (k3 estimator, >= 0)

aggregated as TRL 1.16 does for its `loss_type` (B sequences, T = padded completion width, L_max = max_completion_length):

    grpo     mean_i ( sum_t L_it / |o_i| )                          per-sequence token mean, then mean over sequences
    bnpo     sum_it L_it / sum_i |o_i|                              token mean over this batch
    dapo     sum_it L_it / num_items_in_batch                       token mean over the whole generation batch (default)
    dr_grpo  sum_it L_it / (B · L_max)                              Dr. GRPO: a constant, the configured limit, not T

Paper values: ε = 0.2, β = 0.04 (TRL >= 0.19 defaults to β = 0: set it), AdamW lr 1e-6.

`token_logps(model, ids)` gives the per-token log π the loss reads; `grpo_step` is one whole step (loss, backward,
update) on a causal LM, as notebook 05 walks through it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from murphy_lab.tree import RolloutTree

if TYPE_CHECKING:  # torch is imported by the functions that compute with it: scoring a tree needs none
    import torch

EPS = 1e-4  # TRL's epsilon in (r - mean) / (std + eps)


def normalize(values: list[float], eps: float = EPS, scale: bool = True) -> list[float]:
    """(x - mean) / (std + eps) with Bessel's correction; `scale=False` only centres (Dr. GRPO style)."""
    if len(values) < 2:
        raise ValueError(
            f"a group needs at least 2 members for a group-relative advantage, got {len(values)}"
        )
    mean = sum(values) / len(values)
    if not scale:
        return [v - mean for v in values]
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))  # Bessel's correction
    return [(v - mean) / (std + eps) for v in values]  # Â = (r~ - mean_g) / (std_g + eps)


def group_advantages(tree: RolloutTree, eps: float = EPS, scale: bool = True) -> RolloutTree:
    """Fill `node.advantage` for every kept non-root node, group by group; pruned nodes get `None`.

    Uses `node.credit` where credit was assigned, else `node.reward` (plain GRPO). Returns the tree.
    """
    tree.validate()
    for n in tree.nodes():
        n.advantage = None
    for parent, members in tree.groups(kept_only=True):
        values = [u.reward if u.credit is None else u.credit for u in members]
        if len(values) < 2:
            raise ValueError(
                f"a kept group of size {len(values)} under a turn-{parent.turn} node of tree {tree.task_id!r}: "
                "group-relative advantages need at least 2 members (check g1/g2 and b_traj)"
            )
        for u, a in zip(members, normalize(values, eps=eps, scale=scale)):
            u.advantage = a
    return tree


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(π_θ || π_ref): exp(ref - logp) - (ref - logp) - 1. Shapes (B, T) -> (B, T)."""
    import torch

    d = ref_logps - logps
    return torch.exp(d) - d - 1


def grpo_loss(
    logps: torch.Tensor,  # (B, T) log π_θ of each completion token
    advantages: torch.Tensor,  # (B,) one advantage per sequence
    mask: torch.Tensor,  # (B, T) 1 for completion tokens, 0 for padding
    old_logps: torch.Tensor | None = None,  # (B, T) log π_old; None = on-policy (ratio 1, clipping inactive)
    ref_logps: torch.Tensor | None = None,  # (B, T) log π_ref; needed when beta > 0
    epsilon: float = 0.2,  # ε, clip range (paper: 0.2)
    epsilon_high: float | None = None,  # upper clip (DAPO); defaults to epsilon
    beta: float = 0.04,  # β, KL coefficient (paper: 0.04)
    loss_type: str = "dapo",
    num_items_in_batch: int | None = None,  # tokens in the whole generation batch (dapo); default mask.sum()
    # L, TRL's generation limit (dr_grpo divides by B · L_max); required there
    max_completion_length: int | None = None,
    bias_correction_kl: bool = False,  # TRL's use_bias_correction_kl: multiply the KL by the ratio
) -> torch.Tensor:
    """The token-level clipped GRPO surrogate with a k3 KL penalty; returns a scalar loss to minimise.

    `loss_type` aggregates as TRL 1.16 does (module docstring): "grpo", "bnpo", "dapo" or "dr_grpo"
    (sum / (B · max_completion_length), as TRL's `_compute_loss`, so `max_completion_length` is required there).
    """
    import torch

    if logps.shape != mask.shape:
        raise ValueError(
            f"logps {tuple(logps.shape)} and mask {tuple(mask.shape)} must have the same (B, T) shape"
        )
    if advantages.shape != logps.shape[:1]:
        raise ValueError(
            f"advantages must have shape (B,) = {tuple(logps.shape[:1])}, got {tuple(advantages.shape)}"
        )
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if beta > 0 and ref_logps is None:
        raise ValueError("ref_logps is required when beta > 0")
    if loss_type == "dr_grpo" and max_completion_length is None:
        raise ValueError(
            "loss_type='dr_grpo' divides by B · max_completion_length (TRL's configured limit, not the "
            "padded width T): pass max_completion_length"
        )
    mask = mask.to(logps.dtype)
    old = logps.detach() if old_logps is None else old_logps
    ratio = torch.exp(logps - old)  # ρ = π_θ / π_old, (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + (epsilon if epsilon_high is None else epsilon_high))
    adv = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * adv, clipped * adv)  # -min(ρÂ, clip(ρ)Â), (B, T)
    if beta > 0:
        kl = k3_kl(logps, ref_logps)  # (B, T)
        if bias_correction_kl:
            kl = kl * ratio
        per_token = per_token + beta * kl
    if loss_type == "grpo":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if loss_type == "bnpo":
        return (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    if loss_type == "dapo":
        n = mask.sum() if num_items_in_batch is None else torch.as_tensor(float(num_items_in_batch))
        return (per_token * mask).sum() / n.clamp(min=1.0)
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (mask.shape[0] * max_completion_length)  # / (B · L_max)
    raise ValueError(f"loss_type must be one of grpo, bnpo, dapo, dr_grpo; got {loss_type!r}")


def token_logps(
    model: torch.nn.Module, ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """log π(ids[:, t] | ids[:, :t]) for t >= 1 under a causal LM (anything whose output has `.logits`).

    Shapes: ids (B, L) -> (B, L-1); position t-1 holds the log-probability of token t, so a completion mask over
    `ids` is aligned with the result as `mask[:, 1:]`.
    """
    import torch

    out = model(ids) if attention_mask is None else model(ids, attention_mask=attention_mask)
    logits = out.logits[:, :-1]  # (B, L-1, V): the prediction for the next token
    return torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, L-1)


def grpo_step(
    model: torch.nn.Module,
    ids: torch.Tensor,  # (B, L) prompt + completion ids
    mask: torch.Tensor,  # (B, L-1) 1 on completion tokens, aligned with token_logps
    advantages: torch.Tensor,  # (B,)
    *,
    lr: float | None = None,  # plain SGD step θ <- θ - lr · ∇L (the teaching step), or ...
    optimizer: torch.optim.Optimizer | None = None,  # ... one optimizer.step() (AdamW in training)
    **loss_kw,  # grpo_loss's options: old_logps, ref_logps, epsilon, beta, loss_type, ...
) -> dict[str, float]:
    """One GRPO step: L = grpo_loss(token_logps(model, ids), Â, mask), backward, one parameter update.

    Returns the loss and the gradient's L2 norm (before the update).
    """
    import torch

    if (lr is None) == (optimizer is None):
        raise ValueError("grpo_step: pass exactly one of lr (a plain SGD step) or optimizer")
    model.zero_grad()
    loss = grpo_loss(token_logps(model, ids), advantages, mask, **loss_kw)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    grad_norm = torch.sqrt(sum((p.grad.float() ** 2).sum() for p in params))
    if optimizer is not None:
        optimizer.step()
    else:
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad  # θ <- θ - lr · ∇_θ L
    return {"loss": loss.item(), "grad_norm": grad_norm.item()}


def training_pairs(tree: RolloutTree) -> list[tuple[object, str, float]]:
    """The (prompt, completion, advantage) triples the loss trains on: every kept non-root node with an advantage."""
    return [
        (n.prompt, n.completion, n.advantage) for n in tree.nodes(kept_only=True) if n.advantage is not None
    ]
