"""Prefix-shared log-probs are the row-by-row pass's: per-token log-probs within 1e-5 (fp32), gradients within 1e-4
relative, TRL's loss identical for every loss_type through MurphyTrainer, and a clear fallback where sharing cannot
be exact."""

from __future__ import annotations

import importlib.util
import logging

import pytest
import torch

from murphy_lab import prefix
from murphy_lab.config import MurphyConfig
from murphy_lab.smoke import smoke_tasks
from murphy_lab.tree import Node

VOCAB = 64


def tiny(kind: str = "olmo2", attn: str = "sdpa", **kw):
    from transformers import AutoModelForCausalLM, LlamaConfig, MistralConfig, Olmo2Config, Qwen3Config

    cls = {"olmo2": Olmo2Config, "llama": LlamaConfig, "qwen3": Qwen3Config, "mistral": MistralConfig}[kind]
    cfg = cls(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        **kw,
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, attn_implementation=attn).float().train()


def tree_batch(seed: int = 0):
    """A TRL-layout batch of 9 rows: a turn-1 group of 3 (short prompt), groups of 4 and 1 (long prompts), plus one
    row whose prompt is another's with a pad-id token in front (same columns once padded: must not share)."""
    g = torch.Generator().manual_seed(seed)
    q1, q2, q3 = (torch.randint(3, VOCAB, (n,), generator=g) for n in (4, 11, 9))
    q4 = torch.cat([torch.zeros(1, dtype=torch.long), q3])  # a real token with the pad id, then q3
    prompts = [q1] * 3 + [q2] * 4 + [q3, q4]
    lengths = [5, 7, 2, 7, 3, 6, 7, 4, 7]
    width, c = max(len(p) for p in prompts), max(lengths)
    ids = torch.zeros(len(prompts), width + c, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, (p, n) in enumerate(zip(prompts, lengths)):
        ids[i, width - len(p) : width], mask[i, width - len(p) : width] = p, 1
        ids[i, width : width + n], mask[i, width : width + n] = torch.randint(3, VOCAB, (n,), generator=g), 1
    return ids, mask, c


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-12))


def grads(model, logps, mask):
    model.zero_grad()
    (logps * mask * torch.linspace(-1, 1, logps.numel()).view_as(logps)).sum().backward()
    return [p.grad.clone() for p in model.parameters()]


def test_rows_share_a_group_iff_their_prompt_columns_are_identical():
    ids, mask, c = tree_batch()
    group = prefix.prefix_groups(ids[:, :-c], mask[:, :-c]).tolist()
    assert group[0] == group[1] == group[2] and group[3] == group[4] == group[5] == group[6]
    assert len(set(group)) == 4 and group[7] != group[8]  # the pad-id token does not merge q3 with q4


@pytest.mark.parametrize("kind", ["olmo2", "llama", "qwen3"])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_shared_logps_and_gradients_equal_the_row_pass(kind, attn):
    model, (ids, mask, c) = tiny(kind, attn), tree_batch()
    score = prefix.logits_score(temperature=0.7, compute_entropy=True)
    row, row_h = prefix.row_logps(model, ids, mask, c, score)
    shared, shared_h = prefix.shared_logps(model, ids, mask, c, score)
    on = mask[:, -c:].bool()
    assert float((row - shared).detach()[on].abs().max()) <= 1e-5
    assert float((row_h - shared_h).detach()[on].abs().max()) <= 1e-5
    for g_row, g_shared in zip(grads(model, row, on), grads(model, shared, on)):
        assert rel(g_shared, g_row) <= 1e-4


def test_chunks_keep_groups_whole_and_change_nothing():
    model, (ids, mask, c) = tiny(), tree_batch()
    group = prefix.prefix_groups(ids[:, :-c], mask[:, :-c])
    chunks = prefix._chunks(group, 4)
    assert len(chunks) > 1 and all(len(rows) <= 4 for rows in chunks)
    assert sorted(torch.cat(chunks).tolist()) == list(range(len(group)))
    owner = {int(group[r]): i for i, rows in enumerate(chunks) for r in rows}  # each group lies in one chunk
    assert all(owner[int(group[r])] == i for i, rows in enumerate(chunks) for r in rows)
    whole = prefix.shared_logps(model, ids, mask, c)[0]
    torch.testing.assert_close(
        prefix.shared_logps(model, ids, mask, c, batch_size=4)[0], whole, rtol=0, atol=1e-6
    )


def test_sliding_window_cache_is_refused():
    model, (ids, mask, c) = tiny("mistral", sliding_window=4), tree_batch()
    with pytest.raises(prefix.PrefixUnsupported, match="DynamicCache"):
        prefix.shared_logps(model, ids, mask, c)


def test_unsupported_backends_are_named():
    model = tiny()
    assert prefix.supported(model) is None
    model.config._attn_implementation = "flash_attention_2"
    assert "flash_attention_2" in prefix.supported(model)
    model.config._attn_implementation = "sdpa"
    model.gradient_checkpointing_enable()
    assert "checkpointing" in prefix.supported(model)


# --- through MurphyTrainer: TRL's own loss, π_old and π_ref with sharing on and off ----------------------------------
@pytest.fixture(scope="module")
def trainer(tmp_path_factory, tiny_model_path):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=1, num_iterations=2, max_completion_length=12
    )
    args = cfg.to_grpo_config(
        tmp_path_factory.mktemp("prefix") / "run", save_strategy="no", disable_tqdm=True
    )
    tr = MurphyTrainer(model=tiny_model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=object())
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    return tr


def tree_nodes(trainer) -> list[Node]:
    """A turn-1 group of 4 and two turn-2 groups of 4 (longer prompts), as a MURPHY tree's kept rows."""
    g = torch.Generator().manual_seed(0)
    vocab, eos = trainer.model.config.vocab_size, trainer.eos_token_ids[0]
    nodes = []
    for plen in (6, 18, 15):
        prompt = torch.randint(5, vocab, (plen,), generator=g).tolist()
        for _ in range(4):
            comp = torch.randint(
                5, vocab, (int(torch.randint(2, 12, (1,), generator=g)),), generator=g
            ).tolist()
            nodes.append(
                Node(
                    advantage=float(torch.randn(1, generator=g)),
                    meta={"prompt_ids": prompt, "completion_ids": comp[:-1] + [eos]},
                )
            )
    return nodes


def loss_and_grads(trainer, batch):
    trainer.model.zero_grad()
    loss = trainer._compute_loss(trainer.model, batch)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in trainer.model.parameters()]


@pytest.mark.parametrize("loss_type", ["dapo", "bnpo", "grpo", "dr_grpo"])
def test_trainer_loss_and_gradient_with_shared_prefixes_equal_trls_row_pass(loss_type, trainer):
    trainer.loss_type, nodes = loss_type, tree_nodes(trainer)
    trainer.murphy.prefix_sharing = False
    row_batch = trainer._batch(nodes)
    trainer.murphy.prefix_sharing = True
    batch = trainer._batch(nodes)
    for key in ("old_per_token_logps", "ref_per_token_logps"):  # π_old, π_ref through the shared pass
        assert float((batch[key] - row_batch[key]).abs()[batch["completion_mask"].bool()].max()) <= 1e-5
    torch.manual_seed(0)
    state = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn_like(p))  # away from π_old and π_ref: clipping and KL act
    try:
        loss, g = loss_and_grads(trainer, batch)
        trainer.murphy.prefix_sharing = False
        row_loss, row_g = loss_and_grads(trainer, batch)
    finally:
        trainer.murphy.prefix_sharing = True
        trainer.model.load_state_dict(state)
        trainer.loss_type = "dapo"
    assert trainer._prefix_verdicts == {id(trainer.model): None, id(trainer.ref_model): None}  # both shared
    torch.testing.assert_close(loss, row_loss, rtol=1e-6, atol=1e-7)
    assert max(rel(a, b) for a, b in zip(g, row_g)) <= 1e-4


def test_trainer_falls_back_to_the_row_pass_with_one_log_line(trainer, caplog, monkeypatch):
    monkeypatch.setattr(trainer, "_prefix_verdicts", {}, raising=False)
    monkeypatch.setattr(prefix, "supported", lambda model: "attention implementation 'flash_attention_2'")
    calls = []
    monkeypatch.setattr(prefix, "shared_logps", lambda *a, **k: calls.append(1))
    with caplog.at_level(logging.WARNING, logger="murphy_lab.trainer"):
        trainer._batch(tree_nodes(trainer))
        trainer._batch(tree_nodes(trainer))
    lines = [r.getMessage() for r in caplog.records if "prefix sharing off" in r.getMessage()]
    # one line per model (policy for π_old, reference), not one per batch
    assert len(lines) == 2 and not calls
    assert all("flash_attention_2" in line and "row-by-row" in line for line in lines)


def test_prefix_sharing_switch_must_be_a_bool():
    with pytest.raises(ValueError, match="prefix_sharing"):
        MurphyConfig.for_profile("smoke", prefix_sharing="yes").validate()


def test_shuffle_groups_permutes_whole_groups_and_every_field_alike():
    ids, mask, c = tree_batch()
    batch = {
        "prompt_ids": ids[:, :-c],
        "prompt_mask": mask[:, :-c],
        "row": torch.arange(len(ids)),
        "names": [f"r{i}" for i in range(len(ids))],
        "num_items_in_batch": torch.tensor(7),
    }
    torch.manual_seed(3)
    out = prefix.shuffle_groups(batch)
    order = out["row"].tolist()
    group = prefix.prefix_groups(batch["prompt_ids"], batch["prompt_mask"])[out["row"]].tolist()
    assert sorted(order) == list(range(len(ids))) and out["names"] == [f"r{i}" for i in order]
    assert all(group[i] == group[i + 1] or group[i + 1] not in group[: i + 1] for i in range(len(group) - 1))
    assert (
        torch.equal(out["prompt_ids"], batch["prompt_ids"][out["row"]])
        and int(out["num_items_in_batch"]) == 7
    )


def test_a_shared_pass_that_disagrees_with_the_row_pass_is_not_used(trainer, caplog, monkeypatch):
    """The first-batch check: a model whose cache the shared pass would misuse falls back, with the size of the gap."""
    monkeypatch.setattr(trainer, "_prefix_verdicts", {}, raising=False)
    real = prefix.shared_logps
    monkeypatch.setattr(
        prefix, "shared_logps", lambda *a, **k: tuple(None if x is None else x + 0.5 for x in real(*a, **k))
    )
    with caplog.at_level(logging.WARNING, logger="murphy_lab.trainer"):
        batch = trainer._batch(tree_nodes(trainer))
    assert all(
        v is not None and "differ from the row pass by 5.00e-01" in v
        for v in trainer._prefix_verdicts.values()
    )
    monkeypatch.setattr(prefix, "shared_logps", real)
    monkeypatch.setattr(trainer, "_prefix_verdicts", {}, raising=False)
    trainer.murphy.prefix_sharing = False
    try:
        torch.testing.assert_close(
            batch["ref_per_token_logps"], trainer._batch(tree_nodes(trainer))["ref_per_token_logps"]
        )
    finally:
        trainer.murphy.prefix_sharing = True


def test_the_one_time_check_compares_only_the_first_whole_groups(trainer, monkeypatch):
    """The check runs both passes on the batch's first whole groups (`check_rows`), not the whole batch: on the real
    model the whole first batch cost 470-1,135 CPU-s each process start. A gap there is still found."""
    monkeypatch.setattr(trainer, "_prefix_verdicts", {}, raising=False)
    monkeypatch.setattr(trainer, "check_rows", 5)  # one group of 4 fits, two do not
    real, seen = prefix.shared_logps, []

    def spy(model, ids, *a, **k):
        seen.append(ids.size(0))
        return real(model, ids, *a, **k)

    monkeypatch.setattr(prefix, "shared_logps", spy)
    trainer._batch(tree_nodes(trainer))
    checks = seen[:1] + seen[2:3]  # per model: its check, then its pass over the batch
    assert checks == [4, 4] and seen[1] == seen[3] == 12
    assert all(v is None for v in trainer._prefix_verdicts.values())
    monkeypatch.setattr(trainer, "_prefix_verdicts", {}, raising=False)
    monkeypatch.setattr(
        prefix, "shared_logps", lambda *a, **k: tuple(None if x is None else x + 0.5 for x in real(*a, **k))
    )
    trainer._batch(tree_nodes(trainer))
    assert all(v is not None and "5.00e-01" in v for v in trainer._prefix_verdicts.values())


def test_disagreement_tolerates_rounding_and_names_a_gap():
    x, mask = -torch.rand(3, 5), torch.ones(3, 5)
    assert prefix.disagreement(x, x + 1e-6, mask, half=False) is None
    assert "1.00e-02" in prefix.disagreement(x, x + 1e-2, mask, half=False)
    assert prefix.disagreement(x, x + 1e-2, mask, half=True) is None


# --- under LoRA: the policy passes share prefixes through the adapters, the reference pass with them switched off ---
@pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="LoRA needs peft (the lora extra)")
def test_prefix_sharing_stays_exact_under_lora(tmp_path, tiny_model_path):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile(
        "smoke",
        model=tiny_model_path,
        max_steps=1,
        num_iterations=2,
        max_completion_length=12,
        use_peft=True,
        lora_r=4,
        lora_target_modules=["q_proj", "v_proj"],
    )
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    tr = MurphyTrainer(model=tiny_model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=object())
    tr.model.train()
    tr.current_gradient_accumulation_steps = 1
    torch.manual_seed(0)
    with torch.no_grad():  # LoRA's B starts at zero (adapter = identity): give the adapters an effect
        for name, p in tr.model.named_parameters():
            if "lora_B" in name:
                p.add_(0.5 * torch.randn_like(p))
    nodes = tree_nodes(tr)
    tr.murphy.prefix_sharing = False
    row_batch = tr._batch(nodes)
    tr.murphy.prefix_sharing = True
    batch = tr._batch(nodes)
    on = batch["completion_mask"].bool()
    for key in ("old_per_token_logps", "ref_per_token_logps"):
        assert float((batch[key] - row_batch[key]).abs()[on].max()) <= 1e-5
    # the reference pass ran without the adapters: it differs from the policy's π_old, and equals the base model's
    assert float((batch["ref_per_token_logps"] - batch["old_per_token_logps"]).abs()[on].max()) > 1e-3
    with tr.model.disable_adapter():
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        tr.murphy.prefix_sharing = False
        with torch.no_grad():
            base = tr._get_per_token_logps_and_entropies(tr.model, ids, attn, on.size(1))[0]
        tr.murphy.prefix_sharing = True
    assert float((batch["ref_per_token_logps"] - base).abs()[on].max()) <= 1e-5

    def loss_and_adapter_grads():
        tr.model.zero_grad()
        loss = tr._compute_loss(tr.model, batch)
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in tr.model.parameters() if p.requires_grad]

    loss, g = loss_and_adapter_grads()
    tr.murphy.prefix_sharing = False
    row_loss, row_g = loss_and_adapter_grads()
    tr.murphy.prefix_sharing = True
    torch.testing.assert_close(loss, row_loss, rtol=1e-6, atol=1e-7)
    assert len(g) == 8 and max(rel(a, b) for a, b in zip(g, row_g)) <= 1e-4  # A and B of q, v in 2 layers
