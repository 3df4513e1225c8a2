"""Training ReVeal through the TRL-based trainer: `ReVealTrainer(MurphyTrainer)` swaps the tree for chains.

Only the rollout-and-advantage step is replaced (`_generate_and_score_completions`); generation (TRL's
`_generate_single_turn`: transformers / vLLM), row padding, reference/old log-probs and the loss are MurphyTrainer's
and TRL's, unchanged:

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
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from murphy_lab.baselines.reveal.chain import Chain, render, run_chains
from murphy_lab.baselines.reveal.format import first_prompt
from murphy_lab.baselines.reveal.rewards import tapo_groups
from murphy_lab.config import MurphyConfig
from murphy_lab.trainer import MurphyTrainer
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


class ReVealTrainer(MurphyTrainer):
    """MurphyTrainer whose rollouts are ReVeal chains with TAPO per-token advantages (see the module docstring).

    `murphy` supplies G (= g1), sampling, optimisation and `reward_tests` (the oracle: hidden by default); its
    mode/g2/turns are set to the chain shape (grpo_mt, 1, rounds) so MurphyConfig's checks apply.
    """

    def __init__(self, model, args, murphy: MurphyConfig, tasks: list, executor: Any = None,
                 reveal: ReVealConfig | None = None, **kwargs: Any):  # fmt: skip
        self.reveal = (reveal or ReVealConfig()).validate_fields()
        murphy = dataclasses.replace(murphy, mode="grpo_mt", g2=1, turns=self.reveal.rounds, b_grp=None, b_traj=None)
        super().__init__(model=model, args=args, murphy=murphy, tasks=tasks, executor=executor, **kwargs)

    def _generate_and_score_completions(self, inputs: list[dict]) -> dict[str, Any]:
        g, rv, m = self.num_generations, self.reveal, self.murphy  # g = G chains per task
        t0 = time.perf_counter()
        tasks = []
        for i in range(0, len(inputs), g):
            block = {row["task_id"] for row in inputs[i : i + g]}
            if len(block) != 1:
                raise RuntimeError(f"rows {i}..{i + g - 1} mix tasks {sorted(block)}: a group must live on one rank")
            tasks.append(self.tasks_by_id[block.pop()])
        filler = render([{"role": "user", "content": first_prompt(tasks[0].prompt)}], m.chat)
        sampler = _ChainSampler(self, filler)
        executor = _Timed(self.executor)
        chains = run_chains(tasks, sampler, executor, n=g, rounds=rv.rounds, oracle=m.reward_tests,
                            validate=rv.validate, chat=m.chat, max_tests=rv.max_tests,
                            stop_on_verdict=rv.stop_on_verdict)  # fmt: skip
        if self.accelerator.num_processes > 1:  # every rank makes the same number of generation calls
            while sampler.calls < rv.rounds:
                sampler([], 1)
        t_grown = time.perf_counter()
        tapo_groups(chains, gamma=rv.gamma)  # rewards + TAPO advantages, per task group
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
        t_end = time.perf_counter()
        stats = chain_stats(chains)
        stats.update({"rows/padding": len(adv) - len(turns), "time/generation_s": sampler.seconds,
                      "time/execution_s": executor.seconds, "time/scoring_s": t_end - t_grown,
                      "time/rollout_s": t_end - t0})  # fmt: skip
        self.rollout_stats = stats
        for k, v in stats.items():
            self._metrics["train"][k].append(v)
        self._dump_chains(chains)
        return batch

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

    def _dump_chains(self, chains: list[Chain]) -> None:
        """output_dir/chains/step_NNNNNN[.rankR].jsonl: one JSON line per chain (texts, tests, rewards, advantages)."""
        folder = Path(self.args.output_dir) / "chains"
        folder.mkdir(parents=True, exist_ok=True)
        rank = f".rank{self.accelerator.process_index}" if self.accelerator.num_processes > 1 else ""
        with open(folder / f"step_{self.state.global_step + 1:06d}{rank}.jsonl", "w") as f:
            for c in chains:
                f.write(json.dumps({"step": self.state.global_step + 1, **c.to_dict()}) + "\n")


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


class _ChainSampler:
    """`sample(prompts, n)` through TRL's `_generate_single_turn` (as MurphyTrainer's sampler), for prompts that
    are strings or chat messages; `pending` keeps each completion's prompt/completion token ids and logprobs."""

    def __init__(self, trainer: ReVealTrainer, filler: Any):
        self.trainer, self.filler = trainer, filler
        self.calls, self.seconds, self.pending = 0, 0.0, []

    def __call__(self, prompts: list, n: int) -> list[list[str]]:
        t0, tr = time.perf_counter(), self.trainer
        k = width = len(prompts)
        if tr.accelerator.num_processes > 1:
            width = int(tr.accelerator.gather(torch.tensor([k], device=tr.accelerator.device)).max())
        self.calls += 1
        if width == 0:
            return []
        padded = list(prompts) + [self.filler] * (width - k)
        prompt_ids = tr._tokenize_prompts(padded)[0]
        repeated = [list(p) for p in prompt_ids for _ in range(n)]  # each prompt n times in a row
        completion_ids, logprobs = tr._generate_single_turn(repeated, None, {}, num_generations=n)
        completion_ids = [list(c) for c in completion_ids[: k * n]]
        texts = tr.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        self.pending = [{"prompt_ids": repeated[j], "completion_ids": completion_ids[j],
                         "sampling_logps": None if logprobs is None else list(logprobs[j])} for j in range(k * n)]
        self.seconds += time.perf_counter() - t0
        return [texts[i * n : (i + 1) * n] for i in range(k)]


class _Timed:
    def __init__(self, executor: Any):
        self.executor, self.seconds = executor, 0.0

    def run_many(self, jobs: list) -> list:
        t0 = time.perf_counter()
        out = self.executor.run_many(jobs)
        self.seconds += time.perf_counter() - t0
        return out


def train_reveal(config: MurphyConfig, output_dir: str | Path, reveal: ReVealConfig | None = None,
                 resume: bool = False, *, executor: Any = None, tasks: list | None = None,
                 callbacks: list | None = None) -> Path:  # fmt: skip
    """Train with ReVeal from a MurphyConfig (any profile: smoke / toy / paper); returns the final model's folder.

    Writes what `murphy_lab.train.train` writes (config.yaml, checkpoints, metrics.jsonl, final/), with
    chains/step_N.jsonl in place of trees/ and reveal.yaml beside config.yaml.
    """
    import yaml

    from murphy_lab.config import resolve
    from murphy_lab.train import last_checkpoint

    reveal = (reveal or ReVealConfig()).validate_fields()
    config = dataclasses.replace(config, mode="grpo_mt", g2=1, turns=reveal.rounds, b_grp=None, b_traj=None)
    config.validate()
    output_dir = Path(output_dir)
    checkpoint = last_checkpoint(output_dir) if output_dir.exists() else None
    if checkpoint is not None and not resume:
        raise ValueError(f"output_dir {str(output_dir)!r} already holds a run ({checkpoint.name}); pass resume=True")
    output_dir.mkdir(parents=True, exist_ok=True)
    main_process = int(os.environ.get("RANK", "0")) == 0
    if main_process and checkpoint is None:
        (output_dir / "metrics.jsonl").unlink(missing_ok=True)
    if tasks is None:
        model, tasks = resolve(config, output_dir)
    else:
        model = config.model or resolve(config, output_dir)[0]
    resolved = dataclasses.replace(config, model=str(model))
    if main_process:
        resolved.to_yaml(output_dir / "config.yaml")
        (output_dir / "reveal.yaml").write_text(yaml.safe_dump(dataclasses.asdict(reveal), sort_keys=False))
    own = executor is None
    if own:
        from murphy_lab.executor import Executor

        executor = Executor(**config.executor)
    try:
        trainer = ReVealTrainer(model=str(model), args=config.to_grpo_config(output_dir), murphy=resolved,
                                tasks=tasks, executor=executor, reveal=reveal, callbacks=callbacks)  # fmt: skip
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        if own and hasattr(executor, "close"):
            executor.close()
    final = output_dir / "final"
    trainer.save_model(str(final))
    return final


def load_recipe(path: str | Path, **overrides: Any) -> tuple[MurphyConfig, ReVealConfig]:
    """A ReVeal recipe (reproduce/configs/<model>/reveal.yaml): MurphyConfig fields plus a `reveal:` mapping of
    ReVealConfig fields. `overrides` may name fields of either; both configs are validated (errors name the field)."""
    import yaml

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
    dataclasses.replace(config, mode="grpo_mt", g2=1, turns=reveal.rounds).validate()  # as train_reveal runs it
    return config, reveal


def paper_train(exp: Any, base_model: str, output_dir: str | Path, **overrides: Any) -> Path:
    """The paper profile: reproduce/configs/<model>/reveal.yaml (seed and base model from the experiment), launched
    like every other method's recipe (launch/train_8xh100.sh with 8 GPUs, else colocate_1gpu.sh) with
    ENTRY=murphy_lab.baselines.reveal; waits for it and returns the final model's folder."""
    import subprocess

    import torch

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
    import yaml

    from murphy_lab.experiments import paper_recipe

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
    import argparse

    from murphy_lab.train import _apply_nested, _parse_sets

    p = argparse.ArgumentParser(prog="python -m murphy_lab.baselines.reveal", description="Train ReVeal from a recipe")
    p.add_argument("--config", required=True, help="reveal.yaml: MurphyConfig fields and a `reveal:` mapping")
    p.add_argument("--output-dir", required=True, help="run folder")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --output-dir")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override MurphyConfig/ReVealConfig fields")
    a = p.parse_args(argv)
    plain, nested = _parse_sets(a.set)  # FIELD=VALUE, and dotted items (task_args.path=...) merged into mappings
    config, reveal = load_recipe(a.config, **plain)
    config = _apply_nested(config, nested)
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
        from murphy_lab.toy import make_tasks
        from murphy_lab.toy.execution import get_executor

        tasks = make_tasks("train", n=8 if exp.profile == "smoke" else 512, seed=exp.seed)
        executor = get_executor(workers=1)
    elif exp.train_data == "kodcode-1k":
        kw.update(tasks="kodcode", task_args=dict(n=1000, seed=exp.seed))
    else:
        raise ValueError(f"train_data: unknown training set {exp.train_data!r} for ReVeal")
    config = MurphyConfig.for_profile(exp.profile, **kw)
    return train_reveal(config, output_dir, reveal, resume=True, executor=executor, tasks=tasks)
