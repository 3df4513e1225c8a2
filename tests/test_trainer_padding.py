"""Filler rows are exact for every accepted loss_type (decision 3 in docs/training.md).

MurphyTrainer pads a round's rows to the largest rank's count, rounded up to a multiple of steps_per_generation,
with zero-mask copies. Here TRL's own flow (shuffle, split into micro-batches, `_compute_loss`, backward, DDP's mean
over ranks) runs on a padded batch and is compared with TRL on the same real rows without any filler row: one
batch, one micro-batch, one rank (for bnpo, a local-batch mean by definition, each rank's own unpadded batch).
Two ranks are simulated in one process: each rank's trainer sees the other's row and token counts through
`_gather_counts` and `accelerator.num_processes == 2`, which is all MurphyTrainer and TRL's loss read of them.
"""

from __future__ import annotations

import pytest
import torch

from murphy_lab.config import MurphyConfig
from murphy_lab.smoke import smoke_tasks
from murphy_lab.tree import Node

LOSS_TYPES = ("dapo", "bnpo", "grpo", "dr_grpo")


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, tiny_model_path):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=1, num_iterations=2, max_completion_length=12
    )
    args = cfg.to_grpo_config(tmp_path_factory.mktemp("pad") / "run", save_strategy="no", disable_tqdm=True)
    tr = MurphyTrainer(model=tiny_model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=object())
    tr.model.train()
    return tr


def rows(trainer, n: int, seed: int) -> list[Node]:
    """`n` kept nodes with random prompts (shared in pairs, as siblings share theirs) and completions."""
    g = torch.Generator().manual_seed(seed)
    vocab, eos = trainer.model.config.vocab_size, trainer.eos_token_ids[0]
    nodes = []
    for i in range(n):
        if i % 2 == 0:
            prompt = torch.randint(
                5, vocab, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g
            ).tolist()
        comp = torch.randint(5, vocab, (int(torch.randint(1, 12, (1,), generator=g)),), generator=g).tolist()
        adv = float(torch.randn(1, generator=g))
        nodes.append(Node(advantage=adv, meta={"prompt_ids": prompt, "completion_ids": comp[:-1] + [eos]}))
    return nodes


class RankView:
    """The trainer's accelerator as one of `ranks` ranks sees it (everything else delegates to the real one)."""

    def __init__(self, real, ranks: int):
        self.real, self.num_processes = real, ranks

    def __getattr__(self, name):
        return getattr(self.real, name)


def set_layout(trainer, loss_type: str, spg: int) -> None:
    trainer.loss_type = loss_type
    trainer.args.steps_per_generation = trainer.args.gradient_accumulation_steps = spg
    trainer.current_gradient_accumulation_steps = spg


def step(trainer, batch: dict, spg: int, seed: int = 0) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """TRL's flow for one optimizer step over a round: shuffle, split, loss + backward per micro-batch.
    Returns (loss summed over micro-batches, gradients)."""
    from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

    trainer.model.zero_grad()
    torch.manual_seed(seed)
    total = torch.zeros(())
    for chunk in split_tensor_dict(shuffle_sequence_dict(batch), spg):
        loss = trainer._compute_loss(trainer.model, chunk)
        loss.backward()
        total = total + loss.detach()
    return total, [p.grad.clone() for p in trainer.model.parameters()]


def batch_for(trainer, nodes: list[Node], counts: list[tuple[int, int]] | None = None) -> dict:
    """`_batch` as one rank builds it; `counts` = every rank's (rows, tokens) when ranks are simulated."""
    if counts is not None:
        trainer._gather_counts = lambda rows, tokens: torch.tensor(counts, dtype=torch.long)
    try:
        return trainer._batch(nodes)
    finally:
        trainer.__dict__.pop("_gather_counts", None)


def perturbed(trainer):
    """Move the policy away from π_old / π_ref once, so clipping and the KL term both act in the loss."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn_like(p))


def tokens(nodes):
    return sum(len(n.meta["completion_ids"]) for n in nodes)


@pytest.fixture
def fresh(trainer):
    """Restore the trainer's weights and layout after each test."""
    state = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    acc, args = (
        trainer.accelerator,
        (trainer.args.steps_per_generation, trainer.args.gradient_accumulation_steps),
    )
    yield trainer
    trainer.model.load_state_dict(state)
    trainer.accelerator = acc
    trainer.args.steps_per_generation, trainer.args.gradient_accumulation_steps = args
    trainer.loss_type = "dapo"


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_filler_rows_leave_loss_and_gradient_unchanged_on_one_rank(loss_type, fresh):
    tr, nodes = fresh, rows(fresh, 10, seed=0)
    spg = 1 if loss_type == "bnpo" else 4  # bnpo is accepted only with one micro-batch per round
    set_layout(tr, loss_type, 1)
    ref_batch = batch_for(tr, nodes)
    set_layout(tr, loss_type, spg if loss_type != "bnpo" else 1)
    tr._row_target = lambda r: 16  # room for 6 filler rows in every layout (16 = 4 micro-batches of 4)
    padded = batch_for(tr, nodes)
    del tr._row_target
    assert len(padded["advantages"]) == 16
    perturbed(tr)
    set_layout(tr, loss_type, 1)
    ref_loss, ref_grads = step(tr, ref_batch, 1)
    set_layout(tr, loss_type, spg)
    loss, grads = step(tr, padded, spg)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-7)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_filler_rows_leave_loss_and_gradient_unchanged_with_two_unequal_ranks(loss_type, fresh):
    tr = fresh
    spg = 1 if loss_type == "bnpo" else 2
    ranks = [rows(tr, 10, seed=1), rows(tr, 4, seed=2)]  # rank 1 gets 6 filler rows to match rank 0's 10
    counts = [(len(r), tokens(r)) for r in ranks]
    set_layout(tr, loss_type, 1)
    if loss_type == "bnpo":  # a local-batch mean: the reference is each rank's own unpadded batch
        refs = [batch_for(tr, r) for r in ranks]
    else:  # the reference is all real rows as one batch
        refs = [batch_for(tr, ranks[0] + ranks[1])]
    set_layout(tr, loss_type, spg)
    tr.accelerator = RankView(tr.accelerator, 2)
    padded = [batch_for(tr, r, counts) for r in ranks]
    assert [len(b["advantages"]) for b in padded] == [10, 10]
    perturbed(tr)
    per_rank = [step(tr, b, spg, seed=i) for i, b in enumerate(padded)]
    loss = sum(lo for lo, _ in per_rank) / 2  # DDP: the gradient is the mean over ranks
    grads = [sum(gs) / 2 for gs in zip(*(g for _, g in per_rank))]
    tr.accelerator = tr.accelerator.real
    set_layout(tr, loss_type, 1)
    ref = [step(tr, b, 1) for b in refs]
    ref_loss = sum(lo for lo, _ in ref) / len(ref)
    ref_grads = [sum(gs) / len(ref) for gs in zip(*(g for _, g in ref))]
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-7)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-7)


def test_bnpo_with_several_micro_batches_is_rejected_before_any_model_loads():
    with pytest.raises(ValueError, match="loss_type.*bnpo.*steps_per_generation"):
        MurphyConfig.for_profile("smoke", loss_type="bnpo", gradient_accumulation_steps=2).validate()


def test_row_normalised_loss_with_an_entropy_bonus_is_rejected():
    with pytest.raises(ValueError, match="loss_type.*entropy_coef"):
        MurphyConfig.for_profile("smoke", loss_type="grpo", trl={"entropy_coef": 0.01}).validate()


# --- loss_type="group_sum": the paper's aggregation (docs/training.md, decision 8) ---------------------------------
def sized_trees(trainer, seed: int) -> list:
    """Two MURPHY trees with groups of unequal sizes (as IntraP / InterP leave them): tree A = a turn-1 group of 3
    whose first member has a refinement group of 2; tree B = a turn-1 group of 2."""
    from murphy_lab.tree import RolloutTree

    g = torch.Generator().manual_seed(seed)
    vocab, eos = trainer.model.config.vocab_size, trainer.eos_token_ids[0]

    def group(n: int) -> list[Node]:  # siblings share their prompt
        prompt = torch.randint(5, vocab, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        out = []
        for _ in range(n):
            comp = torch.randint(
                5, vocab, (int(torch.randint(2, 12, (1,), generator=g)),), generator=g
            ).tolist()
            out.append(
                Node(
                    advantage=float(torch.randn(1, generator=g)),
                    reward=0.0,
                    meta={"prompt_ids": prompt, "completion_ids": comp[:-1] + [eos]},
                )
            )
        return out

    a = group(3)
    a[0].children = group(2)
    return [RolloutTree(Node(children=a)), RolloutTree(Node(children=group(2)))]


def test_group_sum_is_the_sum_of_per_group_grpo_objectives_averaged_over_trees(fresh, monkeypatch):
    # by hand: J = (1/trees) Σ_tree Σ_group (1/|g|) Σ_{o in g} (1/|o|) Σ_t ℓ_t, each row's token mean (1/|o|) Σ_t ℓ_t
    # from TRL's own loss on a one-row batch ('grpo': a sequence's token mean); against MurphyTrainer's rows for the
    # same trees under loss_type='group_sum' (TRL's dapo with row weights), split into 2 micro-batches with filler
    tr = fresh
    trees = sized_trees(tr, seed=3)
    nodes = [n for t in trees for n in t.nodes()]
    groups = [members for t in trees for _, members in t.groups()]
    assert sorted(len(m) for m in groups) == [2, 2, 3]
    set_layout(tr, "grpo", 1)
    singles = {id(n): batch_for(tr, [n]) for n in nodes}
    dapo_batch = batch_for(tr, nodes)
    monkeypatch.setattr(tr.murphy, "loss_type", "group_sum")
    set_layout(tr, "dapo", 2)  # what to_grpo_config gives TRL for group_sum
    tr._row_target = lambda r: 10  # 7 real rows + 3 filler rows, 2 micro-batches of 5
    batch, _ = tr.build_rows(trees)
    del tr._row_target
    perturbed(tr)  # after π_old was taken for every batch: the ratio is not 1, clipping and KL act
    set_layout(tr, "grpo", 1)
    per_row = {key: step(tr, b, 1) for key, b in singles.items()}  # (token mean of ℓ, its gradient)
    want = sum(per_row[id(n)][0] / len(m) for m in groups for n in m) / len(trees)
    want_grads = [
        sum(per_row[id(n)][1][i] / len(m) for m in groups for n in m) / len(trees)
        for i in range(len(per_row[id(nodes[0])][1]))
    ]
    set_layout(tr, "dapo", 2)
    loss, grads = step(tr, batch, 2)
    torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-7)
    # seven one-row backward passes summed against one: float32 noise only
    for g, r in zip(grads, want_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-6)
    # the weights differ from TRL's dapo on the same rows: a row's tokens count 1/(|g|·|o|), not 1/(all tokens)
    set_layout(tr, "dapo", 1)
    dapo, _ = step(tr, dapo_batch, 1)
    assert not torch.isclose(dapo, want, rtol=1e-3)


def test_group_sum_weights_of_a_grpo_mt_tree_are_per_chain():
    # GRPO-MT's advantage belongs to a chain: its group is the tree's G chains, its sequence the whole chain
    from murphy_lab.trainer.core import group_token_weights
    from murphy_lab.tree import RolloutTree

    def node(tokens: int, *children: Node) -> Node:
        return Node(advantage=0.5, children=list(children), meta={"completion_ids": [7] * tokens})

    second = node(6)
    # chain a: 4 + 6 tokens over two turns; chain b: one turn, 10
    chain_a, chain_b = node(4, second), node(10)
    w = group_token_weights([RolloutTree(Node(children=[chain_a, chain_b]))], "grpo_mt")
    assert w == {id(chain_a): 1 / (2 * 10), id(second): 1 / (2 * 10), id(chain_b): 1 / (2 * 10)}
    murphy = group_token_weights([RolloutTree(Node(children=[chain_a, chain_b]))], "murphy")
    assert murphy == {id(chain_a): 1 / (2 * 4), id(chain_b): 1 / (2 * 10), id(second): 1 / (1 * 6)}


def test_group_sum_runs_as_trl_dapo_and_refuses_options_that_read_the_mask_per_row(tmp_path):
    cfg = MurphyConfig.for_profile("smoke", loss_type="group_sum")
    assert cfg.validate().loss_type == "group_sum" and cfg.to_grpo_config(tmp_path).loss_type == "dapo"
    with pytest.raises(ValueError, match="group_sum.*importance_sampling_level"):
        MurphyConfig.for_profile(
            "smoke", loss_type="group_sum", trl={"importance_sampling_level": "sequence"}
        ).validate()


@pytest.mark.parametrize(
    "mode", [dict(mode="murphy"), dict(mode="grpo_mt", g2=1), dict(mode="grpo", turns=1)]
)
def test_group_sum_trains_every_mode(mode, tmp_path, tiny_model_path, executor):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile(
        "smoke",
        model=tiny_model_path,
        loss_type="group_sum",
        max_steps=1,
        steps_per_generation=2,
        gradient_accumulation_steps=2,
        **mode,
    )
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    tr = MurphyTrainer(model=tiny_model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=executor)
    before = [p.detach().clone() for p in tr.model.parameters()]
    tr.train()
    assert all(not torch.equal(p, b) for p, b in zip(tr.model.parameters(), before))
