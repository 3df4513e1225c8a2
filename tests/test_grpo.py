import math
from types import SimpleNamespace

import pytest
import torch
from trees import informative_tree, paper_tree

from murphy_lab.credit import mars
from murphy_lab.grpo import (
    group_advantages,
    grpo_loss,
    grpo_step,
    k3_kl,
    normalize,
    token_logps,
    training_pairs,
)
from murphy_lab.modes import grpo_mt, grpo_single
from murphy_lab.prune import intrap
from murphy_lab.tree import Node, RolloutTree


def test_normalize_uses_bessel_std_and_eps():
    # mean 0.5, Bessel std of [0, 1] = sqrt(0.5)
    s = math.sqrt(0.5)
    assert normalize([0.0, 1.0]) == pytest.approx([-0.5 / (s + 1e-4), 0.5 / (s + 1e-4)])


def test_constant_group_gets_zero_advantages():
    assert normalize([0.3, 0.3, 0.3]) == [0.0, 0.0, 0.0]


def test_group_advantages_use_credit_by_hand():
    t = group_advantages(mars(informative_tree()))
    a, b, c = t.root.children
    # turn-1 credits [1, 0, 1]: mean 2/3, Bessel std sqrt(1/3)
    s = math.sqrt(1 / 3) + 1e-4
    assert (a.advantage, b.advantage, c.advantage) == pytest.approx([(1 / 3) / s, (-2 / 3) / s, (1 / 3) / s])


def test_group_advantages_fall_back_to_reward_without_credit():
    t = group_advantages(informative_tree())
    assert t.root.children[0].advantage == pytest.approx(t.root.children[1].advantage)  # both reward 0


def test_pruned_nodes_get_no_advantage():
    t = group_advantages(mars(intrap(paper_tree(), b_traj=4)))
    assert all((n.advantage is None) == n.pruned for n in t.nodes())
    assert len(training_pairs(t)) == 36


def test_group_of_size_one_is_rejected():
    t = RolloutTree(Node(children=[Node(children=[Node(reward=1.0)]), Node()]))
    with pytest.raises(ValueError, match="size 1"):
        group_advantages(t)


def test_grpo_mt_broadcasts_final_reward_and_normalizes_across_chains():
    chains = [
        Node(reward=0.0, children=[Node(reward=1.0)]),
        Node(reward=0.0, children=[Node(reward=0.0)]),
        Node(reward=1.0),
    ]
    t = grpo_mt(RolloutTree(Node(children=chains)))
    finals = [1.0, 0.0, 1.0]
    expect = normalize(finals)
    for head, adv, r in zip(t.root.children, expect, finals):
        for n in head.walk():
            assert n.credit == r and n.advantage == pytest.approx(adv)


def test_grpo_mt_rejects_branching_chains():
    with pytest.raises(ValueError, match="g2=1"):
        grpo_mt(informative_tree())


def test_grpo_single_trains_on_turn_one_only():
    t = grpo_single(informative_tree())
    assert all(n.advantage is None for n in t.nodes() if n.turn == 2)
    assert len(training_pairs(t)) == 3


def _direct_loss(logps, old, ref, adv, mask, eps, beta):
    """Token-by-token loop: -min(ρA, clip(ρ)A) + β k3, averaged over all completion tokens."""
    total, count = 0.0, 0
    for i in range(logps.shape[0]):
        for t in range(logps.shape[1]):
            if mask[i, t]:
                rho = torch.exp(logps[i, t] - old[i, t])
                surr = torch.min(rho * adv[i], torch.clamp(rho, 1 - eps, 1 + eps) * adv[i])
                kl = torch.exp(ref[i, t] - logps[i, t]) - (ref[i, t] - logps[i, t]) - 1
                total = total + (-surr + beta * kl)
                count += 1
    return total / count


def _random_batch(seed):
    g = torch.Generator().manual_seed(seed)
    B, T = 4, 6
    logps = (-torch.rand(B, T, generator=g) * 3).requires_grad_(True)
    old = logps.detach() + 0.3 * torch.randn(B, T, generator=g)
    ref = logps.detach() + 0.2 * torch.randn(B, T, generator=g)
    adv = torch.randn(B, generator=g)
    mask = (torch.rand(B, T, generator=g) > 0.25).float()
    mask[:, 0] = 1
    return logps, old, ref, adv, mask


@pytest.mark.parametrize("seed", range(3))
def test_grpo_loss_value_and_gradient_match_direct_formula(seed):
    logps, old, ref, adv, mask = _random_batch(seed)
    loss = grpo_loss(logps, adv, mask, old_logps=old, ref_logps=ref, epsilon=0.2, beta=0.04, loss_type="bnpo")
    (grad,) = torch.autograd.grad(loss, logps)
    direct = _direct_loss(logps, old, ref, adv, mask, 0.2, 0.04)
    (grad_direct,) = torch.autograd.grad(direct, logps)
    assert loss.item() == pytest.approx(direct.item(), rel=1e-5)
    assert torch.allclose(grad, grad_direct, atol=1e-6)


def test_grpo_loss_on_policy_gradient_is_minus_advantage_per_token():
    logps, _, _, adv, mask = _random_batch(0)
    loss = grpo_loss(logps, adv, mask, beta=0.0, loss_type="bnpo")
    (grad,) = torch.autograd.grad(loss, logps)
    assert torch.allclose(grad, -adv[:, None] * mask / mask.sum(), atol=1e-7)


def test_grpo_loss_clipping_stops_gradient_beyond_the_trust_region():
    logps = torch.zeros(1, 1, requires_grad=True)
    old = torch.full((1, 1), -1.0)  # ratio e ≈ 2.7 > 1.2 with a positive advantage: clipped
    loss = grpo_loss(logps, torch.ones(1), torch.ones(1, 1), old_logps=old, beta=0.0)
    (grad,) = torch.autograd.grad(loss, logps)
    assert grad.item() == 0.0


def test_k3_kl_is_zero_at_equal_policies_and_positive_elsewhere():
    x = torch.randn(3, 4)
    assert torch.all(k3_kl(x, x) == 0)
    assert torch.all(k3_kl(x, x + 0.5) > 0)


def test_grpo_loss_rejects_negative_beta_and_missing_reference():
    logps, _, _, adv, mask = _random_batch(0)
    with pytest.raises(ValueError, match="beta"):
        grpo_loss(logps, adv, mask, beta=-1.0)
    with pytest.raises(ValueError, match="ref_logps"):
        grpo_loss(logps, adv, mask, beta=0.04)


def test_grpo_loss_rejects_mismatched_shapes():
    logps, _, _, adv, mask = _random_batch(0)
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(logps, adv[:2], mask, beta=0.0)


def test_dr_grpo_divides_by_rows_times_max_completion_length_not_the_padded_width():
    logps, _, _, adv, mask = _random_batch(0)  # (4, 6): padded width T = 6
    loss = grpo_loss(logps, adv, mask, beta=0.0, loss_type="dr_grpo", max_completion_length=10)
    on_policy = (-adv[:, None] * mask).sum()  # ratio 1: -Â per completion token
    assert loss.item() == pytest.approx(on_policy.item() / (4 * 10))
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo_loss(logps, adv, mask, beta=0.0, loss_type="dr_grpo")


class TinyLM(torch.nn.Module):
    """A bigram "causal LM": logits at position t depend on token t only (enough to check shapes and alignment)."""

    def __init__(self, vocab: int = 7, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.table = torch.nn.Embedding(vocab, vocab)

    def forward(self, ids, attention_mask=None):
        return SimpleNamespace(logits=self.table(ids))  # (B, L, V)


def test_token_logps_is_the_log_softmax_of_each_next_token():
    model, ids = TinyLM(), torch.tensor([[1, 4, 2, 6], [3, 3, 0, 5]])
    got = token_logps(model, ids)
    by_hand = [
        [torch.log_softmax(model.table.weight[ids[b, t - 1]], -1)[ids[b, t]].item() for t in range(1, 4)]
        for b in range(2)
    ]
    assert got.shape == (2, 3)
    torch.testing.assert_close(got, torch.tensor(by_hand))


def test_grpo_step_is_one_sgd_step_on_grpo_loss():
    model, ids = TinyLM(), torch.tensor([[1, 4, 2, 6], [3, 3, 0, 5]])
    mask, adv = torch.tensor([[0.0, 1, 1], [0, 0, 1]]), torch.tensor([1.0, -1.0])
    before = model.table.weight.detach().clone()
    loss = grpo_loss(token_logps(model, ids), adv, mask, beta=0.0)
    (grad,) = torch.autograd.grad(loss, model.table.weight)
    out = grpo_step(model, ids, mask, adv, lr=0.1, beta=0.0)
    torch.testing.assert_close(model.table.weight.detach(), before - 0.1 * grad)
    assert out["loss"] == pytest.approx(loss.item()) and out["grad_norm"] == pytest.approx(grad.norm().item())


def test_grpo_step_raises_the_advantage_weighted_log_probability():
    model, ids = TinyLM(seed=1), torch.tensor([[1, 4, 2, 6], [1, 4, 5, 3]])
    mask, adv = torch.tensor([[0.0, 1, 1], [0, 1, 1]]), torch.tensor([1.0, -1.0])
    with torch.no_grad():
        before = (token_logps(model, ids) * mask).sum(-1)
    grpo_step(model, ids, mask, adv, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), beta=0.0)
    with torch.no_grad():
        after = (token_logps(model, ids) * mask).sum(-1)
    assert (adv * (after - before)).sum() > 0


def test_grpo_step_needs_exactly_one_of_lr_and_optimizer():
    model, ids = TinyLM(), torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="lr"):
        grpo_step(model, ids, torch.ones(1, 2), torch.tensor([1.0]), beta=0.0)
