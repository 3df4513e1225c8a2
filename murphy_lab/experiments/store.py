"""The run store: one finished experiment = one folder, written atomically, read back without running anything.

Layout on disk (paths relative to the notebook's working directory, `reproduce/` under `make demo`):

    results/<profile>/runs/<run_key>/     small and committed-friendly: config.json, eval.csv, metrics.jsonl, done.json
    results/<profile>/*.csv|md|tex|png    the tables and figures (`murphy_lab.experiments.paper_tables`)
    cache/<profile>/checkpoints/<train_key>/   trained models (large; git-ignored)
    cache/<profile>/base/                 the base policy (the toy world builds its own)

A run whose `done.json` exists is never recomputed; `collect` rebuilds every table from those files alone.
Train, evaluate and base-model construction are injectable callables (`train_fn`, `evaluate_fn`, `base_model_fn`;
default: `murphy_lab.experiments.dispatch`), so tests and notebooks can swap in fast stand-ins.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from murphy_lab.experiments import dispatch, partial
from murphy_lab.experiments.checkpoints import check_model_paths, given_checkpoint, run_label
from murphy_lab.experiments.plan import Experiment, code_version, run_key, train_key
from murphy_lab.experiments.standins import STAND_IN_FNS
from murphy_lab.methods import get_method
from murphy_lab.methods.formats import prompt_format, trained_format
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.trainer.metrics import cpu_seconds

log = logging.getLogger(__name__)

EVAL_COLUMNS = ("difficulty", "k", "pass@1", "std", "n_tasks")  # what `murphy_lab.evaluate.evaluate` returns


@dataclass
class RunResult:
    """What one finished experiment left on disk, loaded back."""

    experiment: Experiment
    key: str
    path: Path
    results: pd.DataFrame  # one row per (benchmark, difficulty, k): pass@1, std, n_tasks
    metrics: pd.DataFrame | None = None  # the trainer's metrics.jsonl, one row per step (None for base)
    cached: bool = False
    info: dict = field(default_factory=dict)  # done.json: timings, checkpoint, code version
    curve: pd.DataFrame | None = None  # curve.csv: Iter-3 pass@1 of the intermediate checkpoints (exp.curve)


# (experiment, base model, output dir) -> trained model dir
TrainFn = Callable[[Experiment, str, Path], Path]
# (experiment, model dir, benchmark) -> Iter-k table (columns of murphy_lab.evaluate.evaluate); may also accept
# a `transcripts_path=` keyword, then the run folder keeps the episodes
EvaluateFn = Callable[[Experiment, str, str], pd.DataFrame]
# (experiment, cache dir) -> base model path or hub id
BaseModelFn = Callable[[Experiment, Path], str]


def run_experiment(
    exp: Experiment,
    results_dir: str | Path,
    cache_dir: str | Path | None = None,
    *,
    train: bool = True,
    force: bool = False,
    train_fn: TrainFn | None = None,
    evaluate_fn: EvaluateFn | None = None,
    base_model_fn: BaseModelFn | None = None,
    model_paths: dict[str, str] | None = None,
) -> RunResult:
    """Train (unless cached or `train=False`) and evaluate one experiment; skip both when its run is cached.

    `results_dir` is `results/<profile>`, `cache_dir` holds checkpoints (default: `<results_dir>/../../cache/<profile>`
    when `results_dir` sits under a `results/` folder, else `<results_dir>/cache`). With `train=False` a missing
    checkpoint is an error naming where it was looked for. `model_paths` maps a model key to its base model and a
    run label "<model>/<method>/<variant>/seed<N>" (or a train_key) to that run's checkpoint, which then replaces
    building / training it (`murphy_lab.experiments.checkpoints`; `run_all` refuses a key serving several runs).
    """
    stand_in = any(fn in STAND_IN_FNS for fn in (train_fn, evaluate_fn, base_model_fn))
    if stand_in != (exp.backend == "stand-in"):
        raise ValueError(f"stand-in functions need backend='stand-in' and real ones backend='real' ({exp})")
    results_dir, key = Path(results_dir), run_key(exp)
    run_dir = results_dir / "runs" / key
    if (run_dir / "done.json").exists() and not force:
        return load_run(run_dir)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(results_dir)
    train_fn, evaluate_fn = train_fn or dispatch.default_train, evaluate_fn or dispatch.default_evaluate
    base_model_fn = base_model_fn or dispatch.default_base_model
    model_paths = model_paths or {}
    info: dict = dict(code_version=code_version(), run_key=key, train_key=train_key(exp))
    info["generation"] = prompt_format(exp)  # the same for the base and every trained model of the table

    t0 = time.perf_counter()
    base = model_paths.get(exp.model) or base_model_fn(exp, cache_dir)
    if exp.model in model_paths:
        info["base_source"] = f"model_paths[{exp.model!r}]"
    model_dir, metrics_path = str(base), None
    trains = get_method(exp.method).trains
    if trains:
        given_key, given = given_checkpoint(exp, model_paths) or (None, None)
        ckpt = Path(given) if given else cache_dir / "checkpoints" / info["train_key"]
        if given:
            info.update(trained="given", model_source=f"model_paths[{given_key!r}]")
        elif (ckpt / "DONE").exists():
            info.update(trained="reused", model_source=f"cache {ckpt}")
            done = Path((ckpt / "DONE").read_text().strip())  # the model folder the trainer returned
            # relative to the checkpoint, or as written
            ckpt = ckpt / done if (ckpt / done).exists() else done
        elif not train:
            raise FileNotFoundError(
                f"train=False but no checkpoint for {run_label(exp)} at {ckpt}; run with train=True or pass "
                f"model_paths={{'{run_label(exp)}': '<dir>'}}"
            )
        else:
            # interrupted before its first checkpoint: start clean
            if ckpt.exists() and last_checkpoint(ckpt) is None:
                shutil.rmtree(ckpt)
            ckpt.mkdir(parents=True, exist_ok=True)
            t1, c1 = time.perf_counter(), cpu_seconds()
            from murphy_lab.trainer.run import continuing_interrupted

            with continuing_interrupted():  # an interrupted run continues from its newest checkpoint (exact)
                ckpt = Path(train_fn(exp, str(base), ckpt))
            info.update(
                trained="now",
                train_s=round(time.perf_counter() - t1, 2),
                model_source="trained here",
                train_cpu_s=round(cpu_seconds() - c1, 1),
            )  # this process and the workers it reaped
            root = cache_dir / "checkpoints" / info["train_key"]
            # relative to the checkpoint folder when inside it, so the cache can move (an absolute path stays one)
            inside = ckpt.resolve().is_relative_to(root.resolve())
            (root / "DONE").write_text(
                str(ckpt.resolve().relative_to(root.resolve())) if inside else str(ckpt.resolve())
            )
        model_dir = str(ckpt)
        if given:
            _check_given_format(exp, Path(given), info)
        metrics_path = _find_metrics(Path(model_dir), cache_dir / "checkpoints" / info["train_key"])

    t2, c2 = time.perf_counter(), cpu_seconds()
    frames = []
    tmp = run_dir.with_name(key + ".tmp")
    # an evaluation killed midway keeps its finished benchmarks for the same model (a real model's: ~half an hour each)
    stamp = partial.model_stamp(model_dir)
    kept = partial.kept_benchmarks(tmp, stamp)
    if kept is None:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        kept = {}
    earlier = dict(kept)  # benchmarks an earlier process evaluated
    wants_transcripts = "transcripts_path" in inspect.signature(evaluate_fn).parameters
    if exp.curve and trains and info.get("trained") != "given":
        t3 = time.perf_counter()
        curve = curve_points(exp, cache_dir / "checkpoints" / info["train_key"], metrics_path, evaluate_fn)
        curve.to_csv(tmp / "curve.csv", index=False)
        info.update(curve_s=round(time.perf_counter() - t3, 2))
    for bench in exp.benchmarks:
        part = partial.table_path(tmp, bench)
        if bench in kept:
            frames.append(pd.read_csv(part).assign(benchmark=bench))
            continue
        kw = (
            dict(transcripts_path=str(tmp / f"transcripts_{partial.slug(bench)}.jsonl"))
            if wants_transcripts
            else {}
        )
        t4, c4 = time.perf_counter(), cpu_seconds()
        df = pd.DataFrame(evaluate_fn(exp, model_dir, bench, **kw))
        missing = [c for c in ("k", "pass@1") if c not in df.columns]
        if missing:
            raise ValueError(f"evaluate_fn returned no column(s) {missing} for benchmark {bench!r}")
        kept[bench] = dict(eval_s=time.perf_counter() - t4, eval_cpu_s=cpu_seconds() - c4)
        partial.keep(tmp, stamp, kept, bench, df)
        frames.append(df.assign(benchmark=bench))
    if earlier:
        info.update(eval_resumed=sorted(earlier))  # their time is counted below, from when they ran
    info.update(
        eval_s=round(time.perf_counter() - t2 + sum(v["eval_s"] for v in earlier.values()), 2),
        total_s=round(time.perf_counter() - t0, 2),
        eval_cpu_s=round(cpu_seconds() - c2 + sum(v["eval_cpu_s"] for v in earlier.values()), 1),
        model_dir=model_dir,
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )

    (tmp / "config.json").write_text(
        json.dumps(dict(exp.resolved(), code_version=info["code_version"]), indent=1)
    )
    pd.concat(frames, ignore_index=True).to_csv(tmp / "eval.csv", index=False)
    if metrics_path is not None:
        shutil.copy(metrics_path, tmp / "metrics.jsonl")
    (tmp / "done.json").write_text(json.dumps(info, indent=1))
    partial.clear(tmp)
    shutil.rmtree(run_dir, ignore_errors=True)
    tmp.rename(run_dir)  # a run folder either is complete or does not exist
    result = load_run(run_dir)
    result.cached = False
    return result


CURVE_K = 3  # the budget curve reads Iter-3, the verdict's k


def curve_points(
    exp: Experiment, ckpt_root: Path, metrics_path: Path | None, evaluate_fn: EvaluateFn
) -> pd.DataFrame:
    """Iter-3 pass@1 of each intermediate checkpoint (`checkpoint-N` under the run's checkpoint folder, N below the
    last step; the final model gets the full evaluation) on the same held-out tasks, with one sampling run. A
    pipeline that leaves no `checkpoint-N` there (µCode's rounds) gives an empty curve.

    Columns: step, benchmark, k, pass@1, runs, n_tasks. The curve figure adds each step's sampled sequences from
    metrics.jsonl (`murphy_lab.viz.plot_budget_curves`).
    """
    names = (d.name.removeprefix("checkpoint-") for d in Path(ckpt_root).glob("checkpoint-*"))
    steps = sorted(int(n) for n in names if n.isdigit())
    logged = pd.read_json(metrics_path, lines=True) if metrics_path is not None and steps else pd.DataFrame()
    last = int(logged["step"].max()) if "step" in logged.columns else None  # µCode logs stages, not steps
    probe = dataclasses.replace(exp, iters=(CURVE_K,), runs=1, curve=False)
    rows = []
    for step in [s for s in steps if last is None or s < last]:
        for bench in exp.benchmarks:
            df = pd.DataFrame(evaluate_fn(probe, str(Path(ckpt_root) / f"checkpoint-{step}"), bench))
            df = df[df["k"] == CURVE_K]
            if "difficulty" in df.columns:
                df = df[df["difficulty"].fillna("all").astype(str) == "all"]
            rows += [
                dict(
                    step=step,
                    benchmark=bench,
                    k=CURVE_K,
                    **{"pass@1": float(r["pass@1"])},
                    runs=1,
                    n_tasks=int(r["n_tasks"]) if "n_tasks" in df.columns else None,
                )
                for _, r in df.iterrows()
            ]
    return pd.DataFrame(rows, columns=["step", "benchmark", "k", "pass@1", "runs", "n_tasks"])


def _check_given_format(exp: Experiment, ckpt: Path, info: dict) -> None:
    """A checkpoint trained elsewhere whose run folder records another prompt format or token budget than the
    table's evaluation uses: warned about and written into done.json (`generation_differs`); it is evaluated at
    the table's settings, as every other model of the table."""
    for run in (ckpt, ckpt.parent):
        cfg = recorded_config(run) if (run / "config.yaml").is_file() else None
        if cfg is None:
            continue
        trained, used = trained_format(cfg), info["generation"]
        differs = {k: {"recorded": trained[k], "used": used[k]} for k in used if trained[k] != used[k]}
        if differs:
            info["generation_differs"] = differs
            log.warning(
                "%s: the checkpoint %s was trained with %s; it is evaluated at the table's %s",
                run_label(exp),
                ckpt,
                {k: v["recorded"] for k, v in differs.items()},
                {k: v["used"] for k, v in differs.items()},
            )
        return


def _find_metrics(model_dir: Path, ckpt_root: Path) -> Path | None:
    for d in (model_dir, model_dir.parent, ckpt_root):
        if (d / "metrics.jsonl").exists():
            return d / "metrics.jsonl"
    return None


def default_cache_dir(results_dir: Path) -> Path:
    """`reproduce/cache/<profile>` for `reproduce/results/<profile>`; else `<results_dir>/cache`."""
    results_dir = Path(results_dir)
    if results_dir.parent.name == "results":
        return results_dir.parent.parent / "cache" / results_dir.name
    return results_dir / "cache"


def load_run(run_dir: str | Path) -> RunResult:
    """A finished run folder read back (config.json, eval.csv, metrics.jsonl, done.json)."""
    run_dir = Path(run_dir)
    if not (run_dir / "done.json").exists():
        raise FileNotFoundError(f"{run_dir} is not a finished run (no done.json)")
    cfg = json.loads((run_dir / "config.json").read_text())
    fields_ = {f.name for f in dataclasses.fields(Experiment)}
    kwargs = {k: v for k, v in cfg.items() if k in fields_ and k not in ("overrides",)}
    if cfg.get("pruning", "none") != "none" and "backup_on" not in cfg:
        # a run from before the default became the full tree (docs/notation.md)
        kwargs["backup_on"] = "pruned"
    for k in ("benchmarks", "iters"):
        kwargs[k] = tuple(kwargs[k])
    kwargs["overrides"] = tuple(tuple(kv) for kv in cfg.get("overrides", []))
    exp = Experiment(**kwargs)
    metrics = None
    if (run_dir / "metrics.jsonl").exists():
        metrics = pd.read_json(run_dir / "metrics.jsonl", lines=True)
    info = json.loads((run_dir / "done.json").read_text())
    curve = pd.read_csv(run_dir / "curve.csv") if (run_dir / "curve.csv").exists() else None
    return RunResult(
        exp,
        run_dir.name,
        run_dir,
        pd.read_csv(run_dir / "eval.csv"),
        metrics,
        cached=True,
        info=info,
        curve=curve,
    )


def run_all(
    experiments: Iterable[Experiment], results_dir: str | Path, jobs: int = 1, threads: int = 1, **kwargs
) -> list[RunResult]:
    """`run_experiment` for each experiment (cached ones are skipped), in plan order, with a progress bar.

    `jobs > 1` runs that many experiments side by side, each in its own process with `threads` torch threads (one
    process per core: a 2-core machine trains two toy runs at once). The runs are independent — each writes its own
    checkpoint and run folder — and the base models are built once, here, before any run starts.
    """
    experiments = list(experiments)
    check_model_paths(experiments, kwargs.get("model_paths"))  # one checkpoint per run, before anything runs
    todo = [e for e in experiments if not (Path(results_dir) / "runs" / run_key(e) / "done.json").exists()]
    if jobs <= 1 or len(todo) <= 1:
        done = []
        bar = tqdm(experiments, desc="experiments", unit="run")
        for exp in bar:
            bar.set_postfix_str(_label(exp))
            done.append(run_experiment(exp, results_dir, **kwargs))
        return done
    _build_bases(todo, results_dir, kwargs)
    return _run_parallel(experiments, todo, results_dir, jobs, threads, kwargs)


def _label(exp: Experiment) -> str:
    return run_label(exp)


def _build_bases(todo: list[Experiment], results_dir, kwargs: dict) -> None:
    """Each distinct base model once, in this process, so parallel runs never build the same one together."""
    fn = kwargs.get("base_model_fn") or dispatch.default_base_model
    cache_dir = Path(kwargs.get("cache_dir") or default_cache_dir(Path(results_dir)))
    seen = set()
    for exp in todo:
        if exp.model not in seen and exp.model not in (kwargs.get("model_paths") or {}):
            seen.add(exp.model)
            fn(exp, cache_dir)


def _init_worker(threads: int) -> None:
    import torch  # heavy: only the worker processes of a parallel run_all need it here

    torch.set_num_threads(threads)


def _run_parallel(experiments, todo, results_dir, jobs, threads, kwargs) -> list[RunResult]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    results = {
        run_key(e): load_run(Path(results_dir) / "runs" / run_key(e)) for e in experiments if e not in todo
    }
    order = sorted(todo, key=lambda e: get_method(e.method).cost)  # the longest runs start first
    bar = tqdm(
        total=len(experiments), initial=len(results), desc=f"experiments ({jobs} at a time)", unit="run"
    )
    t0 = time.perf_counter()
    with ProcessPoolExecutor(
        jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker, initargs=(threads,)
    ) as pool:
        running = {pool.submit(run_experiment, e, results_dir, **kwargs): e for e in order}
        while running:
            bar.set_postfix_str("running " + ", ".join(_label(e) for e in list(running.values())[:jobs]))
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                exp = running.pop(fut)
                try:
                    results[run_key(exp)] = fut.result()
                except Exception as e:  # the other runs' finished folders stay; a rerun skips them
                    raise RuntimeError(f"experiment {_label(exp)} failed: {type(e).__name__}: {e}") from e
                bar.update(1)
                bar.write(f"  finished {_label(exp)} at {(time.perf_counter() - t0) / 60:.1f} min")
    bar.close()
    return [results[run_key(e)] for e in experiments]


def run_or_collect(
    experiments: Iterable[Experiment], results_dir: str | Path, from_cache_only: bool = False, **kwargs
) -> list[RunResult]:
    """What a reproduce notebook calls: `run_all`, or with `from_cache_only` just `collect` (any code version)."""
    experiments = list(experiments)
    if not from_cache_only:
        return run_all(experiments, results_dir, **kwargs)
    runs = collect(experiments, results_dir, any_code_version=True)
    if len(runs) < len(experiments):
        print(
            f"from cache: {len(runs)} of {len(experiments)} planned runs found under {Path(results_dir) / 'runs'}"
        )
    return runs


def collect(
    experiments: Iterable[Experiment], results_dir: str | Path, any_code_version: bool = False
) -> list[RunResult]:
    """The cached runs of these experiments, without running anything (rebuild tables from cache alone).

    Exact keys first (this code version); with `any_code_version=True` a run of the same config made by another code
    version is used when there is no exact one (the most recently finished). Experiments with no run are left out.
    """
    results_dir = Path(results_dir)
    found, by_config = [], None
    for exp in experiments:
        run_dir = results_dir / "runs" / run_key(exp)
        if (run_dir / "done.json").exists():
            found.append(load_run(run_dir))
            continue
        if not any_code_version:
            continue
        if by_config is None:  # index every finished run by its config without the code version
            by_config = {}
            for d in sorted((results_dir / "runs").glob("*/done.json")):
                run = load_run(d.parent)
                prev = by_config.get(run.experiment)
                if prev is None or run.info.get("finished_at", "") >= prev.info.get("finished_at", ""):
                    by_config[run.experiment] = run
        if exp in by_config:
            found.append(by_config[exp])
    return found


def results_frame(runs: Iterable[RunResult]) -> pd.DataFrame:
    """Long table of evaluation results: config columns + (benchmark, difficulty, k, pass@1, std, n_tasks)."""
    frames = []
    for run in runs:
        e = run.experiment
        cfg = dict(
            profile=e.profile.name,
            model=e.model,
            method=e.method,
            variant=e.variant,
            credit=e.credit,
            gamma=e.gamma,
            pruning=e.pruning,
            backup_on=e.backup_on,
            scaffold=e.scaffold,
            seed=e.seed,
            backend=e.backend,
            run_label=run_label(e),
            trained=run.info.get("trained", "base"),
            model_source=run.info.get("model_source", run.info.get("base_source", "profile base model")),
            run_key=run.key,
            code_version=run.info.get("code_version", ""),
        )
        frames.append(run.results.assign(**cfg))
    if not frames:
        return pd.DataFrame(
            columns=["profile", "model", "method", "variant", "seed", "benchmark", "k", "pass@1"]
        )
    df = pd.concat(frames, ignore_index=True)
    if "difficulty" not in df.columns:
        df["difficulty"] = "all"
    df["difficulty"] = df["difficulty"].fillna("all").astype(str)
    return df


def metrics_frame(runs: Iterable[RunResult]) -> pd.DataFrame:
    """Per-step training metrics of these runs (from each run's metrics.jsonl), with config columns."""
    frames = []
    for run in runs:
        if run.metrics is None or run.metrics.empty:
            continue
        e = run.experiment
        frames.append(
            run.metrics.assign(
                model=e.model,
                method=e.method,
                variant=e.variant,
                pruning=e.pruning,
                backup_on=e.backup_on,
                credit=e.credit,
                gamma=e.gamma,
                seed=e.seed,
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
