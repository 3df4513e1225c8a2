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

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

from murphy_lab.baselines.reveal.chain import Chain, render, run_chains
from murphy_lab.baselines.reveal.format import first_prompt
from murphy_lab.baselines.reveal.rewards import tapo_groups
from murphy_lab.config import MurphyConfig
from murphy_lab.modes import mode
from murphy_lab.train import apply_nested, parse_sets
from murphy_lab.trainer import MurphyTrainer, TimedExecutor, TurnSampler
from murphy_lab.trainer import run as lifecycle
from murphy_lab.tree import Node

MODE = "grpo_mt"  # ReVeal's trainer mode (its Method.mode): G chains of `rounds` rounds, G2 = 1 (`as_chains`)


@dataclass
class ReVealConfig:
    """ReVeal's own knobs; everything else (G, lr, β, profiles, TRL fields) is the MurphyConfig's."""

    rounds: int = 3
    """Round budget in training (one round = a generation turn + a verification turn). ReVeal: 3."""
    gamma: float = 1.0
    """Discount of the turn returns G_t = Σ γ^{t'−t} r_{t'} (the paper does not state one; 1 = plain sum)."""
    max_tests: int = 10
    """Test cases run per verification turn (the rest are reported and ignored)."""
    validate: bool = True
    """Check the model's tests against the task's reference solution (tasks without one run them unvalidated)."""
    stop_on_verdict: bool = True
    """A chain stops when its program passes all its valid tests (else it always plays `rounds` rounds)."""

    def validate_fields(self) -> ReVealConfig:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"rounds: must be an integer >= 1, got {self.rounds!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma: must lie in [0, 1], got {self.gamma!r}")
        if isinstance(self.max_tests, bool) or not isinstance(self.max_tests, int) or self.max_tests < 1:
            raise ValueError(f"max_tests: must be an integer >= 1, got {self.max_tests!r}")
        return self


def as_chains(config: MurphyConfig, reveal: ReVealConfig) -> MurphyConfig:
    """The MurphyConfig of a ReVeal run: G chains of `rounds` rounds (its mode's fields: grpo_mt, G2 = 1; no
    pruning), so that MurphyConfig's checks and MurphyTrainer's round (one generation call per round on every rank)
    apply. ReVeal scores and weighs its chains itself (TAPO: `score_trees`, `build_rows` below)."""
    return dataclasses.replace(config, **mode(MODE).fields(), turns=reveal.rounds, b_grp=None, b_traj=None)


class ReVealTrainer(MurphyTrainer):
    """MurphyTrainer whose rollouts are ReVeal chains with TAPO per-token advantages (see the module docstring).

    `murphy` supplies G (= g1), sampling, optimisation and `reward_tests` (the oracle: hidden by default); its
    mode/g2/turns are set to the chain shape (`as_chains`).
    """

    def __init__(self, model, args, murphy: MurphyConfig, tasks: list, executor: Any = None,
                 reveal: ReVealConfig | None = None, **kwargs: Any):  # fmt: skip
        self.reveal = (reveal or ReVealConfig()).validate_fields()
        super().__init__(model=model, args=args, murphy=as_chains(murphy, self.reveal), tasks=tasks,
                         executor=executor, **kwargs)  # fmt: skip

    def filler_prompt(self, tasks: list) -> Any:
        return render([{"role": "user", "content": first_prompt(tasks[0].prompt)}], self.murphy.chat)

    def grow_trees(self, tasks: list, sample: TurnSampler, execute: TimedExecutor) -> list[Chain]:
        rv, m = self.reveal, self.murphy
        return run_chains(tasks, sample, execute, n=self.num_generations, rounds=rv.rounds, reward_tests=m.reward_tests,
                          validate=rv.validate, chat=m.chat, max_tests=rv.max_tests,
                          stop_on_verdict=rv.stop_on_verdict)  # fmt: skip

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
            nodes.append(Node(advantage=t.adv_gen, meta={"prompt_ids": t.meta["prompt_ids"],
                                                          "completion_ids": ids[:k_cut],
                                                          "sampling_logps": None if logps is None else logps[:k_cut]}))
            spans.append((k_split, k_cut))
        batch = self._batch(nodes)
        adv = torch.zeros_like(batch["completion_ids"], dtype=torch.float32)  # (B, C): one advantage per token
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


def train_reveal(config: MurphyConfig, output_dir: str | Path, reveal: ReVealConfig | None = None,
                 resume: bool = False, *, executor: Any = None, tasks: list | None = None,
                 callbacks: list | None = None) -> Path:  # fmt: skip
    """Train with ReVeal from a MurphyConfig (any profile: smoke / toy / paper); returns the final model's folder.

    The run lifecycle of `murphy_lab.train.train` (config.yaml, checkpoints, metrics.jsonl, resume, final/), with
    chains/step_N.jsonl in place of trees/ and reveal.yaml beside config.yaml.
    """
    reveal = (reveal or ReVealConfig()).validate_fields()
    return lifecycle.train(as_chains(config, reveal), output_dir, resume, executor=executor, tasks=tasks,
                           callbacks=callbacks, trainer_cls=ReVealTrainer, trainer_kwargs={"reveal": reveal},
                           files={"reveal.yaml": yaml.safe_dump(dataclasses.asdict(reveal), sort_keys=False)})


REVEAL_FIELDS = {f.name for f in dataclasses.fields(ReVealConfig)}


def split_fields(fields: dict) -> tuple[dict, dict]:
    """(MurphyConfig fields, ReVealConfig fields) of a ReVeal recipe's mapping: its `reveal:` mapping, then any
    ReVealConfig field named at the top level (an override); unknown ReVealConfig fields are refused by name."""
    d = dict(fields)
    if not isinstance(d.get("reveal", {}), dict):
        raise ValueError("reveal: must be a mapping of ReVealConfig fields")
    rv = {**d.pop("reveal", {}), **{k: d.pop(k) for k in list(d) if k in REVEAL_FIELDS}}
    unknown = sorted(set(rv) - REVEAL_FIELDS)
    if unknown:
        raise ValueError(f"reveal: unknown ReVealConfig field(s) {unknown}; known: {sorted(REVEAL_FIELDS)}")
    return d, rv


def recipe_configs(fields: dict, profile: str = "paper") -> tuple[MurphyConfig, ReVealConfig]:
    """The two configs of a ReVeal recipe's mapping (`split_fields`); the ReVealConfig is validated, the
    MurphyConfig is not yet (`load_recipe` and the method entry validate it as `train_reveal` runs it)."""
    murphy, rv = split_fields(fields)
    return MurphyConfig.for_profile(murphy.pop("profile", profile), **murphy), ReVealConfig(**rv).validate_fields()


def load_recipe(path: str | Path, **overrides: Any) -> tuple[MurphyConfig, ReVealConfig]:
    """A ReVeal recipe (reproduce/configs/<model>/reveal.yaml): MurphyConfig fields plus a `reveal:` mapping of
    ReVealConfig fields. `overrides` may name fields of either; both configs are validated (errors name the field)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config: no such file {str(path)!r}")
    d = yaml.safe_load(path.read_text()) or {}
    if not isinstance(d, dict):
        raise ValueError(f"config {str(path)!r} must be a mapping of MurphyConfig fields with a `reveal:` mapping")
    config, reveal = recipe_configs({**d, **overrides})
    as_chains(config, reveal).validate()  # as train_reveal runs it
    return config, reveal


def main(argv: list[str] | None = None) -> Path:
    """`python -m murphy_lab.baselines.reveal --config reveal.yaml --output-dir DIR [--resume] [--set F=V ...]`."""
    p = argparse.ArgumentParser(prog="python -m murphy_lab.baselines.reveal", description="Train ReVeal from a recipe")
    p.add_argument("--config", required=True, help="reveal.yaml: MurphyConfig fields and a `reveal:` mapping")
    p.add_argument("--output-dir", required=True, help="run folder")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --output-dir")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override MurphyConfig/ReVealConfig fields")
    a = p.parse_args(argv)
    plain, nested = parse_sets(a.set)  # FIELD=VALUE, and dotted items (task_args.path=...) merged into mappings
    config, reveal = load_recipe(a.config, **plain)
    config = apply_nested(config, nested)
    final = train_reveal(config, a.output_dir, reveal, resume=a.resume)
    print(f"final model: {final}")
    return final
