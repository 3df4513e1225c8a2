"""murphy_lab.export: scored trees -> training rows, fed to the installed TRL (its async GRPO packer and its GRPO
loss on the tiny local model) and to a verl-style advantage estimator (verl's signature, written here: verl is not
installed)."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
from trees import informative_tree, paper_tree

from murphy_lab.export import TrainingRow, rows_to_batch, tree_rows
from murphy_lab.grpo import grpo_loss
from murphy_lab.scoring import score_tree


def char_ids(text) -> list[int]:
    return [ord(ch) % 97 + 3 for ch in str(text)]


def _named(tree):
    for i, n in enumerate(tree.nodes()):
        n.prompt, n.completion = f"p{n.turn}-{id(n.children) % 7}", f"def f(): return {i}"
    return tree


def test_rows_are_the_kept_nodes_with_their_advantages_and_one_group_id_per_prompt():
    t = score_tree(_named(paper_tree(0)), credit="mars", b_grp=4)
    rows = tree_rows([t], tokenize=char_ids)
    kept = [n for n in t.nodes() if not n.pruned]
    assert len(rows) == len(kept) == 40
    assert sorted(r.advantage for r in rows) == sorted(n.advantage for n in kept)
    by_group = defaultdict(set)
    for r in rows:
        by_group[r.group_id].add(r.node_id.rpartition(".")[0] if "." in r.node_id else "root")
    # siblings share a group id, and a group id has one parent
    assert all(len(parents) == 1 for parents in by_group.values())
    assert len({r.node_id for r in rows}) == len(rows)
    assert {r.turn for r in rows} == {1, 2} and all(r.kept for r in rows)
    with_pruned = tree_rows([t], tokenize=char_ids, include_pruned=True)
    assert len(with_pruned) == 72 and sum(not r.kept and r.advantage is None for r in with_pruned) == 32


def test_group_ids_are_distinct_across_trees_and_token_ids_come_from_meta_first():
    a, b = score_tree(informative_tree()), score_tree(informative_tree())
    for n in a.nodes():
        n.meta.update(prompt_ids=[1, 2], completion_ids=[3])
    rows_a = tree_rows([a, b], tokenize=char_ids)
    assert {r.group_id for r in rows_a[:7]}.isdisjoint({r.group_id for r in rows_a[7:]})
    assert rows_a[0].prompt_ids == [1, 2] and rows_a[0].completion_ids == [3]


def test_unscored_trees_and_missing_tokens_are_one_line_errors():
    with pytest.raises(ValueError, match="kept but has no advantage: score the tree first"):
        tree_rows([informative_tree()], tokenize=char_ids)
    with pytest.raises(ValueError, match=r"no meta\['prompt_ids'\]: pass tokenize="):
        tree_rows([score_tree(informative_tree())])


@pytest.mark.slow  # imports TRL (~10 s on a loaded 2-core machine)
def test_rows_feed_trl_async_grpo_packer_with_one_advantage_per_completion_token():
    packing = pytest.importorskip("trl.experimental.async_grpo.packing")
    rows = tree_rows([score_tree(_named(informative_tree()), credit="gigpo")], tokenize=char_ids)
    row = packing.TreeRow()
    for r in rows:
        row.add(r.rollout_sample())
    packed = row.pack()
    # every completion token after the first, plus the first (scored off the prompt's last token)
    expected = [r.advantage for r in rows for _ in r.completion_ids[1:]]
    expected_first = [r.advantage for r in rows]
    assert sorted(packed["advantages"].tolist()) == pytest.approx(sorted(expected + expected_first))
    assert len(packed["advantages"]) == sum(len(r.completion_ids) for r in rows)


@pytest.mark.slow  # imports TRL and builds a GRPOTrainer on the tiny model
def test_rows_feed_trls_grpo_loss_on_the_tiny_model(tmp_path, tiny_model_path):
    """TRL's GRPOTrainer._compute_loss on a batch built from MURPHY rows equals the teaching loss on the same rows:
    the advantages of any credit rule reach TRL's loss as they are."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    tree = score_tree(_named(informative_tree()), credit="turn_credit", gamma=0.9)
    rows = tree_rows([tree], tokenize=lambda s: tok(str(s), add_special_tokens=False)["input_ids"])
    batch = rows_to_batch(rows, pad_token_id=tok.pad_token_id)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        beta=0.0,
        max_completion_length=batch["completion_ids"].shape[1],
        report_to=[],
        use_cpu=True,
        loss_type="dapo",
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=tiny_model_path,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "x"}] * 2),
        processing_class=tok,
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    n_tokens = int(batch["completion_mask"].sum())
    inputs = {k: v for k, v in batch.items() if k != "group_ids"}
    inputs["num_items_in_batch"] = torch.tensor(n_tokens)
    trl_loss = trainer._compute_loss(trainer.model, inputs)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    logps = trainer._get_per_token_logps_and_entropies(
        trainer.model, ids, attn, batch["completion_ids"].size(1)
    )[0]
    ours = grpo_loss(
        logps,
        batch["advantages"],
        batch["completion_mask"],
        beta=0.0,
        loss_type="dapo",
        num_items_in_batch=n_tokens,
    )
    torch.testing.assert_close(trl_loss, ours, rtol=1e-5, atol=1e-6)
    assert batch["advantages"].tolist() == pytest.approx([r.advantage for r in rows])


# --- a verl-style registry: verl's estimator signature, written here (verl is not a dependency) ------------------
ADV_ESTIMATORS = {}


def register_adv_est(name):
    def deco(fn):
        ADV_ESTIMATORS[name] = fn
        return fn

    return deco


@register_adv_est("murphy")
def murphy_passthrough(token_level_rewards, response_mask, index=None, config=None, **kwargs):
    """The rows' MURPHY advantage, placed as the scalar reward, broadcast over the response tokens."""
    scores = token_level_rewards.sum(-1, keepdim=True)
    return scores * response_mask, scores * response_mask


@register_adv_est("grpo")
def grpo_outcome(
    token_level_rewards,
    response_mask,
    index,
    epsilon=1e-6,
    norm_adv_by_std_in_grpo=True,
    config=None,
    **kwargs,
):
    """verl's GRPO outcome advantage: (score - mean_index) / (std_index + eps), unbiased std, per `index` group."""
    scores = token_level_rewards.sum(-1)
    groups = defaultdict(list)
    for i, g in enumerate(index):
        groups[g].append(i)
    adv = torch.zeros_like(scores)
    for members in groups.values():
        s = scores[members]
        mean, std = s.mean(), (s.std() if len(members) > 1 else torch.tensor(1.0))
        adv[members] = (s - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else s - mean
    return adv.unsqueeze(-1) * response_mask, adv.unsqueeze(-1) * response_mask


def _verl_inputs(rows: list[TrainingRow], value: str):
    batch = rows_to_batch(rows, pad_token_id=0)
    mask = batch["completion_mask"].float()
    # the reward sits on the last response token, where verl's reward managers put it
    last = mask.sum(-1).long() - 1
    rewards = torch.zeros_like(mask)
    rewards[torch.arange(len(rows)), last] = torch.tensor(
        [getattr(r, value) for r in rows], dtype=torch.float32
    )
    return rewards, mask, batch["group_ids"].tolist()


@pytest.mark.parametrize("credit", ["mars", "mers", "treerpo", "turn_credit"])
def test_verls_grpo_on_the_rows_credit_with_group_ids_reproduces_murphys_advantages(credit):
    rows = tree_rows([score_tree(_named(paper_tree(0)), credit=credit)], tokenize=char_ids)
    rewards, mask, index = _verl_inputs(rows, "credit")
    adv, _ = ADV_ESTIMATORS["grpo"](rewards, mask, index, epsilon=1e-4)
    assert adv[:, 0].tolist() == pytest.approx([r.advantage for r in rows], abs=1e-5)
    assert torch.equal(adv != 0, (mask != 0) & (adv[:, :1] != 0))  # only response tokens carry it


@pytest.mark.parametrize("credit", ["mt_grpo", "gigpo", "reward_to_go"])
def test_rules_with_their_own_baseline_reach_verl_through_a_passthrough_estimator(credit):
    rows = tree_rows([score_tree(_named(paper_tree(0)), credit=credit)], tokenize=char_ids)
    rewards, mask, index = _verl_inputs(rows, "advantage")
    adv, _ = ADV_ESTIMATORS["murphy"](rewards, mask, index)
    assert adv.sum(-1).tolist() == pytest.approx(
        [r.advantage * len(r.completion_ids) for r in rows], rel=1e-5
    )
