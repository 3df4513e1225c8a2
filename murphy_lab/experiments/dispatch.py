"""How an experiment becomes library calls: its base model, its training, its evaluation — each through a registry.

`default_base_model`, `default_train` and `default_evaluate` are what `run_experiment` calls unless it is handed
other functions (`base_model_fn`, `train_fn`, `evaluate_fn`; the tests and the stand-ins do):

- the base model: the profile's `base_model` (a paper model's hub id, the smoke profile's tiny random model, the
  toy world's policy), `murphy_lab.profiles`;
- training: the method's entry, `murphy_lab.methods.get_method(exp.method).train` — the trainer's methods (GRPO,
  GRPO-MT, MURPHY), µCode's and ReVeal's pipelines, each on the tasks `profiles.training_set` gives every method;
- evaluation: Iter-k pass@1 (`murphy_lab.evaluate`) on the profile's benchmark tasks (read from the data step's
  local files when MURPHY_LAB_DATA is set: `benchmark_tasks_for`), in the experiment's prompt format, under the
  scaffold the method's entry builds (its own by default: ReVeal's rounds for ReVeal).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from murphy_lab.evaluate import evaluate
from murphy_lab.executor import Executor
from murphy_lab.experiments.plan import Experiment
from murphy_lab.methods import get_method
from murphy_lab.methods.formats import make_policy
from murphy_lab.methods.recipes import local_args
from murphy_lab.profiles import benchmark_tasks


def benchmark_tasks_for(exp: Experiment, benchmark: str) -> list:
    """The experiment's evaluation tasks of `benchmark`: `profiles.benchmark_tasks` with the experiment's own loader
    arguments on the profile's, and, when the data step wrote the benchmark under MURPHY_LAB_DATA, those local
    files as its source."""
    args = {**exp.own_benchmark_args(benchmark), **local_args(benchmark)}
    return benchmark_tasks(exp.profile, benchmark, exp.n_eval_tasks, **args)


def default_base_model(exp: Experiment, cache_dir: Path) -> str:
    """The experiment's base policy: its profile's `base_model(model key, cache dir)`."""
    build = exp.profile.base_model
    if build is None:
        raise ValueError(
            f"profile {exp.profile.name!r} names no base model; pass model_paths={{{exp.model!r}: '<dir>'}}"
        )
    return build(exp.model, Path(cache_dir))


def default_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """Train `base_model` with the experiment's method (its registry entry); returns the trained model's folder."""
    method = get_method(exp.method)
    if not method.trains:
        raise ValueError(f"method {exp.method!r} trains nothing (it is evaluated as it is)")
    return Path(method.train(exp, base_model, Path(output_dir)))


def default_evaluate(
    exp: Experiment, model_dir: str, benchmark: str, transcripts_path: str | None = None
) -> pd.DataFrame:
    """Iter-k pass@1 of `model_dir` on `benchmark` under the method's scaffold for this experiment."""
    tasks = benchmark_tasks_for(exp, benchmark)
    policy = make_policy(model_dir, exp)
    scaffold = get_method(exp.method).evaluation(exp)
    with Executor(**exp.profile.executor) as executor:
        return evaluate(
            policy,
            tasks,
            executor,
            iters=tuple(exp.iters),
            runs=exp.runs,
            scaffold=scaffold,
            seed=exp.seed,
            transcripts_path=transcripts_path,
            progress=True,  # shown only once it lasts (a real model's evaluation: minutes to hours)
        )
