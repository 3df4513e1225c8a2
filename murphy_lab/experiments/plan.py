"""What to run: `Experiment` (one table cell's unit of work), its keys, and `plan` (the experiments of a table).

`run_key` hashes the whole resolved config (model, method, variant, training data, benchmarks, scaffold, Iter-k,
evaluation runs, seed) plus the code version (`murphy_lab.__version__` and the git commit when there is one);
`train_key` hashes only what training depends on, so other scaffolds (cross_scaffold) reuse the same checkpoint.

An experiment is checked whole when it is made, before anything trains: its method, credit rule, pruning, training
set, and each benchmark with its loader arguments (a task source of `murphy_lab.tasks.registry`; a typo, an
argument the loader does not take, a file-backed loader without its path are one-line errors naming the field).
It carries its resolved `Profile` (`exp.profile`; given a name or a `Profile`), which the layers below read.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import murphy_lab
from murphy_lab.credit import CREDIT_RULES, credit_rule
from murphy_lab.experiments.contamination import ContaminationReport, refuse_overlap
from murphy_lab.methods import METHODS, SAMPLE_REFERENCE, default_methods, get_method
from murphy_lab.methods.recipes import recipe_path
from murphy_lab.profiles import TRAIN_DATA, Profile, check_benchmark, get_profile
from murphy_lab.suggest import did_you_mean

# MURPHY's pruning rules: none, IntraP (b_traj per group), InterP (b_grp)
PRUNINGS = ("none", "intrap", "interp")


@dataclass(frozen=True)
class Experiment:
    """One cell-producing unit of work: a model trained with one method and seed, evaluated on some benchmarks."""

    profile: Profile
    """The run profile; a name is resolved to its `Profile` here, once (`profiles.get_profile`)."""
    model: str
    method: str
    seed: int = 0
    credit: str = "mars"
    """MURPHY's retrospective credit, a name of `credit.CREDIT_RULES`: "mars" (max, Eq. 3), "mers" (discounted
    mean) or "none" (no backup)."""
    gamma: float = 1.0
    """MeRS discount γ (ignored by MaRS)."""
    credit_args: tuple[tuple[str, float], ...] = ()
    """The credit rule's other knobs (`CreditRule.knobs`, e.g. GiGPO's ω), as MurphyConfig's `credit_args`; () the
    rule's defaults. A dict is taken. In the keys and the variant label only when set (older runs keep theirs)."""
    pruning: str = "none"
    """"none", "intrap" (keep b_traj per group) or "interp" (keep b_grp groups per turn)."""
    backup_on: str = "full"
    """Credit backup over the "full" tree (default) or the "pruned" one (docs/notation.md, "Backup order");
    only with pruning (without it the two are the same)."""
    benchmarks: tuple[str, ...] = ("toy",)
    """Evaluation benchmarks: task sources (`murphy_lab.tasks.registry`: "HumanEval", "toy", "jsonl", ...)."""
    benchmark_args: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    """(benchmark, loader arguments) on top of the profile's `benchmark_args`, e.g. your own file's path:
    `plan(..., benchmarks=("toy", "jsonl"), benchmark_args={"jsonl": {"path": "tasks.jsonl"}})` (a dict is taken)."""
    scaffold: str | None = None
    """The evaluation scaffold; None: the method's own (`Method.scaffold`: Reflexion, ReVeal's rounds for ReVeal)."""
    iters: tuple[int, ...] = (1, 3, 5)
    runs: int = 3
    train_data: str | None = None
    """The training set, a name of `profiles.TRAIN_DATA` (the same tasks for every method and every seed); None: the
    profile's `train_data`."""
    n_eval_tasks: int | None = None
    backend: str = "real"
    """"real", or "stand-in" when fast fake train/evaluate functions produced the numbers (tests, previews)."""
    overrides: tuple[tuple[str, object], ...] = ()
    """Extra trainer-config fields, e.g. (("max_steps", 2),); part of both keys."""
    budget: str = "steps"
    """"steps": the profile's step budget; "samples": a baseline given as many sampled sequences per task as
    MURPHY's own run (the profile's `matched` overrides, e.g. more chains per task). Part of both keys."""
    curve: bool = False
    """Also evaluate the run's intermediate checkpoints (Iter-3, one run) for the budget curve (`curve.csv`)."""

    def __post_init__(self) -> None:
        prof = get_profile(self.profile)  # an unknown profile is an error naming the known ones
        object.__setattr__(self, "profile", prof)
        if isinstance(self.credit_args, Mapping):  # {knob: value} -> the frozen, hashable form
            object.__setattr__(self, "credit_args", tuple(sorted(self.credit_args.items())))
        # {benchmark: {argument: value}} -> the frozen, hashable form
        if isinstance(self.benchmark_args, Mapping):
            args = {b: tuple(sorted(dict(a).items())) for b, a in self.benchmark_args.items()}
            object.__setattr__(self, "benchmark_args", tuple(sorted(args.items())))
        if self.train_data is None:
            object.__setattr__(self, "train_data", prof.train_data)
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.scaffold is None:  # frozen: the method's own scaffold is filled in once, here
            object.__setattr__(self, "scaffold", get_method(self.method).scaffold)
        if prof.recipes and get_method(self.method).trains:
            # a profile that trains from paper recipes: a method without them is refused here
            recipe_path(self)
        rule = credit_rule(self.credit)  # an unknown rule is an error naming the known ones
        if self.credit_args:  # the rule's own knobs, in their ranges (one line naming the knob)
            rule.knob_values(gamma=self.gamma if rule.discounted else None, **dict(self.credit_args))
        if self.pruning not in PRUNINGS:
            raise ValueError(f"pruning must be one of {PRUNINGS}, got {self.pruning!r}")
        if self.backup_on not in ("full", "pruned"):
            raise ValueError(f"backup_on must be 'full' or 'pruned', got {self.backup_on!r}")
        if self.backup_on == "pruned" and self.pruning == "none":
            raise ValueError(
                "backup_on='pruned' needs pruning='intrap' or 'interp' (without pruning both orders agree)"
            )
        if not self.benchmarks:
            raise ValueError("benchmarks must name at least one benchmark")
        if isinstance(self.benchmarks, str):
            raise ValueError(f"benchmarks must be a list of names, got the string {self.benchmarks!r}")
        unused = sorted(set(dict(self.benchmark_args)) - set(self.benchmarks))
        if unused:
            raise ValueError(f"benchmark_args: {unused} is not among the benchmarks {list(self.benchmarks)}")
        for benchmark in self.benchmarks:  # the name and its arguments against the loader; nothing is read
            check_benchmark(prof, benchmark, **self.own_benchmark_args(benchmark))
        if self.budget not in ("steps", "samples"):
            raise ValueError(f"budget must be 'steps' or 'samples', got {self.budget!r}")
        if self.train_data not in TRAIN_DATA:
            raise ValueError(f"train_data must be one of {sorted(TRAIN_DATA)}, got {self.train_data!r}")
        if self.budget == "samples" and (
            not get_method(self.method).budget or self.method == SAMPLE_REFERENCE
        ):
            raise ValueError(
                f"budget='samples' matches a baseline to {SAMPLE_REFERENCE}'s samples; not for "
                f"{self.method!r}"
            )

    def own_benchmark_args(self, benchmark: str) -> dict:
        """This experiment's loader arguments for `benchmark` beyond the profile's (`benchmark_args`)."""
        return dict(dict(self.benchmark_args).get(benchmark, ()))

    @property
    def variant(self) -> str:
        """The ablation label of a method with variants (MURPHY): the credit rule, with γ for a discounted one
        ("mars", "mers_0.9"), plus "+intrap"/"+interp" when pruned; else "samples" for a sample-matched baseline,
        "-" for a baseline at the profile's step budget."""
        if not get_method(self.method).variants:
            return "-" if self.budget == "steps" else "samples"
        label = credit_label(self.credit, self.gamma, self.credit_args)
        return label if self.pruning == "none" else f"{label}+{pruning_label(self.pruning, self.backup_on)}"

    def train_config(self) -> dict:
        """What training depends on (None-free, JSON-able); hashed into `train_key`."""
        cfg = dict(
            profile=self.profile.name,
            model=self.model,
            method=self.method,
            seed=self.seed,
            train_data=self.train_data,
            backend=self.backend,
            overrides=[list(kv) for kv in self.overrides],
        )
        if get_method(self.method).variants:  # MURPHY's credit, γ and pruning (backup order only when pruned)
            cfg.update(credit=self.credit, gamma=float(self.gamma), pruning=self.pruning)
            if self.credit_args:  # absent at the rule's defaults, so older runs keep their keys
                cfg.update(credit_args={k: float(v) for k, v in self.credit_args})
            if self.pruning != "none":
                cfg.update(backup_on=self.backup_on)
        if self.budget != "steps":  # absent at the default, so older runs keep their keys
            cfg.update(budget=self.budget)
        return cfg

    def resolved(self) -> dict:
        """The whole config (training + evaluation), as saved to `config.json` beside every result."""
        cfg = self.train_config()
        cfg.update(
            benchmarks=list(self.benchmarks),
            scaffold=self.scaffold,
            iters=list(self.iters),
            runs=self.runs,
            n_eval_tasks=self.n_eval_tasks,
            variant=self.variant,
        )
        if self.curve:
            cfg.update(curve=True)
        if self.benchmark_args:  # absent when the profile's arguments are all, so older runs keep their keys
            cfg.update(benchmark_args={b: dict(a) for b, a in self.benchmark_args})
        return cfg


def credit_label(credit: str, gamma: float = 1.0, credit_args: Mapping | Sequence = ()) -> str:
    """A credit variant's label: the rule table's ("mars", "mers_0.9": a rule that reads γ carries it), plus each
    knob the experiment sets ("gigpo_1.0_omega0.5")."""
    args = sorted(dict(credit_args).items())
    return CREDIT_RULES[credit].variant(gamma) + "".join(f"_{k}{float(v):g}" for k, v in args)


def pruning_label(pruning: str, backup_on: str = "full") -> str:
    """ "interp", or "interp+backup_pruned" when the credit backup sees only the pruned tree."""
    return pruning if backup_on == "full" or pruning == "none" else f"{pruning}+backup_pruned"


def credit_variants(
    profile: str | Profile,
    credits: Sequence[str] | None = None,
    gammas: Sequence[float] | None = None,
    knobs: Mapping[str, Sequence[float]] | None = None,
) -> list[dict]:
    """The credit ablation's variants: each rule of `credits` (None: every rule of `CREDIT_RULES`) at the γ values
    its knob ablates (`gammas` replaces them for a rule that reads γ), and at every combination of its other knobs'
    values: `knobs` ({knob name: values}, e.g. {"omega": [0.5, 1.0]}) for a rule that declares the knob, else the
    knob's own `Knob.ablate` values, else its default (not set: the variant's keys and label stay the rule's). A knob
    no chosen rule declares is refused naming the rules' knobs. A profile that trains from paper recipes keeps, by
    default, the variants MURPHY ships recipes for (MaRS, MeRS γ = 0.9 and 1.0: the paper's ablation); a rule named
    there without its recipes is refused by the plan, naming the files."""
    rules = [credit_rule(c) for c in (list(CREDIT_RULES) if credits is None else credits)]
    knobs = dict(knobs or {})
    declared = sorted({k.name for r in rules for k in r.knobs if k.name != "gamma"})
    unknown = sorted(set(knobs) - set(declared))
    if unknown:
        raise ValueError(
            f"knobs: no chosen credit rule has a knob {unknown[0]!r}{did_you_mean(unknown[0], declared)}; "
            f"their knobs besides gamma: {declared}"
        )
    out = []
    for rule in rules:
        swept = [
            [(k.name, float(v)) for v in knobs.get(k.name, k.ablate)] or [()]
            for k in rule.knobs
            if k.name != "gamma"
        ]
        for g in gammas if gammas is not None and rule.discounted else rule.ablation_gammas():
            for values in itertools.product(*swept):
                set_ = dict(kv for kv in values if kv)
                out.append(
                    {"credit": rule.name, "gamma": float(g), **({"credit_args": set_} if set_ else {})}
                )
    if credits is None and get_profile(profile).recipes:
        murphy = get_method("murphy")
        out = [v for v in out if murphy.recipe_name(_Variant(v["credit"], v["gamma"])) in murphy.recipes]
    return out


@dataclass(frozen=True)
class _Variant:
    """The fields a MURPHY recipe name reads (`Method.recipe_name`), for a variant not yet an Experiment."""

    credit: str
    gamma: float
    pruning: str = "none"


def pruning_variants(
    prunings: Sequence[str] = ("none", "intrap", "interp"), backups: Sequence[str] = ("full", "pruned")
) -> list[dict]:
    """The pruning ablation's variants: every pruning rule with every backup order (one row without pruning)."""
    return [
        {"pruning": p} if p == "none" else {"pruning": p, "backup_on": b}
        for p in prunings
        for b in (backups[:1] if p == "none" else backups)
    ]


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
    """Hash of what the checkpoint depends on; None for a method that trains nothing (the base model)."""
    if not get_method(exp.method).trains:
        return None
    return _hash(dict(exp.train_config(), code_version=version or code_version()))


def run_key(exp: Experiment, version: str | None = None) -> str:
    """Hash of the whole resolved config and the code version: the name of the run's folder."""
    return _hash(dict(exp.resolved(), code_version=version or code_version()))


def plan(
    profile: str | Profile,
    methods: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    benchmarks: Sequence[str] | None = None,
    variants: Sequence[dict] = ({},),
    matched: Sequence[str] | None = None,
    **fields,
) -> list[Experiment]:
    """Experiments for every (model, method, variant, seed), with the profile's defaults for what is not given.

    `variants` are dicts of Experiment fields (e.g. `{"credit": "mers", "gamma": 0.9}`), applied to the methods
    whose `Method.variants` hold those fields (MURPHY). `matched=None`: the profile's `matched` methods (each also
    planned at MURPHY's sample budget, `budget="samples"`, with the profile's overrides for it, which may set only
    the method's `Method.budget` fields); `()` plans none. `methods=None`: the profile's `methods` (empty: every
    registered method). A method the
    profile reports on some benchmarks only (`method_benchmarks`: ReVeal on LiveCodeBench-v6 in the paper profile)
    is evaluated on those of the planned benchmarks. `seeds=None`: the profile's, or its `method_seeds` for a
    method trained on fewer. Every experiment is checked when it is made (its benchmarks and their arguments too:
    `benchmark_args={"jsonl": {"path": ...}}` adds to the profile's), so a bad plan fails here, before training.
    """
    prof = get_profile(profile)
    methods = default_methods(prof) if methods is None else methods
    only, method_seeds = dict(prof.method_benchmarks), dict(prof.method_seeds)
    defaults = dict(
        benchmarks=tuple(benchmarks or prof.benchmarks),
        iters=prof.iters,
        runs=prof.runs,
        train_data=prof.train_data,
        n_eval_tasks=prof.n_eval_tasks,
        overrides=prof.train_overrides,
        curve=prof.curve,
    )
    budgets = dict(prof.matched)
    matched = [m for m in (budgets if matched is None else matched) if m in methods]
    unknown = [m for m in matched if m not in budgets]
    if unknown:
        raise ValueError(
            f"profile {prof.name!r} has no sample-matched budget for {unknown} (its `matched`: "
            f"{sorted(budgets) or 'none'})"
        )
    for method in matched:
        keys = get_method(method).budget
        other = sorted(k for k, _ in budgets[method] if k not in keys)
        if other:
            raise ValueError(
                f"profile {prof.name!r}: the sample-matched {method} changes {other}, which are not "
                f"its budget fields {keys} (Method.budget)"
            )
    defaults.update(fields)
    # {benchmark: {argument: value}}, on the profile's
    extra = dict(defaults.pop("benchmark_args", None) or {})
    unused = sorted(set(extra) - set(defaults["benchmarks"]))
    if unused:
        raise ValueError(
            f"benchmark_args: {unused} is not among the benchmarks {list(defaults['benchmarks'])}"
        )
    out = []
    for model in models or prof.models:
        for method in methods:
            kw = dict(defaults)
            if method in only and set(only[method]) & set(kw["benchmarks"]):
                kw["benchmarks"] = tuple(b for b in kw["benchmarks"] if b in only[method])
            kw["benchmark_args"] = {b: a for b, a in extra.items() if b in kw["benchmarks"]}
            # the same baseline at MURPHY's sampled-sequence budget (first), and at its steps
            if method in matched:
                variants_ = (
                    dict(budget="samples", overrides=tuple(kw["overrides"]) + tuple(budgets[method])),
                    {},
                )
            else:
                own = set(get_method(method).variants)
                variants_ = [v for v in variants if set(v) <= own] or ({},)
            for variant in variants_:
                for seed in seeds if seeds is not None else method_seeds.get(method, prof.seeds):
                    out.append(Experiment(prof, model, method, seed=seed, **{**kw, **variant}))
    return list(dict.fromkeys(out))  # drop duplicates, keep order


def require_resources(profile: str | Profile) -> ContaminationReport | None:
    """Fail early, with the reason, when the machine cannot run this profile (the paper profile needs CUDA, and
    refuses a training set that overlaps its benchmarks); returns the overlap report where one was made."""
    profile = get_profile(profile)
    if not profile.needs_gpu:
        return None
    import torch  # heavy: only the GPU profile asks

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"profile={profile.name!r} trains 1.7B–7B models and needs CUDA GPUs (the paper used 8×H100: 2 for vLLM "
            "rollouts, 6 for training; see docs/gpu.md). This machine has none. Use profile='toy' on a CPU, "
            "or pass train=False with checkpoints trained elsewhere (evaluation still needs a GPU)."
        )
    return refuse_overlap(profile)  # a training set that repeats a benchmark task (experiments.contamination)
