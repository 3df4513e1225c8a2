"""`setup`: what every reproduce notebook does before planning, in one call.

S = X.setup(profile, output_dir, cache_dir, train=train, from_cache_only=from_cache_only, backend=backend,
            model_paths=model_paths, train_overrides=train_overrides, torch_threads=torch_threads)
runs = S.run(S.plan(methods=methods, models=models, seeds=seeds, benchmarks=benchmarks))
S.check(S.plan(...))   # optional: one line per problem (data, models, GPUs, packages) before anything spins
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from murphy_lab.experiments.contamination import check_profile, write_report
from murphy_lab.experiments.plan import Experiment, code_version, plan, require_resources
from murphy_lab.experiments.standins import backend_functions
from murphy_lab.experiments.store import RunResult, run_or_collect
from murphy_lab.profiles import Profile, get_profile


@dataclass
class Session:
    """A notebook's settings, resolved: where results go and how every run of it is made."""

    profile: Profile
    """The notebook's profile, resolved once by `setup` and handed to every plan and run."""
    backend: str
    """"real" or "stand-in" (fake train/evaluate: numbers are NOT measurements)."""
    out: Path
    """`<output_dir>/<profile>`: run records, tables and figures."""
    overrides: tuple[tuple[str, object], ...]
    """Trainer-config fields: the profile's `train_overrides`, then the notebook's (part of the run keys)."""
    from_cache_only: bool = False
    run_kw: dict = field(default_factory=dict)
    """Keywords of `run_experiment`: cache_dir, train, model_paths and the stand-ins' functions."""
    jobs: int = 1
    """Runs side by side (one process each, `threads` torch threads per process)."""
    threads: int = 1

    def plan(self, **kw) -> list[Experiment]:
        """`plan(profile, ...)` with this session's backend and overrides."""
        return plan(self.profile, backend=self.backend, overrides=self.overrides, **kw)

    def check(self, experiments: Iterable[Experiment], gpus: int | None = None) -> list[str]:
        """The plan's problems before anything loads, one line each (`jobs.plan_problems`: training configs, data,
        models, GPUs — `gpus` for another machine's —, vLLM / DeepSpeed, model_paths keys); printed and returned."""
        from murphy_lab.experiments.jobs import plan_problems  # heavy (TRL, through the trainer's --check)

        problems = plan_problems(
            list(experiments), gpus, self.run_kw.get("model_paths"), self.run_kw.get("cache_dir")
        )
        print("\n".join(problems) if problems else "ok: no problem found before the runs start")
        return problems

    def run(self, experiments: Iterable[Experiment]) -> list[RunResult]:
        """Train and evaluate what is not cached yet (or, with `from_cache_only`, only collect finished runs)."""
        return run_or_collect(
            experiments, self.out, self.from_cache_only, jobs=self.jobs, threads=self.threads, **self.run_kw
        )


def setup(
    profile: str | Profile,
    output_dir: str | Path = "results",
    cache_dir: str | Path = "cache",
    *,
    train: bool = True,
    from_cache_only: bool = False,
    backend: str = "real",
    model_paths: dict | None = None,
    train_overrides: dict | None = None,
    torch_threads: int | None = 1,
    jobs: int | None = None,
) -> Session:
    """Check the machine (the paper profile stops here, with the reason, without CUDA or on a training set that
    overlaps its benchmarks; not when only collecting), write the training/evaluation overlap report
    (`contamination.md` / `.json`) into the results folder,
    set torch's CPU threads, and resolve the notebook's parameters into a `Session`; prints one summary line.
    `jobs`: runs side by side (None: the profile's `jobs`, at most one per CPU core). `profile`: a name or a
    `Profile`, resolved here once (an unknown name is an error naming the known ones)."""
    profile = get_profile(profile)
    report = None if from_cache_only else require_resources(profile)
    if torch_threads:
        import torch  # heavy: imported only to set its threads

        torch.set_num_threads(torch_threads)
    backend, fns = backend_functions(backend)
    overrides = profile.train_overrides + tuple(sorted((train_overrides or {}).items()))
    run_kw = dict(cache_dir=Path(cache_dir) / profile.name, train=train, model_paths=model_paths or {}, **fns)
    jobs = max(1, min(jobs or profile.jobs, os.cpu_count() or 1))
    session = Session(
        profile,
        backend,
        Path(output_dir) / profile.name,
        overrides,
        from_cache_only,
        run_kw,
        jobs,
        torch_threads or 1,
    )
    # the overlap report beside the tables (experiments.contamination)
    if not from_cache_only and backend == "real":
        write_report(report or check_profile(profile), session.out)
    print(
        f"profile={profile.name}  backend={backend}  jobs={jobs}  results -> {session.out}  "
        f"code version {code_version()}"
    )
    return session
