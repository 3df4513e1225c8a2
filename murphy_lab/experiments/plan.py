"""What to run: `Experiment` (one table cell's unit of work), its keys, and `plan` (the experiments of a table).

`run_key` hashes the whole resolved config (model, method, variant, training data, benchmarks, scaffold, Iter-k,
evaluation runs, seed) plus the code version (`murphy_lab.__version__` and the git commit when there is one);
`train_key` hashes only what training depends on, so other scaffolds (cross_scaffold) reuse the same checkpoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import murphy_lab
from murphy_lab.profiles import METHODS, get_profile

TRAINABLE = METHODS[1:]  # every column but the base model; µCode and ReVeal train with their own pipelines
# The trainer's mode per method that MurphyTrainer trains, with what the mode implies (MurphyConfig.validate
# refuses anything else): single-turn GRPO has one turn, GRPO-MT one refinement per failure (G1 chains).
# what each trainable mode implies, = {name: murphy_lab.modes.mode(name).fields()} (a test checks it; written out so
# that planning does not import the scoring pipeline and torch)
MODE_FIELDS = {
    "grpo": dict(mode="grpo", turns=1),
    "grpo_mt": dict(mode="grpo_mt", g2=1),
    "murphy": dict(mode="murphy"),
}
MODE = {method: fields["mode"] for method, fields in MODE_FIELDS.items()}


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
    budget: str = "steps"
    """"steps": the profile's step budget; "samples": a baseline given as many sampled sequences per task as
    MURPHY's own run (the profile's `matched` overrides, e.g. more chains per task). Part of both keys."""
    curve: bool = False
    """Also evaluate the run's intermediate checkpoints (Iter-3, one run) for the budget curve (`curve.csv`)."""

    def __post_init__(self) -> None:
        get_profile(self.profile)
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
        if self.budget not in ("steps", "samples"):
            raise ValueError(f"budget must be 'steps' or 'samples', got {self.budget!r}")
        if self.budget == "samples" and self.method in ("base", "murphy"):
            raise ValueError(f"budget='samples' matches a baseline to MURPHY's samples; not for {self.method!r}")

    @property
    def variant(self) -> str:
        """The ablation label: "mars", "mers_0.9", ... plus "+intrap"/"+interp" when pruned (MURPHY only);
        "samples" for a sample-matched baseline, "-" for a baseline at the profile's step budget."""
        if self.method != "murphy":
            return "-" if self.budget == "steps" else "samples"
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
        if self.budget != "steps":  # absent at the default, so older runs keep their keys
            cfg.update(budget=self.budget)
        return cfg

    def resolved(self) -> dict:
        """The whole config (training + evaluation), as saved to `config.json` beside every result."""
        cfg = self.train_config()
        cfg.update(benchmarks=list(self.benchmarks), scaffold=self.scaffold, iters=list(self.iters), runs=self.runs,
                   n_eval_tasks=self.n_eval_tasks, variant=self.variant)  # fmt: skip
        if self.curve:
            cfg.update(curve=True)
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
    matched: Sequence[str] | None = None,
    **fields,
) -> list[Experiment]:
    """Experiments for every (model, method, variant, seed), with the profile's defaults for what is not given.

    `variants` are dicts of Experiment fields (e.g. `{"credit": "mers", "gamma": 0.9}`), applied to MURPHY only.
    `matched=None`: the profile's `matched` methods (each also planned at MURPHY's sample budget, `budget="samples"`,
    with the profile's overrides for it); `()` plans none. `methods=None`: the profile's `methods`. A method the
    profile reports on some benchmarks only (`method_benchmarks`: ReVeal on LiveCodeBench-v6 in the paper profile)
    is evaluated on those of the planned benchmarks. `seeds=None`: the profile's, or its `method_seeds` for a
    method trained on fewer.
    """
    prof = get_profile(profile_name)
    methods = prof.methods if methods is None else methods
    only, method_seeds = dict(prof.method_benchmarks), dict(prof.method_seeds)
    defaults = dict(benchmarks=tuple(benchmarks or prof.benchmarks), iters=prof.iters, runs=prof.runs,
                    train_data=prof.train_data, n_eval_tasks=prof.n_eval_tasks,
                    overrides=prof.train_overrides, curve=prof.curve)  # fmt: skip
    budgets = dict(prof.matched)
    matched = [m for m in (budgets if matched is None else matched) if m in methods]
    unknown = [m for m in matched if m not in budgets]
    if unknown:
        raise ValueError(f"profile {profile_name!r} has no sample-matched budget for {unknown} (its `matched`: "
                         f"{sorted(budgets) or 'none'})")
    defaults.update(fields)
    out = []
    for model in models or prof.models:
        for method in methods:
            kw = dict(defaults)
            if method in only and set(only[method]) & set(kw["benchmarks"]):
                kw["benchmarks"] = tuple(b for b in kw["benchmarks"] if b in only[method])
            if method in matched:  # the same baseline again, at MURPHY's sampled-sequence budget
                variants_ = ({}, dict(budget="samples", overrides=tuple(kw["overrides"]) + tuple(budgets[method])))
            else:
                variants_ = variants if method == "murphy" else ({},)
            for variant in variants_:
                for seed in seeds if seeds is not None else method_seeds.get(method, prof.seeds):
                    out.append(Experiment(profile_name, model, method, seed=seed, **{**kw, **variant}))
    return list(dict.fromkeys(out))  # drop duplicates, keep order


def require_resources(profile_name: str) -> None:
    """Fail early, with the reason, when the machine cannot run this profile (the paper profile needs CUDA)."""
    if not get_profile(profile_name).needs_gpu:
        return
    import torch  # heavy: only the GPU profile asks

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"profile={profile_name!r} trains 1.7B–7B models and needs CUDA GPUs (the paper used 8×H100: 2 for vLLM "
            "rollouts, 6 for training; see docs/reproduce.md). This machine has none. Use profile='toy' on a CPU, "
            "or pass train=False with checkpoints trained elsewhere (evaluation still needs a GPU)."
        )
