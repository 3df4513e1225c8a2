"""One experiment = (profile, model, method, variant, seed) -> train (or skip) -> evaluate, cached by its config.

This is the single place that maps a row of a paper table to library calls. `reproduce/*.ipynb` only plan
experiments, call `run_all`, and hand the results to `murphy_lab.tables`.

Layout on disk (paths relative to the notebook's working directory, `reproduce/` under `make demo`):

    results/<profile>/runs/<run_key>/     small and committed-friendly: config.json, eval.csv, metrics.jsonl, done.json
    results/<profile>/*.csv|md|tex|png    the tables and figures (`murphy_lab.tables`)
    cache/<profile>/checkpoints/<train_key>/   trained models (large; git-ignored)
    cache/<profile>/base/                 the base policy (the toy world builds its own)

`run_key` hashes the whole resolved config (model, method, variant, training data, benchmarks, scaffold, Iter-k,
evaluation runs, seed) plus the code version (`murphy_lab.__version__` and the git commit when there is one);
`train_key` hashes only what training depends on, so other scaffolds (cross_scaffold) reuse the same checkpoint.
A run whose `done.json` exists is never recomputed; `collect` rebuilds every table from those files alone.

Train, evaluate and base-model construction are injectable callables (`train_fn`, `evaluate_fn`, `base_model_fn`),
so tests and notebooks can swap in fast stand-ins; a stand-in run is labelled `backend="stand-in"` in its config
(hence a different key) and every table built from it says so.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

import murphy_lab

# Methods we can train/evaluate today, and the main-table columns without a runnable method yet (shown as "–").
# µCode and ReVeal train with their own pipelines (murphy_lab.baselines.mucode / .reveal, `experiment_train`) and
# are evaluated like every other column: plain Iter-k pass@1 under the experiment's scaffold.
TRAINABLE = ("grpo", "grpo_mt", "mucode", "reveal", "murphy")
METHODS = ("base",) + TRAINABLE
UNAVAILABLE: dict[str, str] = {}  # method -> why it cannot run (none at the moment)
# Trainer mode per method (murphy_lab.config: murphy | grpo_mt | grpo).
MODE = {"grpo": "grpo", "grpo_mt": "grpo_mt", "murphy": "murphy"}
PAPER_MODEL_IDS = {  # Hugging Face ids for the paper profile; override with `model_paths=` where they differ
    "Qwen3-1.7B": "Qwen/Qwen3-1.7B",
    "Qwen3-4B": "Qwen/Qwen3-4B",
    "OLMo-2-7B": "allenai/OLMo-2-1124-7B-Instruct",
}
EVAL_COLUMNS = ("difficulty", "k", "pass@1", "std", "n_tasks")  # what `murphy_lab.evaluate.evaluate` returns


@dataclass(frozen=True)
class Profile:
    """Defaults of one run profile (docs/reproduce.md, "Profiles"). Every field can be overridden from a notebook's parameters."""

    name: str
    models: tuple[str, ...]
    """Model keys the tables are built for (paper names for `paper`, our own built models otherwise)."""
    benchmarks: tuple[str, ...]
    """Evaluation benchmarks; "LCB-v6" results carry Easy/Medium/Hard in their `difficulty` column."""
    seeds: tuple[int, ...]
    """Training seeds; tables show mean ± std over them (with one seed: ± over evaluation runs)."""
    iters: tuple[int, ...] = (1, 3, 5)
    """k of Iter-k: attempts allowed by the refinement scaffold (the paper reports 1, 3, 5)."""
    runs: int = 3
    """Sampling repeats per evaluation (the paper: mean ± std over 3 runs)."""
    train_data: str = "toy"
    """Training set: "toy" (the synthetic world) or "kodcode-1k" (the paper: 1,000 KodCode tasks)."""
    n_eval_tasks: int | None = None
    """Evaluation tasks per benchmark; None = the whole benchmark."""
    needs_gpu: bool = False
    """The paper profile refuses to start without CUDA rather than fail hours in."""
    max_new_tokens: int = 48
    """Generation length per turn (tokens), in training (every method) and evaluation alike (`prompt_format`); the
    toy programs are one short line of at most 48 characters (murphy_lab.toy.profile)."""
    scaffolds: tuple[str, ...] = ("reflexion", "lats", "dot")
    """Scaffolds of the cross-scaffold table (the paper: Reflexion-style, LATS, DoT)."""
    train_overrides: tuple[tuple[str, object], ...] = ()
    """Trainer-config fields this profile's tables set on top of the trainer's presets (e.g. the demo's step budget)."""
    methods: tuple[str, ...] = METHODS
    """The main table's default methods (the notebook's `methods = None`)."""
    not_run: tuple[tuple[str, str], ...] = ()
    """(method, why) for main-table methods this profile leaves out by default; the table's "–" note says why."""
    method_benchmarks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(method, benchmarks) where the paper reports a method on some benchmarks only (ReVeal: LiveCodeBench-v6)."""


PROFILES = {
    "smoke": Profile(
        "smoke",
        models=("tiny",),
        benchmarks=("toy",),
        seeds=(0,),
        iters=(1, 2),
        runs=1,
        n_eval_tasks=4,
        max_new_tokens=8,  # = the trainer's smoke preset (murphy_lab.config)
    ),
    # make demo on a 2-core laptop in ~20 minutes: the toy policy's SFT, then 3 methods × 3 seeds × 40 RL steps
    "toy": Profile(
        "toy",
        models=("toy",),
        benchmarks=("toy",),
        seeds=(0, 1, 2),
        iters=(1, 3, 5),
        runs=1,
        n_eval_tasks=200,
        train_overrides=(("max_steps", 40),),
        methods=("base", "grpo", "grpo_mt", "murphy"),
        not_run=(
            (
                "mucode",
                'not run in the toy demo (pass -p methods \'["base", "grpo", "grpo_mt", "mucode", '
                '"murphy"]\' to include it; it adds minutes of training per seed on 2 cores, docs/mucode.md)',
            ),
            (
                "reveal",
                "not run in the toy demo: the toy policy was never taught ReVeal's generation/verification "
                "tag format, so all its rewards are zero (docs/reveal.md)",
            ),
        ),
    ),
    "paper": Profile(
        "paper",
        models=("OLMo-2-7B", "Qwen3-1.7B", "Qwen3-4B"),
        benchmarks=("HumanEval", "MBPP", "LCB-v6"),
        seeds=(0, 1, 2),
        runs=3,
        train_data="kodcode-1k",
        needs_gpu=True,
        max_new_tokens=1024,  # per turn, as the training recipes (reproduce/configs/*/*.yaml)
        method_benchmarks=(("reveal", ("LCB-v6",)),),  # the paper reports ReVeal on LiveCodeBench-v6 only
    ),
}


def not_run_note(profile_name: str | None, method: str) -> str | None:
    """Why `profile_name` leaves `method` out of its default main table (None when it does not say)."""
    if profile_name not in PROFILES:
        return None
    return dict(PROFILES[profile_name].not_run).get(method)


def profile(name: str) -> Profile:
    """The `Profile` called `name` (smoke | toy | paper)."""
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name]


@dataclass(frozen=True)
class Experiment:
    """One cell-producing unit of work: a model trained with one method and seed, evaluated on some benchmarks."""

    profile: str
    model: str
    method: str
    seed: int = 0
    credit: str = "mars"
    """MURPHY's retrospective credit: "mars" (max, Eq. 3) or "mers" (discounted mean)."""
    gamma: float = 1.0
    """MeRS discount γ (ignored by MaRS)."""
    pruning: str = "none"
    """"none", "intrap" (keep b_traj per group) or "interp" (keep b_grp groups per turn)."""
    backup_on: str = "full"
    """Credit backup over the "full" tree (default) or the "pruned" one (docs/notation.md, "Backup order");
    only with pruning (without it the two are the same)."""
    benchmarks: tuple[str, ...] = ("toy",)
    scaffold: str = "reflexion"
    iters: tuple[int, ...] = (1, 3, 5)
    runs: int = 3
    train_data: str = "toy"
    n_eval_tasks: int | None = None
    backend: str = "real"
    """"real", or "stand-in" when fast fake train/evaluate functions produced the numbers (tests, previews)."""
    overrides: tuple[tuple[str, object], ...] = ()
    """Extra trainer-config fields, e.g. (("max_steps", 2),); part of both keys."""

    def __post_init__(self) -> None:
        profile(self.profile)
        if self.method in UNAVAILABLE:
            raise NotImplementedError(UNAVAILABLE[self.method])
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.credit not in ("mars", "mers"):
            raise ValueError(f"credit must be 'mars' or 'mers', got {self.credit!r}")
        if self.pruning not in ("none", "intrap", "interp"):
            raise ValueError(f"pruning must be 'none', 'intrap' or 'interp', got {self.pruning!r}")
        if self.backup_on not in ("full", "pruned"):
            raise ValueError(f"backup_on must be 'full' or 'pruned', got {self.backup_on!r}")
        if self.backup_on == "pruned" and self.pruning == "none":
            raise ValueError("backup_on='pruned' needs pruning='intrap' or 'interp' (without pruning both orders agree)")
        if not self.benchmarks:
            raise ValueError("benchmarks must name at least one benchmark")

    @property
    def variant(self) -> str:
        """The ablation label: "mars", "mers_0.9", ... plus "+intrap"/"+interp" when pruned (MURPHY only)."""
        if self.method != "murphy":
            return "-"
        label = (
            "mars"
            if self.credit == "mars"
            else "mers_" + (f"{self.gamma:g}" if self.gamma % 1 else f"{self.gamma:.1f}")
        )
        return label if self.pruning == "none" else f"{label}+{pruning_label(self.pruning, self.backup_on)}"

    def train_config(self) -> dict:
        """What training depends on (None-free, JSON-able); hashed into `train_key`."""
        cfg = dict(profile=self.profile, model=self.model, method=self.method, seed=self.seed,
                   train_data=self.train_data, backend=self.backend, overrides=[list(kv) for kv in self.overrides])  # fmt: skip
        if self.method == "murphy":
            cfg.update(credit=self.credit, gamma=float(self.gamma), pruning=self.pruning)
            if self.pruning != "none":
                cfg.update(backup_on=self.backup_on)
        return cfg

    def resolved(self) -> dict:
        """The whole config (training + evaluation), as saved to `config.json` beside every result."""
        cfg = self.train_config()
        cfg.update(benchmarks=list(self.benchmarks), scaffold=self.scaffold, iters=list(self.iters), runs=self.runs,
                   n_eval_tasks=self.n_eval_tasks, variant=self.variant)  # fmt: skip
        return cfg


def pruning_label(pruning: str, backup_on: str = "full") -> str:
    """"interp", or "interp+backup_pruned" when the credit backup sees only the pruned tree."""
    return pruning if backup_on == "full" or pruning == "none" else f"{pruning}+backup_pruned"


def pruning_variants(prunings: Sequence[str] = ("none", "intrap", "interp"),
                     backups: Sequence[str] = ("full", "pruned")) -> list[dict]:
    """The pruning ablation's variants: every pruning rule with every backup order (one row without pruning)."""
    return [{"pruning": p} if p == "none" else {"pruning": p, "backup_on": b}
            for p in prunings for b in (backups[:1] if p == "none" else backups)]  # fmt: skip


def code_version() -> str:
    """`murphy_lab.__version__`, plus `+g<commit>` when the package lives in a git checkout.

    The environment variable MURPHY_LAB_CODE_VERSION, when set, replaces it (pin it to reuse runs across commits,
    or to keep one test session's notebooks on the same keys).
    """
    return os.environ.get("MURPHY_LAB_CODE_VERSION") or _git_version()


@functools.lru_cache(maxsize=1)
def _git_version() -> str:
    version = murphy_lab.__version__
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(murphy_lab.__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            version += "+g" + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return version


def _hash(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def train_key(exp: Experiment, version: str | None = None) -> str | None:
    """Hash of what the checkpoint depends on; None for the base model (nothing is trained)."""
    if exp.method == "base":
        return None
    return _hash(dict(exp.train_config(), code_version=version or code_version()))


def run_key(exp: Experiment, version: str | None = None) -> str:
    """Hash of the whole resolved config and the code version: the name of the run's folder."""
    return _hash(dict(exp.resolved(), code_version=version or code_version()))


def plan(
    profile_name: str,
    methods: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    benchmarks: Sequence[str] | None = None,
    variants: Sequence[dict] = ({},),
    **fields,
) -> list[Experiment]:
    """Experiments for every (model, method, variant, seed), with the profile's defaults for what is not given.

    `variants` are dicts of Experiment fields (e.g. `{"credit": "mers", "gamma": 0.9}`), applied to MURPHY only;
    methods listed in `UNAVAILABLE` are skipped here (their table column shows "–" with a note). `methods=None`:
    the profile's `methods`. A method the profile reports on some benchmarks only (`method_benchmarks`: ReVeal on
    LiveCodeBench-v6 in the paper profile) is evaluated on those of the planned benchmarks.
    """
    prof = profile(profile_name)
    methods = prof.methods if methods is None else methods
    only = dict(prof.method_benchmarks)
    defaults = dict(benchmarks=tuple(benchmarks or prof.benchmarks), iters=prof.iters, runs=prof.runs,
                    train_data=prof.train_data, n_eval_tasks=prof.n_eval_tasks,
                    overrides=prof.train_overrides)  # fmt: skip
    defaults.update(fields)
    out = []
    for model in models or prof.models:
        for method in methods:
            if method in UNAVAILABLE:
                continue
            kw = dict(defaults)
            if method in only and set(only[method]) & set(kw["benchmarks"]):
                kw["benchmarks"] = tuple(b for b in kw["benchmarks"] if b in only[method])
            for variant in variants if method == "murphy" else ({},):
                for seed in seeds if seeds is not None else prof.seeds:
                    out.append(Experiment(profile_name, model, method, seed=seed, **{**kw, **variant}))
    return list(dict.fromkeys(out))  # drop duplicates, keep order


def require_resources(profile_name: str) -> None:
    """Fail early, with the reason, when the machine cannot run this profile (the paper profile needs CUDA)."""
    if not profile(profile_name).needs_gpu:
        return
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"profile={profile_name!r} trains 1.7B–7B models and needs CUDA GPUs (the paper used 8×H100: 2 for vLLM "
            "rollouts, 6 for training; see docs/reproduce.md). This machine has none. Use profile='toy' on a CPU, "
            "or pass train=False with checkpoints trained elsewhere (evaluation still needs a GPU)."
        )


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
    checkpoint is an error naming where it was looked for. `model_paths` maps a model key (or "<model>/<method>") to an
    existing base model or checkpoint, which then replaces building/training it.
    """
    stand_in = any(fn in _STAND_IN_FNS for fn in (train_fn, evaluate_fn, base_model_fn))
    if stand_in != (exp.backend == "stand-in"):
        raise ValueError(f"stand-in functions need backend='stand-in' and real ones backend='real' ({exp})")
    results_dir, key = Path(results_dir), run_key(exp)
    run_dir = results_dir / "runs" / key
    if (run_dir / "done.json").exists() and not force:
        return load_run(run_dir)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(results_dir)
    train_fn, evaluate_fn = train_fn or default_train, evaluate_fn or default_evaluate
    base_model_fn = base_model_fn or default_base_model
    model_paths = model_paths or {}
    info: dict = dict(code_version=code_version(), run_key=key, train_key=train_key(exp))

    t0 = time.perf_counter()
    base = model_paths.get(exp.model) or base_model_fn(exp, cache_dir)
    model_dir, metrics_path = str(base), None
    if exp.method != "base":
        given = model_paths.get(f"{exp.model}/{exp.method}")
        ckpt = Path(given) if given else cache_dir / "checkpoints" / info["train_key"]
        if given:
            info["trained"] = "given"
        elif (ckpt / "DONE").exists():
            info["trained"] = "reused"
            done = Path((ckpt / "DONE").read_text().strip())  # the model folder the trainer returned
            ckpt = (
                ckpt / done if (ckpt / done).exists() else done
            )  # relative to the checkpoint, or as written
        elif not train:
            raise FileNotFoundError(
                f"train=False but no checkpoint for {exp.model}/{exp.method} (seed {exp.seed}, variant {exp.variant}) "
                f"at {ckpt}; run with train=True or pass model_paths={{'{exp.model}/{exp.method}': '<dir>'}}"
            )
        else:
            if ckpt.exists():  # an interrupted run: start clean
                shutil.rmtree(ckpt)
            ckpt.mkdir(parents=True)
            t1 = time.perf_counter()
            ckpt = Path(train_fn(exp, str(base), ckpt))
            info.update(trained="now", train_s=round(time.perf_counter() - t1, 2))
            root = cache_dir / "checkpoints" / info["train_key"]
            # relative to the checkpoint folder when inside it, so the cache can move (an absolute path stays one)
            inside = ckpt.resolve().is_relative_to(root.resolve())
            (root / "DONE").write_text(
                str(ckpt.resolve().relative_to(root.resolve())) if inside else str(ckpt.resolve())
            )
        model_dir = str(ckpt)
        metrics_path = _find_metrics(Path(model_dir), cache_dir / "checkpoints" / info["train_key"])

    t2 = time.perf_counter()
    frames = []
    tmp = run_dir.with_name(key + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    wants_transcripts = "transcripts_path" in inspect.signature(evaluate_fn).parameters
    for bench in exp.benchmarks:
        kw = (
            dict(transcripts_path=str(tmp / f"transcripts_{_slug(bench)}.jsonl")) if wants_transcripts else {}
        )
        df = pd.DataFrame(evaluate_fn(exp, model_dir, bench, **kw))
        missing = [c for c in ("k", "pass@1") if c not in df.columns]
        if missing:
            raise ValueError(f"evaluate_fn returned no column(s) {missing} for benchmark {bench!r}")
        frames.append(df.assign(benchmark=bench))
    info.update(eval_s=round(time.perf_counter() - t2, 2), total_s=round(time.perf_counter() - t0, 2),
                model_dir=model_dir, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))  # fmt: skip

    (tmp / "config.json").write_text(
        json.dumps(dict(exp.resolved(), code_version=info["code_version"]), indent=1)
    )
    pd.concat(frames, ignore_index=True).to_csv(tmp / "eval.csv", index=False)
    if metrics_path is not None:
        shutil.copy(metrics_path, tmp / "metrics.jsonl")
    (tmp / "done.json").write_text(json.dumps(info, indent=1))
    shutil.rmtree(run_dir, ignore_errors=True)
    tmp.rename(run_dir)  # a run folder either is complete or does not exist
    result = load_run(run_dir)
    result.cached = False
    return result


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())


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
        kwargs["backup_on"] = "pruned"  # a run from before the default became the full tree (docs/notation.md)
    for k in ("benchmarks", "iters"):
        kwargs[k] = tuple(kwargs[k])
    kwargs["overrides"] = tuple(tuple(kv) for kv in cfg.get("overrides", []))
    exp = Experiment(**kwargs)
    metrics = None
    if (run_dir / "metrics.jsonl").exists():
        metrics = pd.read_json(run_dir / "metrics.jsonl", lines=True)
    info = json.loads((run_dir / "done.json").read_text())
    return RunResult(
        exp, run_dir.name, run_dir, pd.read_csv(run_dir / "eval.csv"), metrics, cached=True, info=info
    )


def run_all(experiments: Iterable[Experiment], results_dir: str | Path, **kwargs) -> list[RunResult]:
    """`run_experiment` for each experiment (cached ones are skipped), with a progress bar."""
    from tqdm.auto import tqdm

    experiments = list(experiments)
    done = []
    bar = tqdm(experiments, desc="experiments", unit="run")
    for exp in bar:
        bar.set_postfix_str(f"{exp.model}/{exp.method}/{exp.variant}/seed{exp.seed}")
        done.append(run_experiment(exp, results_dir, **kwargs))
    return done


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
        cfg = dict(profile=e.profile, model=e.model, method=e.method, variant=e.variant, credit=e.credit,
                   gamma=e.gamma, pruning=e.pruning, backup_on=e.backup_on, scaffold=e.scaffold, seed=e.seed,
                   backend=e.backend,
                   run_key=run.key, code_version=run.info.get("code_version", ""))  # fmt: skip
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
        frames.append(run.metrics.assign(model=e.model, method=e.method, variant=e.variant, pruning=e.pruning,
                                         backup_on=e.backup_on, credit=e.credit, gamma=e.gamma, seed=e.seed))  # fmt: skip
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


# --- the real pieces (teammates' modules, imported lazily so this module stands on nothing heavy) -----------------


def default_base_model(exp: Experiment, cache_dir: Path) -> str:
    """The base policy: a paper model's hub id, the smoke profile's tiny random model, or the toy world's policy."""
    if exp.profile == "paper":
        if exp.model not in PAPER_MODEL_IDS:
            raise ValueError(
                f"unknown paper model {exp.model!r}; known: {sorted(PAPER_MODEL_IDS)} (or pass model_paths)"
            )
        return PAPER_MODEL_IDS[exp.model]
    if exp.profile == "smoke":
        from murphy_lab.smoke import build_smoke

        return str(build_smoke(Path(cache_dir) / "base")[0])
    from murphy_lab.toy import build_toy_policy

    # the toy world's own cache (~/.cache/murphy_lab/toy or $MURPHY_LAB_CACHE): shared with notebooks/, built once
    return str(build_toy_policy(size="toy", seed=0))


def train_config(exp: Experiment, base_model: str):
    """The trainer's `MurphyConfig` for this experiment: the profile's presets, overrides, then method and variant.

    Pruning budgets follow the paper's ratio (G = 8 -> b_traj = b_grp = 4, i.e. half): b = max(2, G // 2).
    """
    from murphy_lab.config import MurphyConfig

    kw: dict = dict(model=base_model, seed=exp.seed, mode=MODE[exp.method])
    kw = {"max_completion_length": profile(exp.profile).max_new_tokens, **dict(exp.overrides), **kw}
    if exp.method == "grpo":
        kw.update(turns=1)  # single-turn GRPO: one group of G1 per task
    if exp.method == "grpo_mt":
        kw.update(g2=1)  # GRPO-MT: G1 independent chains, one refinement per failure
    if exp.method == "murphy":
        kw.update(credit=exp.credit, gamma=float(exp.gamma), backup_on=exp.backup_on)
    if exp.profile == "paper":  # the trainer's recipe for this model and method (the paper's values, docs/training.md)
        cfg = MurphyConfig.from_yaml(paper_recipe(exp), **kw)
        check_prompt_format(exp, trained_format(cfg))  # before validate(): the format error is the one to fix
        return cfg.validate()
    cfg = MurphyConfig.for_profile(exp.profile, **kw)
    check_prompt_format(exp, trained_format(cfg))
    if exp.pruning == "intrap":
        cfg.b_traj = max(2, min(cfg.g1, cfg.g2) // 2)  # b_traj, IntraP (paper: 4 of 8)
    elif exp.pruning == "interp":
        cfg.b_grp = max(1, cfg.g1 // 2)  # b_grp, InterP (paper: 4 of 8 turn-2 groups)
    return cfg.validate()


def default_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """Train `base_model` with the experiment's method; returns the trained model's folder.

    smoke / toy: in this process, `murphy_lab.train.train`. paper: the trainer's recipe
    `reproduce/configs/<model>/<method>.yaml` with the experiment's seed, launched by
    `reproduce/configs/launch/train_8xh100.sh` (8 GPUs: 2 vLLM + 6 training) or `colocate_1gpu.sh` (fewer GPUs).
    """
    if exp.method == "mucode":  # its own pipeline: expert iteration with a learned verifier
        from murphy_lab.baselines.mucode.pipeline import experiment_train

        exp = mucode_experiment(exp)
        mucode_config(exp, base_model)  # refuses a training prompt format that evaluation does not use
        return Path(experiment_train(exp, base_model, output_dir))
    if exp.method == "reveal":  # its own trainer: generation/verification rounds, TAPO advantages
        from murphy_lab.baselines.reveal.trainer import experiment_train as reveal_train

        return Path(reveal_train(exp, base_model, output_dir))
    if exp.profile == "paper":
        train_config(exp, base_model)  # refuses, before any launch, a recipe trained in another prompt format
        return paper_train(exp, base_model, output_dir)
    from murphy_lab.config import PROFILE_BUILDERS
    from murphy_lab.toy.execution import get_executor
    from murphy_lab.train import train

    cfg, kw = train_config(exp, base_model), {}
    kw["executor"] = get_executor(workers=1)  # the executor whose feedback the toy policy was trained on
    if exp.profile == "toy" and "toy" not in PROFILE_BUILDERS:  # the toy world registers its tasks on import
        from murphy_lab.toy import make_tasks

        kw["tasks"] = make_tasks("train", n=512, seed=exp.seed)
    return Path(train(cfg, output_dir, **kw))


REPO = Path(__file__).resolve().parents[1]
RECIPE_DIRS = {"Qwen3-1.7B": "qwen3-1.7b", "Qwen3-4B": "qwen3-4b", "OLMo-2-7B": "olmo2-7b"}


def paper_recipe(exp: Experiment) -> Path:
    """The trainer's YAML for a paper experiment: reproduce/configs/<model>/<grpo|grpo_mt|murphy_...>.yaml."""
    if exp.model not in RECIPE_DIRS:
        raise ValueError(f"no recipe folder for model {exp.model!r}; known: {sorted(RECIPE_DIRS)}")
    if exp.method != "murphy":
        name = exp.method
    elif exp.pruning != "none":
        if exp.credit != "mars":
            raise ValueError(
                f"no recipe for pruning={exp.pruning!r} with credit={exp.credit!r} (the paper prunes MaRS)"
            )
        name = f"murphy_{exp.pruning}"
    else:
        name = "murphy_mars" if exp.credit == "mars" else f"murphy_mers_g{float(exp.gamma):.1f}"
    path = REPO / "reproduce" / "configs" / RECIPE_DIRS[exp.model] / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no training recipe {path} for {exp.model}/{exp.method}/{exp.variant}")
    return path


def paper_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """Launch the paper recipe (seed and base model from the experiment) on this machine's GPUs; wait for it."""
    import torch
    import yaml

    output_dir = Path(output_dir)
    recipe = yaml.safe_load(paper_recipe(exp).read_text())
    recipe.update(seed=exp.seed, model=base_model, **dict(exp.overrides))
    if exp.method == "murphy":
        recipe.update(backup_on=exp.backup_on)  # the pruning ablation runs both orders from one recipe
    cfg_path = output_dir.parent / f"{output_dir.name}.recipe.yaml"  # outside OUT: the trainer wants it empty
    cfg_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    script = "train_8xh100.sh" if torch.cuda.device_count() >= 8 else "colocate_1gpu.sh"
    launcher = REPO / "reproduce" / "configs" / "launch" / script
    subprocess.run(["bash", str(launcher), str(cfg_path), str(output_dir)], check=True)
    return output_dir / "final"


def default_evaluate(
    exp: Experiment, model_dir: str, benchmark: str, transcripts_path: str | None = None
) -> pd.DataFrame:
    """Iter-k pass@1 of `model_dir` on `benchmark` with the experiment's scaffold, via `murphy_lab.evaluate`."""
    from murphy_lab.evaluate import evaluate

    tasks = load_benchmark(benchmark, exp)
    policy = make_policy(model_dir, exp)
    if benchmark in ("toy", "smoke"):
        from murphy_lab.toy.execution import get_executor

        executor = get_executor(workers=1)  # the executor the toy policy's SFT feedback came from
    else:
        from murphy_lab.executor import Executor

        executor = Executor()
    scaffold_kw = {}  # every scaffold reads answers with prompts.extract_program, as training does
    if exp.method == "reveal" or exp.scaffold == "reveal":
        import murphy_lab.baselines.reveal  # noqa: F401  (registers the "reveal" scaffold)
    if (
        exp.method == "reveal" and exp.scaffold != "reveal"
    ):  # its program sits in <generation-answer> when tagged
        scaffold_kw["extract"] = reveal_program(scaffold_kw.get("extract"))
    if exp.scaffold == "reveal":
        scaffold_kw = {}  # ReVeal's own loop reads its rounds itself
    return evaluate(policy, tasks, executor, iters=tuple(exp.iters), runs=exp.runs, scaffold=exp.scaffold,
                    seed=exp.seed, transcripts_path=transcripts_path, progress=False, scaffold_kw=scaffold_kw)  # fmt: skip


def reveal_program(fallback: Callable[[str], str] | None = None) -> Callable[[str], str]:
    """Program extraction for a ReVeal-trained model in a shared scaffold: its <generation-answer> when it wrote
    one (`reveal_extract`), else the usual extraction (`fallback`, default `prompts.extract_program`)."""
    from murphy_lab.baselines.reveal.format import reveal_extract
    from murphy_lab.prompts import extract_program

    fallback = fallback or extract_program

    def extract(completion: str) -> str:
        return (
            reveal_extract(completion) if "<generation-answer" in completion.lower() else fallback(completion)
        )

    return extract


def load_benchmark(benchmark: str, exp: Experiment) -> list:
    """Evaluation tasks: the toy world's test split (disjoint from training), or a benchmark via `murphy_lab.tasks`."""
    n = exp.n_eval_tasks
    if benchmark == "toy":
        from murphy_lab.toy import make_tasks

        return make_tasks("test", n=n or 200, seed=1234)
    from murphy_lab.tasks import load_tasks

    name = {"HumanEval": "humaneval", "MBPP": "mbpp", "LCB-v6": "livecodebench"}.get(benchmark, benchmark)
    tasks = list(load_tasks(name))
    return tasks[:n] if n else tasks


# --- one prompt format per experiment, in training and evaluation (docs/evaluation.md, "Prompt format") ---------
FORMAT_OPTIONS = ("chat", "chat_template_kwargs", "max_new_tokens")


def prompt_format(exp: Experiment) -> dict:
    """How every method of this experiment renders prompts and how long it generates, in training AND evaluation:
    the paper profile's chat models through their chat template (Qwen3 without its thinking section, as the
    training recipes), the toy/smoke policies on plain text; `max_new_tokens` per turn from the profile."""
    chat = exp.profile == "paper"
    kwargs = {"enable_thinking": False} if chat and str(getattr(exp, "model", "")).startswith("Qwen3") else {}
    return {"chat": chat, "chat_template_kwargs": kwargs, "max_new_tokens": profile(exp.profile).max_new_tokens}


def trained_format(cfg) -> dict:
    """The prompt format a training config uses (a MurphyConfig, or a µCode MuCodeConfig), as `prompt_format`."""
    length = getattr(cfg, "max_completion_length", None) or cfg.max_new_tokens
    return {"chat": bool(cfg.chat), "chat_template_kwargs": dict(cfg.chat_template_kwargs or {}),
            "max_new_tokens": length}  # fmt: skip


def check_prompt_format(exp: Experiment, trained: dict) -> None:
    """Refuse (before any model loads) a training config whose prompt format differs from the evaluation's."""
    want = prompt_format(exp)
    for option in FORMAT_OPTIONS:
        if trained[option] != want[option]:
            raise ValueError(
                f"{exp.model}/{exp.method}: training option {option}={trained[option]!r} differs from the "
                f"evaluation's {want[option]!r}: every method is trained in the prompt format it is evaluated in "
                "(docs/evaluation.md, 'Prompt format'); change the recipe or the override"
            )


def mucode_format(exp: Experiment) -> dict:
    """µCode's config fields for the experiment's prompt format (MuCodeConfig names them as `prompt_format` does)."""
    return prompt_format(exp)


def mucode_experiment(exp: Experiment) -> Experiment:
    """The experiment with only µCode's own fields as overrides: the profile's trainer overrides (e.g. the toy
    demo's max_steps) mean nothing to µCode (removed fields stay, so MuCodeConfig refuses them with the reason)."""
    from murphy_lab.baselines.mucode.config import REMOVED, MuCodeConfig

    names = {f.name for f in dataclasses.fields(MuCodeConfig)} | set(REMOVED)
    return dataclasses.replace(exp, overrides=tuple(kv for kv in exp.overrides if kv[0] in names))


def mucode_config(exp: Experiment, base_model: str):
    """The MuCodeConfig µCode trains with in this experiment, checked against the evaluation's prompt format."""
    from murphy_lab.baselines.mucode.pipeline import experiment_config

    cfg = experiment_config(mucode_experiment(exp), base_model)
    check_prompt_format(exp, trained_format(cfg))
    return cfg


def policy_kwargs(exp: Experiment) -> dict:
    """The evaluation policy's rendering and length: `prompt_format(exp)` as policy keywords."""
    fmt = prompt_format(exp)
    return {"max_new_tokens": fmt["max_new_tokens"], "use_chat_template": fmt["chat"],
            "chat_template_kwargs": fmt["chat_template_kwargs"] or None}  # fmt: skip


def make_policy(model_dir: str, exp: Experiment):
    """vLLM for the paper profile (GPU), transformers otherwise; rendering and length from `prompt_format`."""
    if exp.profile == "paper":
        from murphy_lab.policy import VLLMPolicy

        return VLLMPolicy(model_dir, **policy_kwargs(exp))
    from murphy_lab.policy import TransformersPolicy

    return TransformersPolicy(model_dir, **policy_kwargs(exp))


def missing_pieces(profile_name: str) -> list[str]:
    """Modules the real (non-stand-in) pipeline of this profile needs that cannot be imported here."""
    import importlib

    need = ["murphy_lab.config", "murphy_lab.train", "murphy_lab.evaluate", "murphy_lab.policy"]
    need += ["murphy_lab.toy"] if profile_name != "paper" else ["murphy_lab.tasks", "murphy_lab.executor"]
    missing = []
    for mod in need:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            missing.append(f"{mod} ({e})")
    if profile_name == "toy" and not missing:
        import murphy_lab.toy as toy

        if not hasattr(toy, "build_toy_policy"):
            missing.append("murphy_lab.toy.build_toy_policy")
    return missing


def backend_functions(backend: str, profile_name: str) -> tuple[str, dict]:
    """("real" | "stand-in", the matching train/evaluate/base-model functions) for a notebook's `backend` parameter.

    "auto" picks "real" when every piece imports and "stand-in" otherwise (with a printed warning naming the missing
    pieces); "real" raises ImportError naming them.
    """
    if backend not in ("real", "stand-in", "auto"):
        raise ValueError(f"backend must be 'real', 'stand-in' or 'auto', got {backend!r}")
    if backend == "stand-in":
        return "stand-in", dict(STAND_INS)
    missing = missing_pieces(profile_name)
    if missing and backend == "real":
        raise ImportError(f"the real pipeline for profile={profile_name!r} needs: {'; '.join(missing)}")
    if missing:
        print(f"STAND-IN backend (numbers are NOT measurements): missing {'; '.join(missing)}")
        return "stand-in", dict(STAND_INS)
    return "real", {}


# --- stand-ins: fast fakes with the same signatures (tests; a preview of a notebook before the real pieces land) ----


def stand_in_base_model(exp: Experiment, cache_dir: Path) -> str:
    """STAND-IN: no model; a name."""
    return f"stand-in-base/{exp.model}"


def stand_in_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """STAND-IN trainer: writes a marker and a fake metrics.jsonl (2 steps); trains nothing."""
    output_dir = Path(output_dir)
    kept = {"none": 72, "intrap": 36, "interp": 40}[exp.pruning] if exp.method == "murphy" else 8
    opt = 0.25 * kept / 72
    with open(output_dir / "metrics.jsonl", "w") as f:
        for step in (1, 2):
            row = {
                "step": step,
                "generated": True,
                "trees": 2,
                "trajectories/kept": 2 * kept,
                "trajectories/total": 2 * 72,
                "time/optimization_s": opt,
                "time/step_s": opt + 0.5,
                "stand_in": True,
            }
            f.write(json.dumps(row) + "\n")
    (output_dir / "STAND_IN").write_text("not a trained model\n")
    return output_dir


def stand_in_evaluate(exp: Experiment, model_dir: str, benchmark: str) -> pd.DataFrame:
    """STAND-IN evaluation: deterministic made-up pass@1 that grows with k; NOT a measurement."""
    bump = dict(base=0.0, grpo=3.0, grpo_mt=5.0, murphy=7.0, mucode=4.0, reveal=4.5)[exp.method]
    diffs = ("all", "easy", "medium", "hard")
    rows = []
    for i, d in enumerate(diffs):
        for k in exp.iters:
            mean = 30.0 + bump + 4.0 * k - 6.0 * i + (exp.seed % 3) - (exp.gamma < 1)
            rows.append({"difficulty": d, "k": k, "pass@1": mean, "std": 0.5, "n_tasks": 10})
    return pd.DataFrame(rows)


STAND_INS = dict(train_fn=stand_in_train, evaluate_fn=stand_in_evaluate, base_model_fn=stand_in_base_model)
_STAND_IN_FNS = set(STAND_INS.values())
