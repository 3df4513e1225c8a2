"""Iter-k evaluation on held-out tasks during training, logged into metrics.jsonl like every other metric.

    python -m murphy_lab.train --profile toy --set eval_every=10 eval_tasks=toy \
        eval_task_args.split=test eval_task_args.n=32 eval_task_args.seed=1234

Every `eval_every` optimizer steps (and after the last step), `IterKEval` evaluates the model being trained with the
library's own Iter-k evaluation (`murphy_lab.evaluate.evaluate`: the Reflexion scaffold, one sampling run, seed 0) on
the first `eval_n_tasks` held-out tasks, with the run's generation settings (chat template, max_completion_length,
temperature) and executor, and adds to that step's metrics.jsonl line:

    eval/iter<k>_pass@1   pass@1 (%) of the held-out tasks within k attempts, for each k of eval_iters
    eval/n_tasks          how many held-out tasks
    time/eval_s           the evaluation's wall time (not part of time/step_s)
    time/eval_cpu_s       its CPU seconds (the process's threads and the executor workers it reaped)

and writes each task's episode to `eval/step_NNNNNN.jsonl` in the run folder (`evaluate`'s transcripts: paired
comparisons over tasks).

The evaluation leaves training as it found it: the model goes back to train mode, and the random generators
(Python, NumPy, torch, CUDA) and the tokenizer's padding settings are restored, so a run with evaluation samples the
same trees as one without. It runs on the main process only (under ZeRO-2 every rank holds the whole model) and
generates with transformers, also when the run's rollouts use vLLM: size eval_n_tasks for that. (Not yet run on a
GPU.)

`evaluating(trainer_cls, callback)` is the trainer class that adds the callback after its RunLog, so the results
join the step's line (`python -m murphy_lab.train` uses it when `eval_every > 0`).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import TrainerCallback

from murphy_lab.config import MurphyConfig
from murphy_lab.evaluate import evaluate
from murphy_lab.policy import TransformersPolicy
from murphy_lab.tasks import load_tasks
from murphy_lab.trainer import memory
from murphy_lab.trainer.metrics import cpu_seconds


class IterKEval(TrainerCallback):
    """Iter-k pass@1 of the model being trained on held-out tasks, every `config.eval_every` steps."""

    def __init__(self, config: MurphyConfig, tasks: list | None = None):
        if not config.eval_every:
            raise ValueError("IterKEval needs eval_every > 0")
        self.config = config
        if tasks is None:
            tasks = load_tasks(config.eval_tasks, **config.eval_task_args)
        self.tasks = list(tasks)[: config.eval_n_tasks] if config.eval_n_tasks else list(tasks)
        if not self.tasks:
            raise ValueError(f"eval_tasks: {config.eval_tasks!r} gave no held-out tasks")
        self.trainer: Any = None

    def bind(self, trainer: Any) -> IterKEval:
        """The trainer whose model, tokenizer, executor and RunLog line this callback uses."""
        self.trainer = trainer
        return self

    def on_step_end(self, args, state, control, **kw):
        step = state.global_step
        if step % self.config.eval_every == 0 or step == state.max_steps:  # and after the last step
            # RunLog ran first and holds this step's line until its next flush
            line = self.trainer.run_log.line
            if line is None or line.get("step") != step:
                raise RuntimeError("IterKEval must run after the trainer's RunLog (use `evaluating`)")
            line.update(self.evaluate())

    def evaluate(self) -> dict:
        """Iter-k pass@1 on the held-out tasks now; training's random state and modes are left as they were."""
        if not self.trainer.accelerator.is_main_process:
            return {}
        trainer, cfg = self.trainer, self.config
        model, tokenizer = trainer.model, trainer.processing_class
        was_training = model.training
        states = (
            random.getstate(),
            np.random.get_state(),
            torch.get_rng_state(),
            torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        )
        padding = (tokenizer.padding_side, tokenizer.pad_token)
        memory.release()  # the step's freed memory, before decoding every held-out task (trainer/memory.py)
        t0, c0 = time.perf_counter(), cpu_seconds()
        try:
            policy = TransformersPolicy(
                model,
                tokenizer=tokenizer,
                max_new_tokens=cfg.max_completion_length,
                temperature=cfg.temperature,
                use_chat_template=cfg.chat,
                chat_template_kwargs=cfg.chat_template_kwargs or None,
            )
            out_dir = Path(trainer.args.output_dir) / "eval"  # each task's episode, for paired comparisons
            out_dir.mkdir(parents=True, exist_ok=True)
            with torch.no_grad():
                df = evaluate(
                    policy,
                    self.tasks,
                    trainer.executor,
                    iters=tuple(cfg.eval_iters),
                    runs=1,
                    seed=0,
                    progress=False,
                    transcripts_path=str(out_dir / f"step_{trainer.state.global_step:06d}.jsonl"),
                )
        finally:
            model.train(was_training)
            tokenizer.padding_side, tokenizer.pad_token = padding
            random.setstate(states[0])
            np.random.set_state(states[1])
            torch.set_rng_state(states[2])
            if states[3] is not None:
                torch.cuda.set_rng_state_all(states[3])
            memory.release()
        if "difficulty" in df.columns:
            df = df[df["difficulty"].fillna("all").astype(str) == "all"]
        out = {f"eval/iter{int(r['k'])}_pass@1": float(r["pass@1"]) for _, r in df.iterrows()}
        return {
            **out,
            "eval/n_tasks": len(self.tasks),
            "time/eval_s": time.perf_counter() - t0,
            "time/eval_cpu_s": cpu_seconds() - c0,
        }


def evaluating(trainer_cls: type, callback: IterKEval) -> type:
    """`trainer_cls` whose instances add `callback` after their own RunLog (its results then join each step's
    metrics.jsonl line); a subclass named `Evaluating<trainer_cls>`, nothing else changed."""

    class Evaluating(trainer_cls):
        evaluates = True  # trainer.run.train adds no second IterKEval

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.add_callback(callback.bind(self))

    Evaluating.__name__ = Evaluating.__qualname__ = f"Evaluating{trainer_cls.__name__}"
    return Evaluating


__all__ = ["IterKEval", "evaluating"]
