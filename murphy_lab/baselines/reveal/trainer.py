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
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

from murphy_lab.baselines.reveal.chain import Chain, render, run_chains
from murphy_lab.baselines.reveal.format import first_prompt
from murphy_lab.baselines.reveal.rewards import tapo_groups
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import get_profile
from murphy_lab.toy.execution import get_executor
from murphy_lab.toy.world import make_tasks
from murphy_lab.train import apply_nested, parse_sets
from murphy_lab.trainer import MurphyTrainer, TimedExecutor, TurnSampler
from murphy_lab.trainer import run as lifecycle
from murphy_lab.tree import Node


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
    """The MurphyConfig of a ReVeal run: G chains of `rounds` rounds (mode grpo_mt, G2 = 1, no pruning), so that
    MurphyConfig's checks and MurphyTrainer's round (one generation call per round on every rank) apply."""
    return dataclasses.replace(config, mode="grpo_mt", g2=1, turns=reveal.rounds, b_grp=None, b_traj=None)


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


def load_recipe(path: str | Path, **overrides: Any) -> tuple[MurphyConfig, ReVealConfig]:
    """A ReVeal recipe (reproduce/configs/<model>/reveal.yaml): MurphyConfig fields plus a `reveal:` mapping of
    ReVealConfig fields. `overrides` may name fields of either; both configs are validated (errors name the field)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config: no such file {str(path)!r}")
    d = yaml.safe_load(path.read_text()) or {}
    if not isinstance(d, dict) or not isinstance(d.get("reveal", {}), dict):
        raise ValueError(f"config {str(path)!r} must be a mapping of MurphyConfig fields with a `reveal:` mapping")
    rv_names = {f.name for f in dataclasses.fields(ReVealConfig)}
    rv = {**d.pop("reveal", {}), **{k: v for k, v in overrides.items() if k in rv_names}}
    unknown = sorted(set(rv) - rv_names)
    if unknown:
        raise ValueError(f"reveal: unknown ReVealConfig field(s) {unknown}; known: {sorted(rv_names)}")
    d.update({k: v for k, v in overrides.items() if k not in rv_names})
    reveal = ReVealConfig(**rv).validate_fields()
    config = MurphyConfig.for_profile(d.pop("profile", "paper"), **d)
    as_chains(config, reveal).validate()  # as train_reveal runs it
    return config, reveal


def paper_train(exp: Any, base_model: str, output_dir: str | Path, **overrides: Any) -> Path:
    """The paper profile: reproduce/configs/<model>/reveal.yaml (seed and base model from the experiment), launched
    like every other method's recipe (launch/train_8xh100.sh with 8 GPUs, else colocate_1gpu.sh) with
    ENTRY=murphy_lab.baselines.reveal; waits for it and returns the final model's folder."""
    # experiments dispatches methods to this module: importing it at the top would make an import cycle
    from murphy_lab.experiments import REPO

    output_dir = Path(output_dir)
    cfg_path = paper_recipe_file(exp, base_model, output_dir, **overrides)
    script = "train_8xh100.sh" if torch.cuda.device_count() >= 8 else "colocate_1gpu.sh"
    launcher = REPO / "reproduce" / "configs" / "launch" / script
    env = {**os.environ, "ENTRY": "murphy_lab.baselines.reveal"}
    subprocess.run(["bash", str(launcher), str(cfg_path), str(output_dir)], check=True, env=env)
    return output_dir / "final"


def paper_recipe_file(exp: Any, base_model: str, output_dir: str | Path, **overrides: Any) -> Path:
    """Write the recipe a paper ReVeal run launches with (reveal.yaml + the experiment's seed, base model and
    overrides) beside `output_dir`, check it with `load_recipe`, and return its path."""
    from murphy_lab.experiments import paper_recipe  # local: see paper_train

    output_dir = Path(output_dir)
    recipe = yaml.safe_load(paper_recipe(exp).read_text())
    rv_names = {f.name for f in dataclasses.fields(ReVealConfig)}
    fields = {**dict(getattr(exp, "overrides", ())), **overrides}
    recipe.update(seed=exp.seed, model=base_model, **{k: v for k, v in fields.items() if k not in rv_names})
    recipe["reveal"] = {**recipe.get("reveal", {}), **{k: v for k, v in fields.items() if k in rv_names}}
    cfg_path = output_dir.parent / f"{output_dir.name}.recipe.yaml"  # outside OUT: the trainer wants it empty
    cfg_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    load_recipe(cfg_path)  # a bad field fails here, before any GPU is touched
    return cfg_path


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


def experiment_train(exp: Any, base_model: str, output_dir: str | Path, **overrides: Any) -> Path:
    """`train_fn(exp, base_model, output_dir)` for murphy_lab.experiments: ReVeal on the experiment's training data.

    Evaluation is the caller's (the ReVeal column is the Iter-k pass@1 of the trained model under the experiment's
    scaffold, like every other column; `evaluate_reveal` gives ReVeal's own scaffold). Training data: the toy
    world's train split for train_data "toy" (8 tasks in the smoke profile), KodCode-1k for "kodcode-1k"; the paper
    profile runs its recipe reproduce/configs/<model>/reveal.yaml through the launch scripts (`paper_train`).
    `overrides` may hold ReVealConfig fields (rounds, gamma, ...) and MurphyConfig fields.
    """
    if exp.profile == "paper":  # the same recipe and launch as every other method (reproduce/configs/<model>/)
        return paper_train(exp, base_model, output_dir, **overrides)
    rv_names = {f.name for f in dataclasses.fields(ReVealConfig)}
    fields = {**dict(getattr(exp, "overrides", ())), **overrides}
    reveal = ReVealConfig(**{k: v for k, v in fields.items() if k in rv_names})
    kw = {k: v for k, v in fields.items() if k not in rv_names}
    kw.update(model=base_model, seed=exp.seed)
    tasks, executor = None, None
    if exp.train_data == "toy":
        tasks = make_tasks("train", n=get_profile(exp.profile).train_tasks, seed=exp.seed)
        executor = get_executor(workers=1)
    elif exp.train_data == "kodcode-1k":
        kw.update(tasks="kodcode", task_args=dict(n=1000, seed=exp.seed))
    else:
        raise ValueError(f"train_data: unknown training set {exp.train_data!r} for ReVeal")
    config = MurphyConfig.for_profile(exp.profile, **kw)
    return train_reveal(config, output_dir, reveal, resume=True, executor=executor, tasks=tasks)
