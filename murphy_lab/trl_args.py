"""TRL's arguments from a `MurphyConfig`: its `GRPOConfig` (`grpo_config`, through `MurphyConfig.to_grpo_config`)
and its LoRA `peft_config`. One name per concept: each GRPOConfig field the config sets comes from the one
MurphyConfig field `TRL_NAMES` names (G1 is `g1` up to here and TRL's `num_generations` only in what is built)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

PASSED = (
    "beta",
    "learning_rate",
    "epsilon",
    "temperature",
    "max_completion_length",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "num_iterations",
    "max_steps",
    "num_train_epochs",
    "seed",
    "save_steps",
    "save_total_limit",
    "logging_steps",
    "report_to",
    "use_vllm",
    "vllm_mode",
)
TRL_NAMES = {
    "num_generations": "g1",
    "loss_type": "loss_type",
    "bf16": "bf16",
    "chat_template_kwargs": "chat_template_kwargs",
    "gradient_checkpointing": "gradient_checkpointing",
    "activation_checkpointing": "gradient_checkpointing",
    **{name: name for name in PASSED},
}
"""TRL's GRPOConfig field -> the MurphyConfig field it is given from (`grpo_config`). One name per concept: G1 is
`g1` from the command line to this table and TRL's `num_generations` only in the GRPOConfig it builds; `trl:` may not
set one of these (the config's own field does, `problems()` says which)."""


def peft_config(cfg):
    """The `peft.LoraConfig` TRL's trainer takes as `peft_config` (None without `use_peft`), as TRL's
    `get_peft_config(ModelConfig)` builds it."""
    if not cfg.use_peft:
        return None
    from peft import LoraConfig

    targets = cfg.lora_target_modules
    return LoraConfig(
        task_type="CAUSAL_LM",
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(targets) if isinstance(targets, (list, tuple)) else targets,
    )


def grpo_config(cfg, output_dir: str | os.PathLike, cuda: bool, **extra: Any):
    """The `trl.GRPOConfig` of a (validated) `MurphyConfig`; `cuda`: whether this machine has a GPU. `extra`
    overrides anything (e.g. resume paths)."""
    from trl import GRPOConfig  # heavy (torch, transformers): only when a run starts

    bf16 = cuda if cfg.bf16 is None else cfg.bf16
    kw = {name: getattr(cfg, name) for name in PASSED}  # the same name here and in TRL (TRL_NAMES)
    kw.update(
        output_dir=str(output_dir),
        num_generations=cfg.g1,  # = G1: TRL repeats each task prompt G1 times; the roots are rows[::G1]
        # group_sum: dapo + row weights
        loss_type="dapo" if cfg.loss_type == "group_sum" else cfg.loss_type,
        bf16=bf16,
        save_strategy="steps",
        chat_template_kwargs=cfg.chat_template_kwargs or None,
        # The paper's GRPO (DeepSeekMath form) uses the plain k3 KL; TRL 1.16 multiplies it by the ratio by default.
        # We turn that off so the loss is the paper's and murphy_lab.grpo.grpo_loss's (bias_correction_kl=False).
        use_bias_correction_kl=False,
        remove_unused_columns=False,  # keep `task_id` in the rows
        dataloader_pin_memory=cuda,  # transformers' default True warns on every CPU run
    )
    if bf16 and not cuda:  # bf16 on a CPU with bf16 instructions (validate checked it)
        # transformers accepts bf16 without a GPU only when told the run is on the CPU
        kw["use_cpu"] = True
        # the frozen base in bf16 (half the memory, the CPU's bf16 kernels); adapters stay fp32
        if cfg.use_peft:
            kw["model_init_kwargs"] = {"dtype": "bfloat16"}
    # always passed: TRL's default is on
    kw.update(checkpointing(GRPOConfig, cfg.gradient_checkpointing))
    kw.update(cfg.trl)
    kw.update(extra)
    return GRPOConfig(**kw)


def checkpointing(args_cls: type, on: bool) -> dict:
    """The keyword argument that turns activation checkpointing on or off in a transformers `TrainingArguments`
    subclass (TRL's GRPOConfig, SFTConfig, RewardConfig): newer transformers (5.24) name it
    `activation_checkpointing` and warn on the old name; 5.17 (the gpu extra's) only knows `gradient_checkpointing`."""
    names = {f.name for f in dataclasses.fields(args_cls)}
    return {
        "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": on
    }


def stage_args(
    args_cls: type, output_dir, *, bf16: bool | None, trl_kwargs: dict | None = None, **fields: Any
):
    """A transformers `TrainingArguments` subclass (TRL's SFTConfig, RewardConfig: µCode's stages) for a short
    supervised run: bf16 (None: on a GPU) and activation checkpointing on a GPU, the CPU otherwise; no saving,
    reporting or progress bars; `trl_kwargs` last."""
    import torch  # heavy: only when a stage trains

    cuda = torch.cuda.is_available()
    return args_cls(
        output_dir=str(output_dir),
        bf16=cuda if bf16 is None else bf16,
        use_cpu=not cuda,
        **checkpointing(args_cls, cuda),
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        **fields,
        **(trl_kwargs or {}),
    )


def grpo_fields() -> set[str]:
    from trl import GRPOConfig  # heavy: imported when a config is validated, not when this module is

    return {f.name for f in dataclasses.fields(GRPOConfig)}
