"""One job per run: list a reproduce notebook's runs, write a cluster array script for them, run one by its label.

    python -m murphy_lab.experiments.jobs list   --profile paper --notebook main_table        # labels, keys, commands
    python -m murphy_lab.experiments.jobs check  --profile paper --notebook main_table        # before any node starts
    python -m murphy_lab.experiments.jobs script --profile paper --notebook main_table --out jobs/main_table.sh
    sbatch jobs/main_table.sh                    # one array task per checkpoint, one node each (SLURM)
    bash jobs/main_table.sh 3                    # task 3 on this machine; no index: every task in turn
    python -m murphy_lab.experiments.jobs run    --profile paper --notebook main_table --key Qwen3-1.7B/murphy/mars/seed0

A plan is the notebook's (`notebook_plan`: the same `plan(...)` calls as reproduce/<notebook>.py at its default
parameters, with `--methods / --models / --seeds / --set` standing for the notebook's `methods`, `models`, `seeds`
and `train_overrides`), so a job writes the run folder the notebook looks for: `<output-dir>/<profile>/runs/<run_key>`
(default `reproduce/results`, the notebooks' `results` under `make`'s `--cwd reproduce`) and its checkpoint under
`<cache-dir>/<profile>/checkpoints/<train_key>`. The notebook then tabulates what the jobs wrote: run it as usual
(finished runs are never recomputed) or with `-p from_cache_only True`. Run keys hold the code version (the git
commit): the jobs and the notebook must run the same checkout (or pin MURPHY_LAB_CODE_VERSION).

A run is addressed by its label `<model>/<method>/<variant>/seed<N>` (`checkpoints.run_label`), its run_key or its
train_key. The array script (`murphy_lab.experiments.job_scripts`) activates the venv (`<venv>/bin/activate`,
default `.venv`) and starts the runs in plan order; on a GPU node a paper run launches its recipe on the node's GPUs
(`methods.recipes.launch`).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from murphy_lab import cli
from murphy_lab.config import MurphyConfig
from murphy_lab.experiments.checkpoints import check_model_paths, run_label
from murphy_lab.experiments.dispatch import default_base_model
from murphy_lab.experiments.job_scripts import job_groups, run_command, unique_key, write_scripts
from murphy_lab.experiments.plan import (
    Experiment,
    credit_variants,
    plan,
    pruning_variants,
    require_resources,
    run_key,
    train_key,
)
from murphy_lab.experiments.standins import backend_functions
from murphy_lab.experiments.store import RunResult, run_experiment
from murphy_lab.fields import field_types
from murphy_lab.methods import METHODS, get_method
from murphy_lab.methods.recipes import REPO, experiment_fields, local_args
from murphy_lab.preflight import check, data_problem
from murphy_lab.profiles import PROFILES, get_profile
from murphy_lab.suggest import did_you_mean
from murphy_lab.tasks.registry import GENERATED, canonical

NOTEBOOKS = ("main_table", "ablation_credit", "ablation_pruning", "cross_scaffold", "lcb_difficulty")


def notebook_plan(
    notebook: str,
    profile: str,
    *,
    backend: str = "real",
    methods: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    train_overrides: dict | None = None,
    knobs: dict | None = None,
) -> list[Experiment]:
    """The experiments reproduce/<notebook>.py plans at its default parameters ("all": every notebook's, once).
    `methods` / `models` / `seeds` / `train_overrides` / `knobs` (the credit ablation's) are the notebook's
    parameters of those names."""
    if notebook == "all":
        out = [
            e
            for nb in NOTEBOOKS
            for e in notebook_plan(
                nb,
                profile,
                backend=backend,
                methods=methods,
                models=models,
                seeds=seeds,
                train_overrides=train_overrides,
                knobs=knobs,
            )
        ]
        return list(dict.fromkeys(out))
    if notebook not in NOTEBOOKS:
        raise ValueError(f"--notebook must be one of {[*NOTEBOOKS, 'all']}, got {notebook!r}")
    prof = get_profile(profile)
    # as `setup` orders them
    overrides = prof.train_overrides + tuple(sorted((train_overrides or {}).items()))
    kw = dict(backend=backend, overrides=overrides, seeds=seeds)
    paper = prof.name == "paper"
    if notebook == "main_table":
        return plan(prof, methods=methods, models=models, **kw)
    if notebook == "ablation_credit":
        return plan(
            prof,
            methods=methods or ["murphy"],
            models=models or (["Qwen3-1.7B"] if paper else None),
            variants=credit_variants(prof, knobs=knobs),
            **kw,
        )
    if notebook == "ablation_pruning":
        return plan(
            prof,
            methods=methods or ["murphy"],
            models=models or (["Qwen3-1.7B"] if paper else None),
            variants=pruning_variants(("none", "intrap", "interp"), ("full", "pruned")),
            **kw,
        )
    three = methods or ["base", "grpo_mt", "murphy"]
    if notebook == "cross_scaffold":
        return [
            e for sc in prof.scaffolds for e in plan(prof, methods=three, models=models, scaffold=sc, **kw)
        ]
    bench = "LCB-v6" if paper else prof.benchmarks[0]  # lcb_difficulty
    return plan(
        prof, methods=three, models=models or (["Qwen3-4B"] if paper else None), benchmarks=[bench], **kw
    )


def find_run(experiments: Sequence[Experiment], key: str) -> Experiment:
    """The experiment a label, run_key or train_key names (a train_key shared by several scaffolds' runs, or a
    label shared by several runs of a cross-scaffold plan, is refused: give the run_key)."""
    hits = [e for e in experiments if key in (run_label(e), run_key(e), train_key(e))]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise ValueError(
            f"--key {key!r} names no run of this plan{did_you_mean(key, [run_label(e) for e in experiments])}"
            "; `jobs list` prints them"
        )
    raise ValueError(
        f"--key {key!r} names {len(hits)} runs of this plan (other scaffolds or benchmarks); give "
        f"one of their run keys: {', '.join(run_key(e) for e in hits)}"
    )


def plan_problems(
    experiments: Sequence[Experiment],
    gpus: int | None = None,
    model_paths: dict | None = None,
    cache_dir: Path | None = None,
) -> list[str]:
    """Every problem of a plan found before a node starts, one line each, deduplicated: each trained run's
    training config (`murphy_lab.preflight.check`: fields, data, model, GPUs, vLLM / DeepSpeed), each benchmark's data,
    and a `model_paths` key that would serve several runs. Nothing is loaded or built (a profile that builds its
    base model, smoke or toy, is checked with the profile's own)."""
    problems: list[str] = []
    try:
        check_model_paths(experiments, model_paths)
    except ValueError as err:
        problems.append(str(err))
    model_paths = model_paths or {}
    if gpus is None:
        import torch  # heavy: only to count this machine's GPUs

        gpus = torch.cuda.device_count()
    for prof in sorted({e.profile for e in experiments}, key=lambda p: p.name):
        name = prof.name
        have = gpus
        if prof.needs_gpu and have < 1:
            problems.append(
                f"GPUs: the {name} profile trains and evaluates on CUDA GPUs and this machine has none "
                "(use --gpus N to check for a GPU node; docs/gpu.md)"
            )
        if prof.use_vllm and importlib.util.find_spec("vllm") is None:
            problems.append(
                f"vllm: the {name} profile evaluates with vLLM and it is not installed; install the gpu "
                "extra: .venv/bin/pip install -e '.[gpu]'"
            )
    for exp in experiments:
        prof = exp.profile
        if get_method(exp.method).trains:
            base = model_paths.get(exp.model) or (
                "" if prof.build else default_base_model(exp, cache_dir or Path())
            )
            try:
                cfg = _config(exp, base)
            except (ValueError, FileNotFoundError) as err:
                problems.append(f"{run_label(exp)}: {str(err).splitlines()[0]}")
                continue
            local = f"models/{base.split('/')[-1]}"  # a plan takes a downloaded model through model_paths
            problems += [
                line.replace(f"set model={local}", f"pass --model-path {exp.model}={local} (model_paths)")
                for line in check(cfg, gpus)
            ]
        for bench in exp.benchmarks:
            loader = canonical(bench)
            if loader in GENERATED:
                continue
            args = {**prof.benchmark_args_of(bench), **exp.own_benchmark_args(bench), **local_args(bench)}
            line = data_problem(loader, args)
            if line:
                problems.append(line.replace("tasks:", f"benchmark {bench}:", 1))
    return list(dict.fromkeys(problems))


def _config(exp: Experiment, base: str):
    """The method's training config, built without its final `validate()` (check() validates and reports)."""
    method = get_method(exp.method)
    try:
        return method.config(exp, base)
    except ValueError as err:
        text = str(err)
        # GPU fields: check() counts the target's GPUs
        if not text.startswith(("use_vllm:", "bf16:", "model:")):
            raise
    fields = experiment_fields(exp, base, length="max_completion_length")
    known = {k: v for k, v in fields.items() if k in MurphyConfig.__dataclass_fields__}
    return MurphyConfig.from_dict({**known, "profile": exp.profile.name})


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.experiments.jobs", __doc__)
    p.add_argument("action", choices=("list", "check", "script", "run"))
    p.add_argument("--profile", default="paper", help="smoke | toy | toy-full | paper (default: paper)")
    p.add_argument(
        "--notebook", default="main_table", help=f"{' | '.join(NOTEBOOKS)} | all (default: main_table)"
    )
    p.add_argument(
        "--methods", nargs="+", action="extend", help="the notebook's `methods` (default: its own)"
    )
    p.add_argument("--models", nargs="+", action="extend", help="the notebook's `models`")
    p.add_argument("--seeds", nargs="+", action="extend", type=int, help="the notebook's `seeds`")
    cli.add_set(p, "the notebook's `train_overrides` (training-config fields)")
    p.add_argument(
        "--knobs",
        nargs="+",
        action="extend",
        default=[],
        metavar="KNOB=V1,V2",
        help="ablation_credit: the notebook's `knobs`, a credit rule's knob swept (e.g. omega=0.5,1.0)",
    )
    p.add_argument("--backend", default="real", help="real | stand-in (fake numbers: pipeline tests only)")
    p.add_argument("--output-dir", default="reproduce/results", help="run records go to <it>/<profile>/runs/")
    p.add_argument(
        "--cache-dir", default="reproduce/cache", help="checkpoints go to <it>/<profile>/checkpoints/"
    )
    p.add_argument(
        "--no-train", dest="train", action="store_false", help="evaluate existing checkpoints only"
    )
    p.add_argument(
        "--model-path",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=PATH",
        help="a checkpoint trained elsewhere, keyed by model or run label (model_paths)",
    )
    p.add_argument("--key", help="run: the run's label, run_key or train_key")
    p.add_argument("--out", help="script: the training tasks' script (evaluation-only tasks: <out>-eval.sh)")
    p.add_argument("--venv", default=".venv", help="script: the venv to activate (default: .venv)")
    p.add_argument(
        "--repo", default=str(REPO), help="script: the checkout the jobs run in (default: this one)"
    )
    p.add_argument(
        "--logs", default="jobs/logs", help="script: SLURM log folder (relative to --repo), made now"
    )
    p.add_argument(
        "--eval-gpus",
        type=int,
        default=1,
        help="script: GPUs per evaluation-only task (default: 1, one model on one GPU)",
    )
    p.add_argument("--gpus", type=int, help="check: the GPUs of a node (default: this machine's)")
    return p


def inputs(a: argparse.Namespace) -> tuple[dict, dict, dict]:
    """(train overrides, model paths, swept knobs) once every option is accepted: names (with their nearest), the overrides'
    types against the training configs' fields, the options an action needs; `cli.Refused` lists every problem."""
    problems = [
        cli.choice(a.profile, PROFILES, "--profile"),
        cli.choice(a.notebook, [*NOTEBOOKS, "all"], "--notebook"),
        cli.choice(a.backend, ("real", "stand-in"), "--backend"),
    ]
    problems += [cli.choice(m, METHODS, "--methods") for m in a.methods or ()]
    if a.profile in PROFILES:
        problems += [cli.choice(m, get_profile(a.profile).models, "--models") for m in a.models or ()]
    plain, nested, found = cli.sets(a.set, field_types(MurphyConfig))
    problems += found
    if nested:
        problems.append(f"--set {sorted(nested)[0]}.*: a plan's overrides set whole fields (no dotted names)")
    model_paths, found = cli.pairs(a.model_path, "--model-path")
    problems += found
    knobs, found = cli.pairs(a.knobs, "--knobs")
    problems += found
    for name, text in knobs.items():
        try:
            knobs[name] = [float(v) for v in text.split(",")]
        except ValueError:
            problems.append(f"--knobs {name}: expects numbers separated by commas, got {text!r}")
    if a.action == "run" and not a.key:
        problems.append("run needs --key (a label from `jobs list`, a run_key or a train_key)")
    if a.action == "script" and not a.out:
        problems.append("script needs --out FILE")
    if a.eval_gpus < 1:
        problems.append(f"--eval-gpus must be >= 1, got {a.eval_gpus}")
    cli.refuse(problems)
    return plain, model_paths, knobs


def main(argv: list[str] | None = None) -> list[Experiment] | RunResult | Path | list[Path]:
    a = parser().parse(argv)
    overrides, model_paths, knobs = inputs(a)
    experiments = notebook_plan(
        a.notebook,
        a.profile,
        backend=a.backend,
        methods=a.methods,
        models=a.models,
        seeds=a.seeds,
        train_overrides=overrides,
        knobs=knobs,
    )
    if a.action == "list":
        for i, e in enumerate(experiments):
            key = unique_key(e, experiments)
            print(
                f"{i:3d}  {run_label(e):42s}  run_key {run_key(e)}  train_key {train_key(e) or '-':16s}  "
                f"scaffold {e.scaffold}  benchmarks {','.join(e.benchmarks)}"
            )
            print(f"     {run_command(a, key)}")
        print(f"{len(experiments)} runs; write them as array scripts with `jobs script --out FILE`")
        return experiments
    if a.action == "check":
        problems = plan_problems(experiments, a.gpus, model_paths, Path(a.cache_dir) / a.profile)
        cli.report_problems(
            problems, f"ok: the {len(experiments)} runs of {a.notebook} on {a.profile} pass the checks"
        )
        return experiments
    if a.action == "script":
        paths = write_scripts(a.out, experiments, a)
        submit = " && ".join(f"sbatch {p}" for p in paths)
        print(
            f"wrote {', '.join(map(str, paths))}: {len(experiments)} runs in {len(job_groups(experiments))} array "
            f"tasks; submit: {submit} (or bash SCRIPT [INDEX] here)"
        )
        return paths
    exp = find_run(experiments, a.key)
    check_model_paths(experiments, model_paths)
    if a.backend == "real":
        # the paper profile: CUDA, and no training task repeated in a benchmark (as the notebooks' setup)
        try:
            require_resources(exp.profile)
        except RuntimeError as err:
            raise ValueError(str(err)) from None
    _, fns = backend_functions(a.backend)
    result = run_experiment(
        exp,
        Path(a.output_dir) / a.profile,
        Path(a.cache_dir) / a.profile,
        train=a.train,
        model_paths=model_paths,
        **fns,
    )
    state = "already finished" if result.cached else "finished"
    print(f"{run_label(exp)}: {state} -> {result.path}")
    sys.stdout.flush()
    return result


if __name__ == "__main__":
    cli.run(main)
