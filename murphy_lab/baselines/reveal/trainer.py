"""Training ReVeal through the TRL-based trainer: `ReVealTrainer(MurphyTrainer)` swaps the tree for chains.

Only MurphyTrainer's round hooks are replaced (grow_trees, score_trees, build_rows, dump_round); the round around
them, generation (its TurnSampler through TRL: transformers / vLLM), row padding, reference/old log-probs, the loss
and the run lifecycle (`murphy_lab.trainer.run.train`: resume, metrics.jsonl) are MurphyTrainer's, unchanged:

    rows[::G]          -> the step's tasks (TRL repeats each task G times)                  G = num_generations
    run_chains         -> G chains per task, up to `rounds` rounds (published: 3), one generation call per round
    tapo_groups        -> rewards (outcome, generation, verification) and TAPO advantages per task group
    one row per round  -> prompt = the transcript so far, completion = the round's tokens (cut after
                          </verification-answer>); advantages (B, T): generation tokens get A^gen_{i,t},
                          verification tokens A^ver_{i,t} (TRL's loss accepts per-token advantages)

The tool's feedback is in the next round's prompt, never in a completion, so it is never trained on (the usual
masking of tool tokens). A round cut after </verification-answer> ends without EOS: leave TRL's
`mask_truncated_completions` off (its default), or those rows are masked out. Retokenizing the transcript may split text differently from the sampled tokens for BPE
tokenizers (each round's own tokens are the sampled ones); character tokenizers are exact.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
import yaml

from murphy_lab.baselines.reveal.chain import Chain, render, run_chains
from murphy_lab.baselines.reveal.config import ReVealConfig, as_chains
from murphy_lab.baselines.reveal.format import first_prompt
from murphy_lab.baselines.reveal.rewards import tapo_groups
from murphy_lab.config import MurphyConfig
from murphy_lab.trainer import MurphyTrainer, TimedExecutor, TurnSampler
from murphy_lab.trainer import run as lifecycle
from murphy_lab.tree import Node


class ReVealTrainer(MurphyTrainer):
    """MurphyTrainer whose rollouts are ReVeal chains with TAPO per-token advantages (see the module docstring).

    `murphy` supplies G (= g1), sampling, optimisation and `reward_tests` (the oracle: hidden by default); its
    mode/g2/turns are set to the chain shape (`as_chains`).
    """

    def __init__(
        self,
        model,
        args,
        murphy: MurphyConfig,
        tasks: list,
        executor: Any = None,
        reveal: ReVealConfig | None = None,
        **kwargs: Any,
    ):
        self.reveal = (reveal or ReVealConfig()).validate_fields()
        super().__init__(
            model=model,
            args=args,
            murphy=as_chains(murphy, self.reveal),
            tasks=tasks,
            executor=executor,
            **kwargs,
        )

    def filler_prompt(self, tasks: list) -> Any:
        return render([{"role": "user", "content": first_prompt(tasks[0].prompt)}], self.murphy.chat)

    def grow_trees(self, tasks: list, sample: TurnSampler, execute: TimedExecutor) -> list[Chain]:
        rv, m = self.reveal, self.murphy
        return run_chains(
            tasks,
            sample,
            execute,
            n=self.num_generations,
            rounds=rv.rounds,
            reward_tests=m.reward_tests,
            validate=rv.validate,
            chat=m.chat,
            max_tests=rv.max_tests,
            stop_on_verdict=rv.stop_on_verdict,
        )

    def score_trees(self, chains: list[Chain]) -> None:
        tapo_groups(chains, gamma=self.reveal.gamma)  # rewards + TAPO advantages, per task group

    def build_rows(self, chains: list[Chain]) -> tuple[dict[str, Any], dict[str, float]]:
        """One row per round: prompt = the transcript so far, completion = the round's tokens, (B, T) advantages."""
        turns = [t for c in chains for t in c.turns]
        nodes, spans = [], []
        for t in turns:
            ids = list(t.meta["completion_ids"])
            k_cut = self._token_index(ids, len(t.completion), len(t.raw))
            k_split = min(self._token_index(ids, t.split, len(t.raw)), k_cut)
            logps = t.meta.get("sampling_logps")
            nodes.append(
                Node(
                    advantage=t.adv_gen,
                    meta={
                        "prompt_ids": t.meta["prompt_ids"],
                        "completion_ids": ids[:k_cut],
                        "sampling_logps": None if logps is None else logps[:k_cut],
                    },
                )
            )
            spans.append((k_split, k_cut))
        batch = self._batch(nodes)
        # (B, C): one advantage per token
        adv = torch.zeros_like(batch["completion_ids"], dtype=torch.float32)
        for j, (t, (k_split, k_cut)) in enumerate(zip(turns, spans)):
            adv[j, :k_split] = t.adv_gen  # generation turn's tokens: A^gen_{i,t}
            adv[j, k_split:k_cut] = t.adv_ver  # verification turn's tokens: A^ver_{i,t}
        batch["advantages"] = adv
        return batch, {**chain_stats(chains), "rows/padding": len(adv) - len(turns)}

    def dump_round(self, chains: list[Chain]) -> None:
        """chains/step_NNNNNN[.rankR].jsonl: one JSON line per chain (texts, tests, rewards, advantages)."""
        with open(self.round_file("chains"), "w") as f:
            for c in chains:
                f.write(json.dumps({"step": self.state.global_step + 1, **c.to_dict()}) + "\n")

    def _token_index(self, ids: list[int], chars: int, total: int) -> int:
        """The fewest leading tokens whose decoded text covers `chars` characters (all of them when chars >= total)."""
        if chars >= total:
            return len(ids)
        decode = self.processing_class.decode
        lo, hi = 0, len(ids)
        while lo < hi:  # decoded length grows with the number of tokens: binary search
            mid = (lo + hi) // 2
            if len(decode(ids[:mid], skip_special_tokens=True)) >= chars:
                hi = mid
            else:
                lo = mid + 1
        return lo


def chain_stats(chains: list[Chain]) -> dict[str, float]:
    """Per-step statistics of a round of chains (this rank): rewards, rounds played, test validity, format."""
    turns = [t for c in chains for t in c.turns]

    def mean(xs) -> float:
        xs = list(xs)
        return float(sum(xs) / len(xs)) if xs else 0.0

    tests = sum(len(t.check.tests) for t in turns)
    adv = [a for t in turns for a in (t.adv_gen, t.adv_ver)]
    return {
        "chains": len(chains),
        "reward/outcome_mean": mean(c.outcome for c in chains),
        "reward/generation_mean": mean(t.r_gen for t in turns),
        "reward/verification_mean": mean(t.r_ver for t in turns),
        "solved/turn1_frac": mean(float(bool(c.turns[0].check.solved)) for c in chains),
        "rounds/mean": mean(len(c.turns) for c in chains),
        "verify/self_verified_frac": mean(float(t.check.verdict) for t in turns),
        "verify/tests_per_round": tests / max(1, len(turns)),
        "verify/valid_frac": sum(t.check.n_valid for t in turns) / tests if tests else 0.0,
        "format/rounds_with_issues": mean(float(bool(t.issues)) for t in turns),
        "advantage/mean": mean(adv),
        "advantage/abs_mean": mean(map(abs, adv)),
        "trajectories/kept": len(turns),
    }


def train_reveal(
    config: MurphyConfig,
    output_dir: str | Path,
    reveal: ReVealConfig | None = None,
    resume: bool = False,
    *,
    executor: Any = None,
    tasks: list | None = None,
    callbacks: list | None = None,
) -> Path:
    """Train with ReVeal from a MurphyConfig (any profile: smoke / toy / paper); returns the final model's folder.

    The run lifecycle of `murphy_lab.train.train` (config.yaml, checkpoints, metrics.jsonl, resume, final/), with
    chains/step_N.jsonl in place of trees/ and reveal.yaml beside config.yaml.
    """
    reveal = (reveal or ReVealConfig()).validate_fields()
    return lifecycle.train(
        as_chains(config, reveal),
        output_dir,
        resume,
        executor=executor,
        tasks=tasks,
        callbacks=callbacks,
        trainer_cls=ReVealTrainer,
        trainer_kwargs={"reveal": reveal},
        files={"reveal.yaml": yaml.safe_dump(dataclasses.asdict(reveal), sort_keys=False)},
    )
