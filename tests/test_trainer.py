"""MurphyTrainer on a tiny local model (CPU): every mode trains, rows are the kept trajectories, the loss TRL
computes equals murphy_lab.grpo.grpo_loss, and the private TRL API we override still has the shape we rely on."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
from pathlib import Path

import pytest
import torch

from murphy_lab.config import MurphyConfig
from murphy_lab.grpo import grpo_loss
from murphy_lab.smoke import smoke_tasks
from murphy_lab.tree import load_trees

MODES = {"murphy": {}, "grpo_mt": {"g2": 1}, "grpo": {"turns": 1}}


def make_trainer(tmp_path, model_path, executor, **overrides):
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile("smoke", model=model_path, **{"max_steps": 1, **overrides})
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    return MurphyTrainer(model=model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=executor)


def rows_for(trainer, tasks):
    """The generation batch TRL's RepeatSampler would hand over: each task's row G1 times in a row."""
    from murphy_lab.trainer import task_dataset

    return [row for row in task_dataset(tasks) for _ in range(trainer.num_generations)]


@pytest.mark.parametrize("mode", list(MODES))
def test_each_mode_changes_parameters(mode, tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor, mode=mode, max_steps=2, **MODES[mode])
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) == len(before)


def test_rows_are_the_kept_trajectories_with_their_advantages(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor, b_traj=2, steps_per_generation=1)
    trainer.model.train()
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()[:2]))
    trees = load_trees(tmp_path / "run" / "trees" / "step_000001.jsonl")
    kept = [n for t in trees for n in t.nodes(kept_only=True)]
    assert [round(float(a), 5) for a in batch["advantages"]] == [round(n.advantage, 5) for n in kept]


class NeverSolved:
    """Every candidate fails (rewards 0 or 0.5 alternately), so every turn-1 node is expanded: full 72-node trees."""

    def run_many(self, jobs):
        from murphy_lab.executor.types import ExecutionResult

        return [
            ExecutionResult(0.5 * (i % 2), i % 2, 2, "failed", "assert f() == 1  # output: 0")
            for i, _ in enumerate(jobs)
        ]


@pytest.mark.parametrize("budget, rows", [({}, 72), ({"b_grp": 4}, 40), ({"b_traj": 4}, 36)])
def test_paper_budgets_train_on_the_papers_trajectory_counts(budget, rows, tmp_path, tiny_model_path):
    trainer = make_trainer(tmp_path, tiny_model_path, NeverSolved(), g1=8, g2=8, **budget)
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()[:1]))
    assert len(batch["advantages"]) == rows and trainer.rollout_stats["trajectories/total"] == 72


def test_rows_padded_to_a_multiple_of_steps_per_generation_without_loss_weight(
    tmp_path, tiny_model_path, executor
):
    from trl.trainer.utils import split_tensor_dict

    trainer = make_trainer(
        tmp_path, tiny_model_path, executor, steps_per_generation=5, gradient_accumulation_steps=5
    )
    trainer.model.train()
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()[:1]))
    real = int(trainer.rollout_stats["trajectories/kept"])
    chunks = split_tensor_dict(batch, 5)  # what TRL's _prepare_inputs does with the batch
    assert len(batch["advantages"]) % 5 == 0
    assert sum(int(c["completion_mask"].sum()) for c in chunks) == int(batch["completion_mask"][:real].sum())
    assert not batch["advantages"][real:].any()


@pytest.mark.parametrize("loss_type", ["dapo", "bnpo", "grpo", "dr_grpo"])
def test_trl_loss_equals_teaching_grpo_loss(loss_type, tmp_path, tiny_model_path, executor):
    """PARITY: TRL's _compute_loss on a batch from the trainer == murphy_lab.grpo.grpo_loss on the same tensors,
    for every accepted loss_type, with the policy moved away from π_old and π_ref so that clipping and the KL term
    both act."""
    trainer = make_trainer(
        tmp_path,
        tiny_model_path,
        executor,
        num_iterations=2,  # -> old_per_token_logps
        loss_type=loss_type,
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()))
    for key in ("completion_ids", "completion_mask", "old_per_token_logps", "ref_per_token_logps"):
        batch[key] = torch.nn.functional.pad(batch[key], (0, 3))  # padded width T > max_completion_length
    torch.manual_seed(0)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    trl_loss = trainer._compute_loss(trainer.model, batch)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    logps = trainer._get_per_token_logps_and_entropies(
        trainer.model, ids, attn, batch["completion_ids"].size(1)
    )[0]
    ours = grpo_loss(
        logps,
        batch["advantages"],
        batch["completion_mask"],
        old_logps=batch["old_per_token_logps"],
        ref_logps=batch["ref_per_token_logps"],
        epsilon=0.2,
        beta=0.04,
        loss_type=loss_type,
        num_items_in_batch=int(batch["num_items_in_batch"]),
        max_completion_length=trainer.max_completion_length,
    )
    ratio = torch.exp(logps - batch["old_per_token_logps"])[batch["completion_mask"].bool()]
    assert ((ratio < 0.8) | (ratio > 1.2)).any()  # clipping is active on this batch
    torch.testing.assert_close(trl_loss, ours, rtol=1e-5, atol=1e-6)


def test_trees_are_dumped_without_token_ids(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    trainer.train()
    trees = load_trees(tmp_path / "run" / "trees" / "step_000001.jsonl")
    assert len(trees) == 2 and all("completion_ids" not in n.meta for t in trees for n in t.nodes())


def test_metrics_line_per_step_has_rollout_and_timing_keys(tmp_path, tiny_model_path, executor):
    import json

    trainer = make_trainer(tmp_path, tiny_model_path, executor, max_steps=2)
    trainer.train()
    lines = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    keys = {
        "reward/mean",
        "credit/mean",
        "advantage/std",
        "trajectories/kept",
        "groups/kept",
        "time/generation_s",
        "time/execution_s",
        "time/optimization_s",
        "trl/loss",
    }
    assert [d["step"] for d in lines] == [1, 2] and all(keys <= set(d) for d in lines)


def test_trees_of_a_batch_must_not_span_devices(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    rows = rows_for(trainer, smoke_tasks()[:2])
    with pytest.raises(RuntimeError, match="mix tasks"):
        trainer._generate_and_score_completions(rows[1:] + rows[:1])


def test_chat_prompts_go_through_the_chat_template_and_trees_keep_plain_text(tmp_path, executor):
    from murphy_lab.policy.tiny import build_tiny_model

    template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    model = build_tiny_model(tmp_path / "chat-model", chat_template=template)
    trainer = make_trainer(tmp_path, model, executor, chat=True)
    batch = trainer._generate_and_score_completions(rows_for(trainer, smoke_tasks()[:1]))
    first = trainer.processing_class.decode(batch["prompt_ids"][0][batch["prompt_mask"][0].bool()])
    tree = load_trees(tmp_path / "run" / "trees" / "step_000001.jsonl")[0]
    assert first.startswith("<|user|>") and first.endswith("<|assistant|>")
    assert isinstance(tree.root.children[0].prompt, str) and "<|user|>" not in tree.root.children[0].prompt


def test_vllm_importance_ratio_is_old_over_sampling_probability_clamped(tmp_path, tiny_model_path, executor):
    from murphy_lab.tree import Node

    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    trainer.vllm_importance_sampling_mode = "token_truncate"
    trainer.vllm_importance_sampling_clip_min, trainer.vllm_importance_sampling_clip_max = 0.5, 2.0
    old = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, 0.0]])  # (B, T) log π_old
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    nodes = [Node(meta={"sampling_logps": [-1.5, -2.0, -1.0]}), Node(meta={"sampling_logps": [None, -1.2]})]
    ratio = trainer._is_ratio(old, mask, nodes)["importance_sampling_ratio"]
    expected = torch.tensor([[torch.e**0.5, 1.0, 0.5], [1.0, torch.e**0.2, 1.0]])  # NaN (None) -> ratio 1
    torch.testing.assert_close(ratio, expected)


def test_private_trl_api_we_override_is_unchanged():
    """CONTRACT: the names and signatures of TRL 1.16's private methods that MurphyTrainer calls or replaces."""
    import trl
    from trl import GRPOTrainer
    from trl.trainer import grpo_trainer

    def params(fn):
        return list(inspect.signature(fn).parameters)

    assert trl.__version__ == "1.16.0"
    assert params(GRPOTrainer._generate_and_score_completions) == ["self", "inputs"]
    assert params(GRPOTrainer._generate_single_turn)[:5] == [
        "self",
        "prompt_ids",
        "images",
        "multimodal_fields",
        "num_generations",
    ]
    assert params(GRPOTrainer._tokenize_prompts) == ["self", "prompts"]
    assert params(GRPOTrainer._compute_loss) == ["self", "model", "inputs"]
    assert params(GRPOTrainer._get_per_token_logps_and_entropies)[:6] == [
        "self",
        "model",
        "input_ids",
        "attention_mask",
        "logits_to_keep",
        "batch_size",
    ]
    assert "split_tensor_dict(generation_batch, self.args.steps_per_generation)" in inspect.getsource(
        GRPOTrainer._prepare_inputs
    )
    assert params(grpo_trainer.split_tensor_dict) == ["tensor_dict", "num_chunks"]
    src = inspect.getsource(GRPOTrainer._compute_loss)
    for key in (
        "old_per_token_logps",
        "ref_per_token_logps",
        "importance_sampling_ratio",
        "num_items_in_batch",
    ):
        assert key in src


_TWO_RANKS = """
import os, sys, torch
torch.set_num_threads(1)
from murphy_lab.config import MurphyConfig
from murphy_lab.executor.types import ExecutionResult
from murphy_lab.train import train

class AllPass:  # rank 1's trees are all solved at turn 1; rank 0's keep growing for three turns
    def run_many(self, jobs):
        return [ExecutionResult(1.0, 1, 1, "passed", "") for _ in jobs]

class NonePass:
    def run_many(self, jobs):
        return [ExecutionResult(0.5 * (i % 2), i % 2, 2, "failed", "no") for i, _ in enumerate(jobs)]

executor = AllPass() if os.environ["RANK"] == "1" else NonePass()
cfg = MurphyConfig.for_profile("smoke", model=sys.argv[2], max_steps=2, turns=3, steps_per_generation=2,
                               gradient_accumulation_steps=2, per_device_train_batch_size=2)
train(cfg, sys.argv[1], executor=executor)
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("MURPHY_LAB_MULTIPROCESS"), reason="set MURPHY_LAB_MULTIPROCESS=1 (2 CPU ranks)"
)
def test_two_ranks_with_unequal_trees_do_not_deadlock(tmp_path, tiny_model_path):
    """Rank 1 finishes after turn 1, rank 0 grows three turns: the catch-up generation calls and row padding keep
    every collective aligned (run with torchrun, gloo backend)."""
    import json
    import subprocess
    import sys

    (tmp_path / "two_ranks.py").write_text(_TWO_RANKS)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        str(tmp_path / "two_ranks.py"),
        str(tmp_path / "run"),
        tiny_model_path,
    ]
    subprocess.run(cmd, check=True, timeout=600, env={**os.environ, "ACCELERATE_USE_CPU": "1"})
    lines = [json.loads(s) for s in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [d["step"] for d in lines] == [1, 2] and all(d["trees"] == 2 for d in lines)


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available() or importlib.util.find_spec("vllm") is None,
    reason="needs a CUDA GPU and vLLM",
)
def test_vllm_colocate_step_changes_parameters(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(
        tmp_path,
        tiny_model_path,
        executor,
        use_vllm=True,
        vllm_mode="colocate",
        bf16=True,
        trl={"vllm_gpu_memory_utilization": 0.2, "vllm_max_model_length": 1024},
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


PACKAGE = Path(__file__).resolve().parent.parent / "murphy_lab"
TRL_PRIVATE = re.compile(
    r"\._(generate_single_turn|generate_and_score_completions|compute_loss|get_per_token_logps\w*"
    r"|prepare_inputs|tokenize_prompts|buffered_inputs|metrics)\b|split_tensor_dict"
)


def test_only_the_trainer_package_touches_trls_private_api():
    users = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "trainer" not in p.relative_to(PACKAGE).parts[:1] and TRL_PRIVATE.search(p.read_text())
    )
    assert users == []


def test_neither_the_core_nor_the_trainer_imports_the_baselines():
    core = [
        "tree.py",
        "credit.py",
        "prune.py",
        "grpo.py",
        "modes.py",
        "scoring.py",
        "rollout.py",
        *(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "trainer").glob("*.py")),
    ]
    assert [f for f in core if "murphy_lab.baselines" in (PACKAGE / f).read_text()] == []


# --- LoRA (MurphyConfig.use_peft, TRL's peft_config) ---------------------------------------------------------------
peft_missing = pytest.mark.skipif(
    importlib.util.find_spec("peft") is None, reason="LoRA needs peft (the lora extra)"
)


@peft_missing
def test_a_lora_murphy_step_updates_only_the_adapter_weights(tmp_path, tiny_model_path, executor):
    # 2 steps: LoRA's A moves once B is not 0
    trainer = make_trainer(
        tmp_path,
        tiny_model_path,
        executor,
        use_peft=True,
        lora_r=4,
        max_steps=2,
        lora_target_modules=["q_proj", "v_proj"],
    )
    assert type(trainer.model).__name__ == "PeftModelForCausalLM" and trainer.ref_model is None
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    adapters = {n for n in before if "lora_" in n}
    assert changed == adapters and len(adapters) == 2 * 2 * 2  # A and B of q_proj and v_proj in 2 layers
    assert trainer._prefix_verdicts and all(v is None for v in trainer._prefix_verdicts.values())  # shared


def test_lora_fields_are_checked_before_anything_loads():
    with pytest.raises(ValueError, match="lora_r: must be an integer >= 1"):
        MurphyConfig.for_profile("smoke", use_peft=True, lora_r=0).validate()
    with pytest.raises(ValueError, match=r"lora_dropout: must lie in \[0, 1\)"):
        MurphyConfig.for_profile("smoke", lora_dropout=1.0).validate()
    with pytest.raises(ValueError, match="lora_target_modules: must be a list or a string or null"):
        MurphyConfig.for_profile("smoke", lora_target_modules=3).validate()
    assert MurphyConfig.for_profile("smoke").peft_config() is None


def test_lora_without_peft_is_one_line_naming_the_extra(monkeypatch):
    from murphy_lab import config

    monkeypatch.setattr(config, "_peft_installed", lambda: False)
    with pytest.raises(
        ValueError, match=r"use_peft: needs the peft package: pip install 'murphy-lab\[lora\]'"
    ):
        MurphyConfig.for_profile("smoke", use_peft=True).validate()
