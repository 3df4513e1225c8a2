"""`MuCodeConfig`: every knob of a µCode run, the published values as defaults (profile presets: murphy_lab.profiles).

Published values come from the µCode paper (Jain et al., ICML 2025, arXiv 2502.20380) and its official script
`bash/mucode.sh` (github.com/portal-cornell/muCode); each field's docstring says which. Loadable from YAML or JSON;
validated before any model loads (a bad field raises ValueError naming it).

    cfg = MuCodeConfig.for_profile("smoke")
    cfg = MuCodeConfig.from_dict({"method": "mucode", "profile": "toy", "rounds": 1})
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from murphy_lab.cli import refuse
from murphy_lab.fields import type_problems
from murphy_lab.profiles import Profile, get_profile

VERIFIER_LOSSES = ("bt", "bce")
RELABEL_KEYS = ("oracle+verifier", "verifier", "oracle")
SELECTIONS = ("verifier", "public+verifier", "random")
SFT_FROM = ("base", "previous")
REMOVED = {  # fields that no longer exist, with the reason (a config that sets one is refused)
    "include_reference": "µCode's expert relabels among SAMPLED candidates only (oracle pass rate + learned "
    "verifier); a gold reference among the candidates is supervision no RL method gets (docs/mucode.md, "
    "'Candidates of the expert')",
}


@dataclass
class MuCodeConfig:
    """A µCode run: rollouts -> verifier -> relabel -> SFT, `rounds` times, then evaluation."""

    # --- what to train ------------------------------------------------------------------------------------------
    profile: str = "paper"
    """'smoke' (tiny random model, 4 hand-made tasks), 'toy' (murphy_lab.toy), 'paper' (a real model, KodCode)."""
    model: str = ""
    """Generator base checkpoint (folder or hub id). Empty: the profile builds / names one."""
    verifier_model: str = ""
    """Verifier base checkpoint. Empty: the generator's base, as in µCode (RM_BASE_MODEL_NAME = BASE_MODEL_NAME)."""
    tasks: str = ""
    """Training tasks: a task source of murphy_lab.tasks.load_tasks (e.g. 'kodcode', 'toy') or 'module:function'."""
    task_args: dict = field(default_factory=dict)
    """Keyword arguments for the training-task loader (e.g. {n: 1000})."""
    n_train_tasks: int = 0
    """Train on the first n tasks of the training set only; 0 = all. µCode's budget is rounds × tasks × chains, not
    steps (the toy profile: 200 of the 512 toy training tasks every method is given; docs/mucode.md)."""
    eval_tasks: str = ""
    """Evaluation tasks (same syntax as `tasks`). Empty: the profile's first benchmark (`profiles.benchmark_tasks`)."""
    eval_task_args: dict = field(default_factory=dict)
    """Keyword arguments for the evaluation-task loader."""
    chat: bool = False
    """Chat models: prompts/targets as user/assistant messages through the tokenizer's chat template (rollouts,
    SFT and verifier alike; murphy_lab.experiments sets it to the format the µCode row is evaluated in)."""
    chat_template_kwargs: dict = field(default_factory=dict)
    """Extra chat-template arguments for every rendering (e.g. {enable_thinking: false} for Qwen3)."""
    use_vllm: bool = False
    """Generate rollouts and evaluation with vLLM (needs CUDA) instead of transformers (MurphyConfig's field)."""
    seed: int = 0
    """Seed for sampling, pair construction and training."""

    # --- expert iteration ---------------------------------------------------------------------------------------
    rounds: int = 2
    """Generator updates. mucode.sh runs 2 (SFT iter 1, 2) and trains a 3rd verifier on the last generator's
    rollouts (`final_verifier`), i.e. the paper's 3 iterations of verifier training."""
    final_verifier: bool = True
    """After the last round, roll out the final generator and train one more verifier for best-of-N (mucode.sh)."""

    # --- rollouts (µCode §4: multi-turn chains with public-test feedback) ----------------------------------------
    rollouts: int = 15
    """Chains per task (mucode.sh NUM_ROLLOUTS=15)."""
    turns: int = 3
    """Attempts per chain (mucode.sh MAX_STEPS=3); a chain stops when the visible tests pass."""
    temperature: float = 0.7
    """Rollout sampling temperature (mucode.sh: 0.7)."""
    top_p: float = 1.0
    """Rollout nucleus sampling (mucode.sh TOP_P=1.0)."""
    max_new_tokens: int = 1024
    """Completion budget per attempt (not stated by µCode; our choice)."""

    # --- verifier (µCode §4.2: a learned verifier trained on the generator's own samples) -----------------------
    verifier_loss: str = "bt"
    """'bt' (Bradley-Terry, the paper's choice) or 'bce' (pointwise, the paper's ablation; BT was better)."""
    pairs_per_task: int = 32
    """(correct, incorrect) pairs drawn with replacement per task (convert_multiturn_preference NUM_RM_SAMPLES=32)."""
    verifier_lr: float = 1e-6
    """Verifier learning rate (mucode.sh RM_LR=1e-6)."""
    verifier_epochs: float = 2
    """Verifier epochs (RM_TRAIN_EPOCHS=2)."""
    verifier_batch_size: int = 4
    """Pairs per device step (RM_PER_DEVICE_TRAIN_BATCH_SIZE=4)."""
    verifier_grad_accum: int = 4
    """Gradient accumulation (mucode.sh: 4)."""
    verifier_max_length: int = 2048
    """Longest verifier input in tokens; longer pairs are dropped (mucode.sh --max_token_length 2048)."""

    # --- relabeling (one-step recoverability) -------------------------------------------------------------------
    relabel_with: str = "oracle+verifier"
    """Expert's choice key among a task's candidates: 'oracle+verifier' (create_merged_RS_data.py: verifier score
    + 100 * hidden-test label), 'verifier' (learned verifier only), 'oracle' (hidden pass rate, verifier breaks ties)."""
    num_to_relabel: int = 3
    """Failed chains relabeled per task, highest verifier score first (NUM_TO_RELABEL=3); 0 = all of them."""
    keep_positive: bool = True
    """Also train on correct chains with their own final answer (--merge_positive_data in mucode.sh)."""

    # --- SFT of the generator -----------------------------------------------------------------------------------
    sft_lr: float = 5e-7
    """Generator learning rate (mucode.sh SFT_LR=5e-7)."""
    sft_epochs: float = 2
    """SFT epochs per round (SFT_TRAIN_EPOCHS=2)."""
    sft_batch_size: int = 1
    """Rows per device step (SFT_PER_DEVICE_TRAIN_BATCH_SIZE=1)."""
    sft_grad_accum: int = 4
    """Gradient accumulation (mucode.sh: 4)."""
    sft_max_length: int = 8192
    """Longest SFT row in tokens (mucode.sh --max_seq_length 8192)."""
    sft_from: str = "base"
    """Each round fine-tunes 'base' on all relabeled data so far (mucode.sh) or the 'previous' round's model."""

    # --- evaluation ---------------------------------------------------------------------------------------------
    evaluate: bool = True
    """Run the eval stage at the end (off when a caller such as murphy_lab.experiments evaluates the model itself)."""
    iters: tuple = (1, 3, 5)
    """Iter-k values reported (MURPHY's table: Iter-1/3/5)."""
    runs: int = 3
    """Evaluation repeats (mean ± std)."""
    best_of_n: int = 5
    """N candidates per turn for verifier best-of-N (best_of_n.sh takes N as an argument; our default)."""
    selection: str = "verifier"
    """Best-of-N pick: 'verifier' (lv), 'public+verifier' (pt+lv), 'random' (best_of_n.sh settings)."""
    eval_temperature: float = 0.7
    """Sampling temperature at evaluation (best-of-N needs > 0)."""
    n_eval_tasks: int = 0
    """Evaluate on the first n tasks only; 0 = all."""

    # --- machinery ----------------------------------------------------------------------------------------------
    executor: dict = field(default_factory=dict)
    """Keyword arguments for murphy_lab.executor.Executor (timeout, memory_mb, workers)."""
    bf16: bool | None = None
    """bf16 training; None = on when CUDA is available."""
    trl: dict = field(default_factory=dict)
    """Extra fields passed verbatim to TRL's RewardConfig and SFTConfig (e.g. {logging_steps: 1})."""

    # ------------------------------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        if isinstance(self.iters, list):
            self.iters = tuple(self.iters)
        self.validate()

    def stage_knobs(self, stage: str) -> dict:
        """The keyword arguments of a training stage, `stage` 'sft' (`sft.sft_generator`) or 'verifier'
        (`verifier.train_verifier`): its own `<stage>_lr`, `_epochs`, `_batch_size`, `_grad_accum` and `_max_length`,
        and the run's chat, seed, bf16 and TRL fields."""
        own = {
            k: getattr(self, f"{stage}_{k}")
            for k in ("lr", "epochs", "batch_size", "grad_accum", "max_length")
        }
        run = dict(
            chat=self.chat, chat_template_kwargs=self.chat_template_kwargs, seed=self.seed, bf16=self.bf16
        )
        return {**own, **run, "trl_kwargs": self.trl}

    def validate(self) -> MuCodeConfig:
        """Raise `Refused` (a ValueError) naming every field with a problem, one line each. Returns self."""
        refuse(self.problems())
        return self

    def problems(self) -> list[str]:
        """Every problem of this config, one line each naming its field (a value of the wrong type alone)."""
        typed = type_problems(self)
        if typed:
            return typed
        out = []
        for name in (
            "rounds",
            "rollouts",
            "turns",
            "max_new_tokens",
            "pairs_per_task",
            "verifier_batch_size",
            "verifier_grad_accum",
            "verifier_max_length",
            "sft_batch_size",
            "sft_grad_accum",
            "sft_max_length",
            "runs",
            "best_of_n",
        ):
            if getattr(self, name) <= 0:
                out.append(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("verifier_lr", "verifier_epochs", "sft_lr", "sft_epochs"):
            if getattr(self, name) <= 0:
                out.append(f"{name} must be a positive number, got {getattr(self, name)!r}")
        for name, allowed in (
            ("verifier_loss", VERIFIER_LOSSES),
            ("relabel_with", RELABEL_KEYS),
            ("selection", SELECTIONS),
            ("sft_from", SFT_FROM),
        ):
            if getattr(self, name) not in allowed:
                out.append(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if 0 < self.rollouts < 2:
            out.append(f"rollouts must be >= 2 (chains per task; µCode: 15), got {self.rollouts!r}")
        for name in ("num_to_relabel", "n_train_tasks"):
            if getattr(self, name) < 0:
                out.append(f"{name} must be an integer >= 0 (0 = all), got {getattr(self, name)!r}")
        if not self.iters or any(not isinstance(k, int) or k < 1 for k in self.iters):
            out.append(f"iters must be positive integers, got {self.iters!r}")
        if not 0 < self.top_p <= 1 or self.temperature < 0 or self.eval_temperature < 0:
            out.append("top_p must lie in (0, 1] and temperatures must be >= 0")
        if self.best_of_n > 1 and self.eval_temperature == 0:
            out.append("eval_temperature must be > 0 when best_of_n > 1 (greedy candidates are identical)")
        return out

    # --- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> MuCodeConfig:
        """Build from a dict (a YAML file's content). `profile` presets apply first, the dict's fields win.

        A `method` key (the trainer CLI's dispatch field) must be 'mucode' and is dropped; unknown keys raise.
        """
        d = dict(d)
        method = d.pop("method", "mucode")
        if method != "mucode":
            raise ValueError(f"method must be 'mucode' for this entry point, got {method!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known - set(REMOVED))  # removed fields get their own message (for_profile)
        if unknown:
            raise ValueError(f"unknown µCode config field(s): {unknown}; known: {sorted(known)}")
        return cls.for_profile(d.pop("profile", "paper"), **d)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> MuCodeConfig:
        """Read YAML (or JSON) from `path`; `overrides` win."""
        text = Path(path).read_text()
        d = yaml.safe_load(text) or {}
        if not isinstance(d, dict):
            raise ValueError(f"config file {path} must hold a mapping of fields, got {type(d).__name__}")
        d.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(d)

    @classmethod
    def for_profile(cls, profile: str | Profile, **overrides: Any) -> MuCodeConfig:
        """The profile's µCode presets (`murphy_lab.profiles`, `Profile.mucode`), then `overrides`; `profile`: a name
        or a resolved `Profile` (the config records its name)."""
        profile = get_profile(profile)
        removed = sorted(set(overrides) & set(REMOVED))
        if removed:
            raise ValueError(f"{removed[0]} was removed: {REMOVED[removed[0]]}")
        return cls(**{**copy.deepcopy(dict(profile.mucode)), "profile": profile.name, **overrides})

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["iters"] = list(self.iters)
        return d

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
