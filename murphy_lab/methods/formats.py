"""One prompt format per experiment, in training and evaluation (docs/evaluation.md, "Prompt format"), and the policy
an experiment is evaluated with (`make_policy`: `murphy_lab.models.load_policy`, the one constructor of a generation
policy, which also loads a LoRA run's adapter over its base model).

The prompt format is the *rendering* of a prompt (chat template or plain text, template arguments, tokens per turn);
what the prompt says is the method's scaffold (`Method.scaffold`: Reflexion's prompts, ReVeal's tagged rounds).
"""

from __future__ import annotations

from typing import Any

from murphy_lab.models import load_policy

FORMAT_OPTIONS = ("chat", "chat_template_kwargs", "max_new_tokens")


def prompt_format(exp: Any) -> dict:
    """How every method of this experiment renders prompts and how long it generates, in training AND evaluation:
    the profile's `chat` (the paper's chat models through their chat template) with its `chat_template_kwargs` for
    the experiment's model (Qwen3 without its thinking section, as the training recipes), and `max_new_tokens` per
    turn."""
    prof = exp.profile  # the resolved Profile the experiment carries
    kwargs = dict(prof.chat_template_kwargs.get(exp.model, {})) if prof.chat else {}
    return {"chat": prof.chat, "chat_template_kwargs": kwargs, "max_new_tokens": prof.max_new_tokens}


def trained_format(cfg: Any) -> dict:
    """The prompt format a training config uses (a MurphyConfig, or a µCode MuCodeConfig), as `prompt_format`."""
    length = getattr(cfg, "max_completion_length", None) or cfg.max_new_tokens
    return {
        "chat": bool(cfg.chat),
        "chat_template_kwargs": dict(cfg.chat_template_kwargs or {}),
        "max_new_tokens": length,
    }


def policy_kwargs(exp: Any) -> dict:
    """The evaluation policy's rendering and length: `prompt_format(exp)` as policy keywords."""
    fmt = prompt_format(exp)
    return {
        "max_new_tokens": fmt["max_new_tokens"],
        "use_chat_template": fmt["chat"],
        "chat_template_kwargs": fmt["chat_template_kwargs"] or None,
    }


def make_policy(model_dir: str, exp: Any):
    """The policy an experiment is evaluated with: the profile's backend, rendering and length from `prompt_format`."""
    return load_policy(model_dir, exp.profile.use_vllm, **policy_kwargs(exp))
