"""The reproduce code: one experiment = (profile, model, method, variant, seed) -> train (or skip) -> evaluate, cached.

The single place that maps a row of a paper table to library calls. `reproduce/*.ipynb` call `setup`, plan
experiments, run them, and hand the results to `paper_tables`:

    from murphy_lab import experiments as X
    from murphy_lab.experiments import paper_tables as T
    S = X.setup("toy", "results", "cache")                  # checks the machine, resolves the notebook's settings
    runs = S.run(S.plan(methods=("base", "murphy")))         # train -> evaluate what is not cached yet
    T.write_tables(T.main_tables(T.aggregate(X.results_frame(runs))), S.out, "main_table")

Modules:
    plan       Experiment, run_key / train_key / code_version, plan, credit_variants, pruning_variants
    checkpoints  run_label ("<model>/<method>/<variant>/seed<N>"), model_paths keys: one checkpoint per run
    jobs       `python -m murphy_lab.experiments.jobs list|script|run`: one job per run (cluster arrays)
    store      RunResult, run_experiment, run_all / run_or_collect / collect, load_run, results_frame, metrics_frame
    partial    an evaluation killed midway continues: the benchmarks it finished for the same model are kept
    dispatch   default_base_model / default_train / default_evaluate: the profile's base model, the method's entry
               (murphy_lab.methods: how it trains, how it is evaluated), the profile's benchmark tasks
    standins   fast fake train / evaluate functions (backend="stand-in")
    session    setup(): the reproduce notebooks' common first cell
    paper_tables, table_format, paper   tables in the paper's layout, a table as files, the paper's numbers
    verdicts   paired verdict lines between methods (by training seed), the training-budget table and the
               budget curves (held-out pass@1 against sampled sequences)
    toy_compare            `python -m murphy_lab.experiments.toy_compare`: GRPO vs GRPO-MT vs MURPHY at equal steps

Profiles (the defaults of every field) are `murphy_lab.profiles` (`get_profile`, `not_run_note`); the methods, their
training configs, recipes and prompt format are `murphy_lab.methods`. This package imports no baseline.
"""

# at once: `plan` names this function, never the submodule of that name
from murphy_lab.experiments.plan import (
    PRUNINGS,
    Experiment,
    code_version,
    credit_variants,
    plan,
    pruning_label,
    pruning_variants,
    require_resources,
    run_key,
    train_key,
)
from murphy_lab.lazy import lazy

# name -> the submodule that defines it, imported on first use (pandas, torch: not for a command's --help)
_LAZY = {
    **dict.fromkeys(("check_model_paths", "given_checkpoint", "run_label"), "checkpoints"),
    **dict.fromkeys(("default_base_model", "default_evaluate", "default_train"), "dispatch"),
    **dict.fromkeys(("Session", "setup"), "session"),
    **dict.fromkeys(
        ("STAND_INS", "backend_functions", "stand_in_base_model", "stand_in_evaluate", "stand_in_train"),
        "standins",
    ),
    **dict.fromkeys(
        (
            "EVAL_COLUMNS",
            "BaseModelFn",
            "EvaluateFn",
            "RunResult",
            "TrainFn",
            "collect",
            "default_cache_dir",
            "load_run",
            "metrics_frame",
            "results_frame",
            "run_all",
            "run_experiment",
            "run_or_collect",
        ),
        "store",
    ),
    **dict.fromkeys(("budget_curves", "budget_table", "paired_verdicts"), "verdicts"),
}


__getattr__ = lazy(__name__, _LAZY, globals())


__all__ = [
    "EVAL_COLUMNS",
    "PRUNINGS",
    "STAND_INS",
    "BaseModelFn",
    "EvaluateFn",
    "Experiment",
    "RunResult",
    "Session",
    "TrainFn",
    "backend_functions",
    "budget_curves",
    "budget_table",
    "check_model_paths",
    "code_version",
    "collect",
    "default_base_model",
    "given_checkpoint",
    "run_label",
    "default_cache_dir",
    "default_evaluate",
    "default_train",
    "load_run",
    "metrics_frame",
    "paired_verdicts",
    "plan",
    "credit_variants",
    "pruning_label",
    "pruning_variants",
    "require_resources",
    "results_frame",
    "run_all",
    "run_experiment",
    "run_key",
    "run_or_collect",
    "setup",
    "stand_in_base_model",
    "stand_in_evaluate",
    "stand_in_train",
    "train_key",
]
