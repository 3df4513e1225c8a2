# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · One GRPO step: from credits to a gradient
#
# **Promise:** after this notebook you can follow one MURPHY training step by hand — a tree's credits become
# group-relative advantages, advantages and token log-probabilities become the clipped GRPO loss, and the loss
# becomes a gradient that moves a real (tiny) language model towards the credited completions.
#
# **What you will learn**
# 1. which (prompt, completion, advantage) triples a tree contributes (`grpo.group_advantages`, `grpo.training_pairs`);
# 2. per-token log-probabilities of completions under a causal LM, with shapes (`grpo.token_logps`);
# 3. the GRPO loss: clipped ratio, k3 KL, and how TRL aggregates tokens (`grpo.grpo_loss`);
# 4. what clipping does to the gradient;
# 5. that one optimizer step (`grpo.grpo_step`) raises the log-probability of positive-advantage completions.

# %% tags=["parameters"]
seed = 0  # seed of the random weights of the tiny model
hidden = 32  # width of the tiny OLMo-2-style model (murphy_lab.policy.tiny)
layers = 2  # its number of layers
lr = 0.05  # step size of the one plain SGD step in section 5 (the paper trains with AdamW at 1e-6)
threads = 1  # torch threads
solve_exercises = False  # True fills in the exercise answers (the test suite runs with True)

# %%
import tempfile

import matplotlib.pyplot as plt
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from murphy_lab.credit import mars
from murphy_lab.examples import check_answer, informative_failure_tree
from murphy_lab.grpo import group_advantages, grpo_loss, grpo_step, k3_kl, token_logps, training_pairs
from murphy_lab.policy.tiny import build_tiny_model
from murphy_lab.viz import palette, plot_group_advantages

torch.set_num_threads(threads)
torch.manual_seed(seed)

# %% [markdown]
# ## 1. From a tree to training pairs
#
# MURPHY runs GRPO inside every kept group g of the tree, on the credits r̃ of §3.2 (notebook 03):
#
# $$\hat A(u) = \frac{\tilde r(u) - \operatorname{mean}_{g}\tilde r}{\operatorname{std}_{g}\tilde r + \varepsilon},
# \qquad \varepsilon = 10^{-4},\ \text{std with Bessel's correction (TRL's convention)}$$
#
# Every kept non-root node then gives one (prompt, completion, advantage) triple: the prompt its group was sampled
# from (the task prompt at turn 1, the feedback-conditioned refinement prompt later) and its own completion.

# %%
tree = group_advantages(mars(informative_failure_tree()))
pairs = training_pairs(tree)
print(len(pairs), "training pairs from", len(tree.groups(kept_only=True)), "groups")
A = tree.root.children[0]  # the informative failure
values = [u.credit for u in tree.root.children]
mean = sum(values) / len(values)
std = (sum((x - mean) ** 2 for x in values) / (len(values) - 1)) ** 0.5
print(f"A: credit {A.credit}, by hand Â = ({A.credit} - {mean}) / ({std:.4f} + 1e-4) = {(A.credit - mean) / (std + 1e-4):.4f}")
assert abs(A.advantage - (A.credit - mean) / (std + 1e-4)) < 1e-12
fig = plot_group_advantages(tree)
plt.show()

# %% [markdown]
# The middle group (B's refinements, all failing) has identical credits, so all its advantages are zero: it
# contributes tokens to the loss but no gradient. That is what IntraP/InterP prune (notebook 04).
#
# ## 2. Log-probabilities of completions
#
# We need log π_θ(token | prefix) for every completion token. The model is a tiny random-init OLMo-2-style causal
# LM with a character-level tokenizer, built locally and loaded through `from_pretrained` exactly like a real
# checkpoint. Prompt tokens are masked out: only completion tokens carry the loss.

# %%
path = build_tiny_model(tempfile.mkdtemp() + "/tiny", hidden=hidden, layers=layers, seed=seed)
model = AutoModelForCausalLM.from_pretrained(path)
tok = AutoTokenizer.from_pretrained(path)
print(f"{sum(p.numel() for p in model.parameters()):,} parameters, vocabulary of {len(tok)} characters")


def batch(pairs):
    """Right-padded (prompt + completion) ids and a mask that is 1 on completion tokens only."""
    rows = [(tok(p, add_special_tokens=False).input_ids, tok(c, add_special_tokens=False).input_ids + [tok.eos_token_id])
            for p, c, _ in pairs]
    width = max(len(p) + len(c) for p, c in rows)
    ids = torch.full((len(rows), width), tok.pad_token_id)  # (B, L)
    mask = torch.zeros(len(rows), width)  # (B, L)
    for i, (p, c) in enumerate(rows):
        ids[i, : len(p) + len(c)] = torch.tensor(p + c)
        mask[i, len(p) : len(p) + len(c)] = 1.0
    return ids, mask


# grpo.token_logps(model, ids) is three lines: the logits at t - 1 predict token t, so
#   logits = model(ids).logits[:, :-1]                                     (B, L-1, V)
#   log_softmax(logits).gather(-1, ids[:, 1:, None]).squeeze(-1)           (B, L-1)
ids, mask = batch(pairs)
mask = mask[:, 1:]  # (B, L-1), aligned with the predicted tokens
advantages = torch.tensor([a for _, _, a in pairs], dtype=torch.float32)  # (B,)
logps = token_logps(model, ids)  # (B, L-1)
print("ids", tuple(ids.shape), " logps", tuple(logps.shape), " completion tokens", int(mask.sum()))
assert logps.shape == mask.shape and (logps <= 0).all()

# %% [markdown]
# ## 3. The GRPO loss
#
# Per completion token t of sequence i, with ratio ρ = π_θ / π_old (token level), clip range ε = 0.2 and KL
# coefficient β = 0.04 (the paper's values):
#
# $$L_{it} = -\min\big(\rho_{it}\hat A_i,\ \operatorname{clip}(\rho_{it}, 1-\varepsilon, 1+\varepsilon)\hat A_i\big)
#   + \beta\,\mathrm{KL}_{it},\qquad
#   \mathrm{KL}_{it} = e^{\,\mathrm{ref}_{it} - \log\pi_{it}} - (\mathrm{ref}_{it} - \log\pi_{it}) - 1$$
#
# aggregated as TRL 1.16 does for its `loss_type` — the default `"dapo"` sums over all completion tokens and divides
# by their number. At the first step of an iteration π_old = π_θ (ratio 1, no clipping) and here π_ref = π_θ too
# (KL 0), so the loss reduces to −Σ_i Â_i · n_i / Σ_i n_i, with n_i the completion length. Check it by hand:

# %%
old = logps.detach()
loss = grpo_loss(logps, advantages, mask, old_logps=old, ref_logps=old, beta=0.04)
n_tokens = mask.sum(-1)  # (B,)
by_hand = -(advantages * n_tokens).sum() / n_tokens.sum()
print(f"library {loss.item():.6f}   by hand {by_hand.item():.6f}")
assert torch.allclose(loss, by_hand, atol=1e-6)

# %% [markdown]
# In training, the same tensors go through TRL's own `_compute_loss`: `tests/test_trainer.py`
# (`test_trl_loss_equals_teaching_grpo_loss`) checks that MURPHY's trainer and this teaching `grpo_loss` agree on
# the same batch, so what you read here is what the trainer optimizes.
#
# ## 4. What clipping does
#
# When a token's ratio has already moved beyond 1 + ε in the direction its advantage pushes, the min picks the
# clipped term, which is constant in θ: that token stops contributing gradient. A four-token hand-made case:

# %%
lp = torch.tensor([[-1.0, -1.0, -1.0, -1.0]], requires_grad=True)  # (1, 4) current log-probs
old_lp = torch.tensor([[-1.0, -1.1, -1.5, -0.5]])  # ratios e^0 = 1, e^0.1 = 1.11, e^0.5 = 1.65, e^-0.5 = 0.61
grpo_loss(lp, torch.tensor([1.0]), torch.ones(1, 4), old_logps=old_lp, beta=0.0).backward()
print("ratios   ", [round(x, 2) for x in torch.exp(lp - old_lp).detach()[0].tolist()])
print("gradients", [round(x, 3) for x in lp.grad[0].tolist()])
assert lp.grad[0, 2] == 0  # ratio 1.65 > 1.2 with Â > 0: clipped, no gradient
assert lp.grad[0, 0] < 0 and lp.grad[0, 1] < 0 and lp.grad[0, 3] < 0  # the others are still pushed up

# %% [markdown]
# ## 5. One step moves the model towards credited completions
#
# Back-propagate the loss of section 3 and take one plain gradient step. To first order the surrogate
# Σ Â_i · mean log π(completion_i) must rise: completions with positive advantage (A's successful refinements,
# the informative failure A itself) become more likely, those with negative advantage (B) less likely.
#
# `grpo.grpo_step(model, ids, mask, advantages, lr=lr)` is that step: `model.zero_grad()`, the loss
# `grpo_loss(token_logps(model, ids), advantages, mask)`, `loss.backward()`, then θ ← θ − lr · ∇θ L (pass
# `optimizer=` instead of `lr=` for AdamW). It returns the loss and the gradient norm.

# %%
with torch.no_grad():
    before = (token_logps(model, ids) * mask).sum(-1) / mask.sum(-1)  # (B,) mean log-prob per completion
step = grpo_step(model, ids, mask, advantages, lr=lr, beta=0.0)
with torch.no_grad():
    after = (token_logps(model, ids) * mask).sum(-1) / mask.sum(-1)  # (B,)
print(f"loss {step['loss']:.4f}, gradient norm {step['grad_norm']:.4f}")
change = after - before
surrogate_gain = (advantages * change).sum().item()
print(f"Σ Â·Δlog π = {surrogate_gain:+.5f}")
assert step["grad_norm"] > 0 and surrogate_gain > 0

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.scatter(advantages, change, c=[palette.POSITIVE if a > 0 else palette.NEGATIVE if a < 0 else palette.ZERO for a in advantages])
ax.axhline(0, color=palette.EDGE, lw=0.8)
ax.axvline(0, color=palette.EDGE, lw=0.8)
ax.set_xlabel("advantage Â of the completion")
ax.set_ylabel("Δ mean log π after one step")
ax.set_title("one GRPO step: credited completions become more likely")
plt.show()

# %% [markdown]
# ## Summary
#
# - A tree contributes one (prompt, completion, Â) triple per kept node; groups of equal credit give Â = 0.
# - The loss is token-level: every completion token of sequence i carries Â_i, masked so prompts carry none.
# - Clipping zeroes the gradient of tokens whose ratio already moved past 1 ± ε in the advantage's direction;
#   the k3 KL (β = 0.04 in the paper) pulls towards the reference model.
# - One step raises Σ Â_i log π(completion_i): the informative failure and its successful refinements gain.
#
# ## Exercises
#
# **1.** Two on-policy sequences (ratio 1, β = 0) have advantages [+1, −1] and 3 and 1 completion tokens. What is
# the loss with the default `loss_type="dapo"`? And with `loss_type="grpo"` (mean per sequence, then over
# sequences)? Give the pair `(dapo, grpo)`.

# %%
answer_1 = None  # a pair of numbers (dapo, grpo)
if solve_exercises:
    answer_1 = ((-3 + 1) / 4, (-1 + 1) / 2)

# %%
_lp = torch.zeros(2, 3)
_mask = torch.tensor([[1.0, 1, 1], [1, 0, 0]])
_adv = torch.tensor([1.0, -1.0])
expected_1 = tuple(round(grpo_loss(_lp, _adv, _mask, beta=0.0, loss_type=t).item(), 6) for t in ("dapo", "grpo"))
check_answer("1", None if answer_1 is None else tuple(round(x, 6) for x in answer_1), expected_1)

# %% [markdown]
# **2.** The k3 estimator for one token with log π = −1.0 and log π_ref = −1.5: compute it from the equation in §3.

# %%
answer_2 = None  # your number here
if solve_exercises:
    import math

    answer_2 = math.exp(-0.5) + 0.5 - 1

# %%
check_answer("2", answer_2, k3_kl(torch.tensor([[-1.0]]), torch.tensor([[-1.5]])).item(), tol=1e-6)
