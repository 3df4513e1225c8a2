"""Generation inside the trainer: the step's tasks from TRL's rows, and `sample(prompts, n)` through TRL.

`TurnSampler` is the `sample(prompts, n)` that `tree.build_trees` (MURPHY, GRPO, GRPO-MT) and ReVeal's
`run_chains` call: one call of TRL's own `_generate_single_turn` per turn (transformers / vLLM colocate / vLLM
server, weight sync included). It keeps each completion's prompt / completion token ids and sampling log-probs in
`pending`, which the caller attaches to the nodes it builds (the loss trains on exactly the sampled tokens).

vLLM server mode and ZeRO-3 need every rank to make the same generation calls with the same prompt counts: each
call is padded with filler prompts to the largest rank's count, and `join_remaining` lets a rank whose trees
finished early take part in the turns the others still run.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from murphy_lab.tree import Node


def tasks_of_rows(rows: list[dict], g: int, tasks_by_id: dict) -> list:
    """The step's tasks: TRL's RepeatSampler puts each task prompt `g` times in a row (a tree lives on one rank)."""
    tasks = []
    for i in range(0, len(rows), g):
        block = {row["task_id"] for row in rows[i : i + g]}
        if len(block) != 1:
            raise RuntimeError(
                f"rows {i}..{i + g - 1} mix tasks {sorted(block)}: a tree must live on one rank"
            )
        tasks.append(tasks_by_id[block.pop()])
    return tasks


class TurnSampler:
    """`sample(prompts, n)` through TRL's `_generate_single_turn`; `pending` holds the last call's token data.

    Prompts are strings or chat messages; with `trainer.murphy.chat` a string is sent as one user message.
    """

    def __init__(self, trainer: Any, filler: Any):
        self.trainer, self.filler = trainer, filler
        self.calls, self.seconds, self.pending = 0, 0.0, []

    def __call__(self, prompts: list, n: int) -> list[list[str]]:
        t0, tr = time.perf_counter(), self.trainer
        k = len(prompts)
        # prompts this call sends; equal on every rank (vLLM server gathers them, ZeRO-3 gathers params)
        width = k
        if tr.accelerator.num_processes > 1:
            width = int(tr.accelerator.gather(torch.tensor([k], device=tr.accelerator.device)).max())
        self.calls += 1
        if width == 0:
            return []
        padded = list(prompts) + [self.filler] * (width - k)
        if tr.murphy.chat:
            padded = [[{"role": "user", "content": p}] if isinstance(p, str) else p for p in padded]
        prompt_ids = tr._tokenize_prompts(padded)[0]
        # each prompt n times in a row (width*n rows)
        repeated = [list(p) for p in prompt_ids for _ in range(n)]
        completion_ids, logprobs = tr._generate_single_turn(repeated, None, {}, num_generations=n)
        completion_ids = [list(c) for c in completion_ids[: k * n]]  # drop the filler rows
        texts = tr.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        self.pending = [
            {
                "prompt_ids": repeated[j],
                "completion_ids": completion_ids[j],
                "sampling_logps": None if logprobs is None else list(logprobs[j]),
            }
            for j in range(k * n)
        ]
        self.seconds += time.perf_counter() - t0
        return [texts[i * n : (i + 1) * n] for i in range(k)]

    def attach(self, turn: int, nodes: list[Node]) -> None:
        """build_trees' on_turn hook: the turn's new nodes arrive in the order their completions were sampled."""
        if len(nodes) != len(self.pending):
            raise RuntimeError(f"turn {turn}: {len(nodes)} nodes for {len(self.pending)} sampled completions")
        for node, rec in zip(nodes, self.pending):
            node.meta.update(rec)
        self.pending = []

    def join_remaining(self, calls: int, n: int) -> None:
        """With several ranks, make empty calls of group size `n` (what the other ranks' later turns sample) until
        `calls` were made: a rank whose rollouts ended early still joins every turn's call."""
        if self.trainer.accelerator.num_processes > 1:
            while self.calls < calls:
                self([], n)


class TimedExecutor:
    """`run_many` that times the executor (the jobs already hold `task.program(code)`, built by build_trees)."""

    def __init__(self, executor: Any):
        self.executor, self.seconds = executor, 0.0

    def run_many(self, jobs: list) -> list:
        t0 = time.perf_counter()
        out = self.executor.run_many(jobs)
        self.seconds += time.perf_counter() - t0
        return out


__all__ = ["TimedExecutor", "TurnSampler", "tasks_of_rows"]
