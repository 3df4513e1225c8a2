"""MURPHY inside TRL: the trainer, its turn sampler and the run lifecycle — the only code that touches TRL's
private API (docs/training.md).

    core.py         MurphyTrainer(GRPOTrainer): one round = grow_trees -> score_trees -> build_rows -> dump_round
                    (hooks a baseline overrides), row padding, π_old / π_ref, the loss with exact filler rows
    sampling.py     TurnSampler: sample(prompts, n) through TRL's `_generate_single_turn`; the step's tasks
    prefix_pass.py  PrefixSharing: each shared prompt encoded once per group in the log-prob passes
    metrics.py      round statistics and RunLog (metrics.jsonl, one line per optimizer step)
    memory.py       freed heap memory back to the system between a CPU run's phases; the peak resident memory
    run.py          train(config, output_dir, resume): run folder, resume, metrics kept exact (python -m murphy_lab.train)
"""

from murphy_lab.trainer.core import MurphyTrainer, task_dataset
from murphy_lab.trainer.metrics import RunLog, tree_stats
from murphy_lab.trainer.run import last_checkpoint, train
from murphy_lab.trainer.sampling import TimedExecutor, TurnSampler, tasks_of_rows

__all__ = [
    "MurphyTrainer",
    "RunLog",
    "TimedExecutor",
    "TurnSampler",
    "last_checkpoint",
    "task_dataset",
    "tasks_of_rows",
    "train",
    "tree_stats",
]
