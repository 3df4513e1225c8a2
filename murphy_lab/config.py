"""`MurphyConfig`: every knob of a MURPHY training run, with the paper's values as defaults.

One small dataclass (a docstring under each field), loadable from YAML, validated *before* any model loads, that
produces TRL's `GRPOConfig` for the trainer (`to_grpo_config`). Fields that TRL owns and we do not name here can be
passed through verbatim in `trl:` (any `GRPOConfig` field).

    cfg = MurphyConfig.from_yaml("reproduce/configs/qwen3-1.7b/murphy_mars.yaml")
    cfg = MurphyConfig.for_profile("smoke", mode="grpo_mt", g2=1)

A profile's presets, and how it becomes a model and tasks (`resolve`), live in `murphy_lab.profiles`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from murphy_lab import modes, profiles, trl_args
from murphy_lab.cli import merged, refuse
from murphy_lab.credit import CREDIT_RULES
from murphy_lab.fields import type_problems
from murphy_lab.policy.hf import cpu_bf16
from murphy_lab.preflight import looks_local
from murphy_lab.suggest import did_you_mean

# filler rows are exact for each (docs/training.md, decision 3); "group_sum" is the paper's aggregation,
# computed through TRL's "dapo" (docs/training.md, decision 8)
LOSS_TYPES = ("dapo", "bnpo", "grpo", "dr_grpo", "group_sum")
# report_to loggers whose package has another name
PIP_NAMES = {"azure_ml": "azureml-core", "flyte": "flytekit"}


@dataclass
class MurphyConfig:
    """A MURPHY / GRPO-MT / GRPO training run. Defaults are the paper's (arXiv 2511.07833, §4 and App.)."""

    # --- what to train ------------------------------------------------------------------------------------------
    profile: str = "paper"
    """Run profile: 'smoke' | 'toy' | 'paper' (or any name registered in murphy_lab.profiles)."""
    model: str = ""
    """Policy checkpoint: a local folder or a hub id (e.g. 'Qwen/Qwen3-1.7B'). Empty: the profile builds one."""
    tasks: str = ""
    """Training tasks: a name for murphy_lab.tasks.load_tasks (e.g. 'kodcode') or 'module:function'. Empty: profile's."""
    task_args: dict = field(default_factory=dict)
    """Keyword arguments for the task loader (e.g. {n: 1000, seed: 0, source: path-or-hub-id})."""
    reward_tests: str = "hidden"
    """Which tests give the training reward r(v) and feedback f(v): 'hidden' (default, Task docstring) or 'visible'."""
    chat: bool = False
    """Send prompts as one user message through the tokenizer's chat template (chat models such as Qwen3)."""
    chat_template_kwargs: dict = field(default_factory=dict)
    """Extra chat-template arguments, e.g. {enable_thinking: false} for Qwen3."""

    # --- the tree and the credit (MURPHY §3) --------------------------------------------------------------------
    mode: str = "murphy"
    """A name of murphy_lab.modes.MODES: 'murphy' (tree + retrospective credit), 'grpo_mt' (G chains, final reward
    broadcast), 'grpo' (single turn); the mode fixes G2 / S, the scoring rule and the loss groups."""
    credit: str = "mars"
    """Credit rule, a name of murphy_lab.credit.CREDIT_RULES: 'mars' (max over refinements, the paper's main rule),
    'mers' (discounted mean), 'none' (credit = reward, no backup), or a multi-turn rule beside them ('treerpo',
    'reward_to_go', 'turn_credit', 'mt_grpo', 'gigpo'; docs/credit_rules.md)."""
    gamma: float = 1.0
    """γ of every rule that reads one (MeRS: the paper ablates γ ∈ {0.9, 1.0}; reward-to-go, turn credit, GiGPO)."""
    credit_args: dict = field(default_factory=dict)
    """The credit rule's other knobs by name, e.g. {omega: 0.5} for 'gigpo' (CREDIT_RULES lists each rule's knobs,
    defaults and ranges). Empty: the rule's defaults."""
    g1: int = 8
    """G1: candidates per task at turn 1 (TRL's num_generations). Inferred from the paper's 72 = 8 + 8·8."""
    g2: int = 8
    """G2: refinements sampled per failed candidate (must be 1 for grpo_mt: one chain per turn-1 candidate)."""
    turns: int = 2
    """S: number of turns (the paper trains with S = 2; must be 1 for mode='grpo')."""
    b_grp: int | None = None
    """InterP budget: groups kept per turn s >= 2 (paper: 4, 72 -> 40 trajectories). None = off."""
    b_traj: int | None = None
    """IntraP budget: members kept per group (paper: 4, 72 -> 36 trajectories). None = off."""
    backup_on: str = "full"
    """Credit backup over the 'full' tree (pruning only filters the loss, as the paper's text says) or the 'pruned'
    tree (the paper's flowchart: prune, then back up). docs/notation.md, "Backup order", says why 'full'."""
    prune_method: str = "loo"
    """IntraP ranking: 'loo' (leave-one-out ΔVar, the paper's) or 'exact' (max-variance subset)."""

    # --- GRPO and optimisation (passed to TRL) ------------------------------------------------------------------
    beta: float = 0.04
    """KL coefficient β. Paper: 0.04 (TRL >= 0.19 defaults to 0, so we set it)."""
    learning_rate: float = 1e-6
    """AdamW learning rate. Paper: 1e-6."""
    epsilon: float = 0.2
    """Clip range ε of the ratio (standard GRPO value)."""
    loss_type: str = "dapo"
    """Loss aggregation: TRL's 'dapo' (token mean over the generation batch, TRL's default), 'bnpo', 'grpo',
    'dr_grpo', or 'group_sum', the paper's sum of per-group GRPO objectives (per sequence a token mean, per kept
    group a mean, summed over a tree's groups, mean over trees; the paper recipes use it)."""
    prefix_sharing: bool = True
    """Compute each shared prompt once per group in the loss and π_old / π_ref passes (exact; docs/performance.md).
    Falls back to TRL's row-by-row pass, with a one-line log, where the model or attention backend cannot share."""
    temperature: float = 1.0
    """Sampling temperature for every turn."""
    max_completion_length: int = 1024
    """Maximum new tokens per completion (every turn)."""
    per_device_train_batch_size: int = 8
    """Dataset rows per device per micro-step; rows are task prompts repeated G1 times, so tasks = this / g1."""
    gradient_accumulation_steps: int = 1
    """Micro-steps per optimizer step."""
    steps_per_generation: int | None = None
    """Micro-steps fed by one tree-building round (TRL; None = gradient_accumulation_steps)."""
    num_iterations: int = 1
    """Optimisation passes per tree-building round (μ in GRPO); > 1 activates clipping against π_old."""
    max_steps: int = -1
    """Optimizer steps; -1 = num_train_epochs over the tasks."""
    num_train_epochs: float = 1.0
    """Epochs over the training tasks when max_steps = -1."""
    seed: int = 0
    """Seed for sampling order, generation and initialisation."""
    bf16: bool | None = None
    """bfloat16 training; None = on iff a CUDA GPU is present. Also allowed on a CPU with bfloat16 instructions
    (AVX512-BF16, AMX-BF16, Arm BF16), where a LoRA run loads the frozen base weights in bf16 (the adapters stay
    float32) and a full fine-tuning keeps float32 weights under bf16 autocast (docs/performance.md, "bf16 on a CPU")."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (saves memory on long completions)."""
    use_peft: bool = False
    """Train LoRA adapters instead of every weight (TRL's ModelConfig convention; needs the `peft` package, the
    `lora` extra). The reference pass (β > 0) runs the same model with the adapters switched off."""
    lora_r: int = 16
    """LoRA rank r (TRL's default)."""
    lora_alpha: int = 32
    """LoRA scaling α (the update is scaled by α / r; TRL's default)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA branch. 0 here (TRL's ModelConfig says 0.05): dropout is on in every pass of a training
    model, so π_old, the loss pass and the prefix check would each see other noise (two passes of one batch differed
    by up to 0.12 in log-prob with 0.05 on the test model, and prefix sharing would be switched off)."""
    lora_target_modules: list | str | None = None
    """Modules that get adapters: names (e.g. [q_proj, v_proj]), 'all-linear', or None (peft's default per model
    type: the attention query and value projections for Llama / Qwen2)."""
    save_steps: int = 50
    """Checkpoint every this many optimizer steps (resumable with --resume)."""
    save_total_limit: int | None = 3
    """Checkpoints kept on disk (None = all)."""
    logging_steps: int = 1
    """TRL logging period (metrics.jsonl is written every step regardless)."""
    report_to: str | list = "none"
    """TRL/transformers loggers: 'none', 'tensorboard', 'wandb', or a list."""

    # --- evaluation during training (murphy_lab.trainer.eval_callback) ------------------------------------------
    eval_every: int = 0
    """Iter-k pass@1 on held-out tasks every this many optimizer steps (and after the last), logged into the step's
    metrics.jsonl line as `eval/iter<k>_pass@1`; 0 = off."""
    eval_tasks: str = ""
    """The held-out tasks: a task source as `tasks` (e.g. 'humaneval', or 'toy' with eval_task_args split: test)."""
    eval_task_args: dict = field(default_factory=dict)
    """Keyword arguments of the held-out task loader (e.g. {split: test, n: 32, seed: 1234})."""
    eval_iters: list = field(default_factory=lambda: [1, 3])
    """The k of Iter-k evaluated during training (one sampling run each, seed 0)."""
    eval_n_tasks: int | None = 32
    """The first N held-out tasks (None: all of them); every evaluation uses the same ones."""

    # --- generation backend -------------------------------------------------------------------------------------
    use_vllm: bool = False
    """Generate with vLLM (needs CUDA and the vllm package) instead of transformers' generate."""
    vllm_mode: str = "server"
    """'server' (a separate `trl vllm-serve` on other GPUs, the paper's 2+6 layout) or 'colocate' (one GPU)."""

    # --- execution ----------------------------------------------------------------------------------------------
    executor: dict = field(default_factory=dict)
    """Keyword arguments for murphy_lab.executor.Executor (timeout, memory_mb, workers, ...)."""

    # --- anything else TRL takes --------------------------------------------------------------------------------
    trl: dict = field(default_factory=dict)
    """Extra GRPOConfig fields passed through verbatim (e.g. vllm_server_host, warmup_steps, lr_scheduler_type)."""

    # --- construction: one path ----------------------------------------------------------------------------------
    @classmethod
    def layered(
        cls,
        profile: str | profiles.Profile | None,
        *layers: dict | str | os.PathLike,
        nested: dict | None = None,
        validate: bool = False,
    ) -> MurphyConfig:
        """THE way to a MurphyConfig, for every caller (`for_profile`, `from_yaml`, the command line, every method's
        config, a resumed run's recorded config):

            1. the profile's presets (`Profile.trainer`)
            2. each layer of fields, in order, a later one winning: a YAML file (a layer given as a path), an
               experiment's fields, the command line's `--set`; a layer that names another task source than an
               earlier one, without its own `task_args`, drops the earlier `task_args` (its loader's arguments)
            3. the G2 / S the mode implies where no layer sets them (`modes.Mode.fields`: `mode=grpo_mt` alone
               grows chains, G2 = 1)
            4. `nested`: dotted `--set` items merged into mapping fields (`task_args.path=...`)

        An unknown field is refused naming it; with `validate`, every other problem too (`problems()`), at once.
        `profile`: a name, the resolved `Profile` an experiment carries (read, not looked up again), or None for the
        first file's `profile:` (else 'paper'); the config records its name."""
        given: dict = {}
        for layer in layers:
            layer = file_fields(layer) if isinstance(layer, (str, os.PathLike)) else dict(layer)
            profile = profile or layer.pop("profile", None)
            layer.pop("profile", None)
            if (
                "tasks" in layer
                and "task_args" not in layer
                and layer["tasks"] != given.get("tasks", layer["tasks"])
            ):
                given.pop("task_args", None)  # arguments of the earlier source's loader
            given.update(layer)
        prof = profile if isinstance(profile, profiles.Profile) else profiles.get_profile(profile or "paper")
        # owns its dicts
        fields = {**copy.deepcopy(dict(prof.trainer)), **copy.deepcopy(given), "profile": prof.name}
        implied = modes.MODES.get(fields.get("mode", cls.mode))
        if implied is not None:
            fields.update({k: v for k, v in implied.fields().items() if k not in given})
        config = cls.from_dict(fields)
        if nested:
            config = dataclasses.replace(
                config, **{k: merged(getattr(config, k) or {}, v) for k, v in nested.items()}
            )
        return config.validate() if validate else config

    @classmethod
    def for_profile(cls, profile: str | profiles.Profile, **overrides: Any) -> MurphyConfig:
        """The profile's preset values (`murphy_lab.profiles`, `Profile.trainer`), then `overrides` (`layered`)."""
        return cls.layered(profile, overrides)

    @classmethod
    def from_dict(cls, d: dict) -> MurphyConfig:
        """Build from a plain dict, as it is (no presets: a recorded config.yaml holds every field); an unknown key
        is an error that names it."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            named = ", ".join(f"{k!r}{did_you_mean(k, names)}" for k in unknown)
            raise ValueError(
                f"unknown config field(s) {named}; TRL fields go under 'trl:'. Known: {sorted(names)}"
            )
        return cls(**d)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, profile: str | None = None, **overrides: Any) -> MurphyConfig:
        """Load a YAML file (`layered`): the profile's presets (the file's `profile:` or `profile=`), then the file,
        then overrides."""
        return cls.layered(profile, path, overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_yaml(self, path: str | os.PathLike) -> None:
        """Write the resolved config (saved beside every run's results)."""
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))

    # --- validation ---------------------------------------------------------------------------------------------
    def validate(self) -> MurphyConfig:
        """Check every field before anything heavy happens; raise `Refused` (a ValueError) naming each field with a
        problem, one line each (`problems()`). Returns self."""
        refuse(self.problems())
        return self

    def problems(self) -> list[str]:
        """Every problem of this config, one line each naming its field (empty: valid). A value of the wrong type
        is reported alone (the range checks below would misread it)."""
        typed = type_problems(self)
        if typed:
            return typed
        out: list[str] = []

        def need(ok: bool, name: str, msg: str) -> None:
            if not ok:
                out.append(f"{name}: {msg}, got {getattr(self, name)!r}")

        need(self.mode in modes.MODES, "mode", f"must be one of {tuple(modes.MODES)}")
        need(self.credit in CREDIT_RULES, "credit", f"must be one of {tuple(CREDIT_RULES)}")
        if self.credit in CREDIT_RULES:
            try:
                # the rule's own knobs, in their ranges
                CREDIT_RULES[self.credit].knob_values(**self.credit_args)
            except ValueError as e:
                out.append(f"credit_args: {e}")
        need(self.backup_on in ("pruned", "full"), "backup_on", "must be 'pruned' or 'full'")
        need(self.prune_method in ("loo", "exact"), "prune_method", "must be 'loo' or 'exact'")
        need(self.reward_tests in ("hidden", "visible"), "reward_tests", "must be 'hidden' or 'visible'")
        need(self.loss_type in LOSS_TYPES, "loss_type", f"must be one of {LOSS_TYPES}")
        need(self.vllm_mode in ("server", "colocate"), "vllm_mode", "must be 'server' or 'colocate'")
        need(0.0 <= self.gamma <= 1.0, "gamma", "must lie in [0, 1]")
        need(self.g1 >= 2, "g1", "must be an integer >= 2 (a group needs two members)")
        need(self.g2 >= 1, "g2", "must be an integer >= 1")
        need(self.turns >= 1, "turns", "must be an integer >= 1")
        need(self.beta >= 0, "beta", "must be >= 0 (the paper uses 0.04)")
        need(self.learning_rate > 0, "learning_rate", "must be > 0")
        need(self.epsilon > 0, "epsilon", "must be > 0")
        need(self.max_completion_length > 0, "max_completion_length", "must be > 0")
        need(self.num_iterations >= 1, "num_iterations", "must be >= 1")
        need(self.eval_every >= 0, "eval_every", "must be an integer >= 0 (0: off)")
        if self.eval_every:
            need(bool(self.eval_tasks), "eval_tasks", "must name the held-out tasks when eval_every > 0")
            need(
                bool(self.eval_iters) and all(isinstance(k, int) and k >= 1 for k in self.eval_iters),
                "eval_iters",
                "must be a non-empty list of integers >= 1",
            )
        if self.mode in modes.MODES:
            # the G2 / S the mode implies
            for name, msg in modes.mode(self.mode).problems(self.g2, self.turns):
                need(False, name, msg)
            for name in ("b_grp", "b_traj"):
                b = getattr(self, name)
                if b is None:
                    continue
                need(
                    modes.mode(self.mode).prunes,
                    name,
                    f"pruning only applies to {modes.pruning_modes()} (mode is {self.mode!r}); use null",
                )
                need(b >= 1, name, "must be a positive integer or null")
        if self.b_traj is not None:
            smallest = self.g1 if self.turns == 1 else min(self.g1, self.g2)
            need(
                2 <= self.b_traj <= smallest,
                "b_traj",
                f"must lie in [2, {smallest}] (it is larger than a group)",
            )
        if self.b_grp is not None:
            need(self.turns >= 2, "b_grp", "needs turns >= 2 (InterP prunes groups of turns s >= 2)")
            # a turn-2 group hangs under each failed turn-1 candidate: at most g1 of them per tree
            need(
                self.b_grp <= self.g1,
                "b_grp",
                f"must be <= g1 = {self.g1} (the most turn-2 groups a tree has)",
            )
        spg = self.steps_per_generation or self.gradient_accumulation_steps
        if self.loss_type == "bnpo":  # docs/training.md, decision 3
            need(
                spg == 1,
                "loss_type",
                "'bnpo' normalises by the tokens of each micro-batch, and the filler rows that "
                f"make the rows a multiple of steps_per_generation ({spg}) change what a micro-batch holds (one can "
                "hold filler rows only and still weigh 1/steps): not exact. Use 'dapo' or steps_per_generation = 1",
            )
        # its row weights ride on TRL's token mask (docs/training.md, decision 8)
        if self.loss_type == "group_sum":
            for name, off in (("importance_sampling_level", "token"), ("off_policy_mask_threshold", None)):
                need(
                    self.trl.get(name, off) == off,
                    "loss_type",
                    f"'group_sum' weighs tokens through TRL's mask, "
                    f"whose per-row means trl.{name} would change; leave it at {off!r} or use 'dapo'",
                )
        if self.loss_type in ("grpo", "dr_grpo"):
            bonus = self.trl.get("entropy_coef", 0.0) or self.trl.get("use_adaptive_entropy", False)
            need(
                not bonus,
                "loss_type",
                f"{self.loss_type!r} is made exact under filler rows by rescaling TRL's "
                "micro-batch loss, which would also rescale trl.entropy_coef's bonus; use 'dapo' with the bonus",
            )
        need(
            (self.per_device_train_batch_size * spg) % self.g1 == 0 if self.g1 >= 1 else False,
            "per_device_train_batch_size",
            f"times steps_per_generation ({spg}) must be a multiple of g1 = {self.g1}, so each device holds whole trees",
        )
        if self.model and looks_local(self.model):
            need(Path(self.model).expanduser().exists(), "model", "is a local path that does not exist")
        prof = profiles.PROFILES.get(self.profile)
        # a profile that builds nothing (paper): the config names both
        if prof is not None and prof.build is None:
            need(
                bool(self.model),
                "model",
                f"is required for the {self.profile} profile (a local folder or a hub id)",
            )
            need(bool(self.tasks), "tasks", f"is required for the {self.profile} profile (e.g. 'kodcode')")
        cuda = _cuda_available()
        if self.use_vllm:
            need(cuda, "use_vllm", "needs a CUDA GPU (none found); set use_vllm: false on a CPU")
        if self.bf16:
            need(
                cuda or cpu_bf16(),
                "bf16",
                "needs a CUDA GPU or a CPU with bfloat16 instructions (AVX512-BF16, "
                "AMX-BF16, Arm BF16); this machine has neither: set bf16: false",
            )
        loggers = [self.report_to] if isinstance(self.report_to, str) else list(self.report_to)
        # transformers would fail only at trainer construction, with a traceback
        known, installed = _loggers()
        for name in loggers:
            if name in ("none", "all"):
                continue
            if name not in known:
                need(
                    False,
                    "report_to",
                    f"{name!r} is not a logger transformers knows{did_you_mean(name, known)}; "
                    f"known: {sorted(known)}",
                )
                continue
            hint = "; the gpu and dev extras have it" if name == "tensorboard" else ""
            extra = ", or the project's wandb extra: pip install -e '.[wandb]'" if name == "wandb" else ""
            need(
                name in installed,
                "report_to",
                f"includes {name!r}, which is not installed "
                f"(pip install {PIP_NAMES.get(name, name)}{hint}){extra}",
            )
        if self.use_peft:
            need(_peft_installed(), "use_peft", "needs the peft package: pip install 'murphy-lab[lora]'")
            need(self.lora_r >= 1, "lora_r", "must be an integer >= 1")
        need(self.lora_alpha > 0, "lora_alpha", "must be > 0")
        need(0 <= self.lora_dropout < 1, "lora_dropout", "must lie in [0, 1)")
        targets = self.lora_target_modules
        need(
            targets is None or isinstance(targets, str) or all(isinstance(t, str) for t in targets),
            "lora_target_modules",
            "must be null, a string or a list of names",
        )
        trl_fields = trl_args.grpo_fields()
        unknown_trl = sorted(set(self.trl) - trl_fields)
        need(not unknown_trl, "trl", f"holds fields GRPOConfig does not have: {unknown_trl}")
        # one name per concept: G1 is g1, never trl.num_generations
        ours = sorted(set(self.trl) & set(trl_args.TRL_NAMES))
        if ours:
            named = ", ".join(f"trl.{k} is {trl_args.TRL_NAMES[k]}" for k in ours)
            out.append(
                f"trl: {named}: set {', '.join(trl_args.TRL_NAMES[k] for k in ours)} instead (MurphyConfig passes it to "
                "TRL under TRL's name)"
            )
        return out

    # --- to TRL -------------------------------------------------------------------------------------------------
    def peft_config(self):
        """The `peft.LoraConfig` TRL's trainer takes (None without `use_peft`): `trl_args.peft_config`."""
        return trl_args.peft_config(self)

    def to_grpo_config(self, output_dir: str | os.PathLike, **extra: Any):
        """The `trl.GRPOConfig` for this run (validates first; `trl_args.grpo_config`). `extra` overrides anything
        (e.g. resume paths)."""
        self.validate()
        return trl_args.grpo_config(self, output_dir, cuda=_cuda_available(), **extra)


# ---------------------------------------------------------------------------------------------------------------
def file_fields(path: str | os.PathLike) -> dict:
    """The fields of a YAML config file (a ValueError names a missing file or one that is not a mapping)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config: no such file {str(path)!r}")
    d = yaml.safe_load(path.read_text()) or {}
    if not isinstance(d, dict):
        raise ValueError(f"config {str(path)!r} must be a YAML mapping of field: value")
    return d


def _peft_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("peft") is not None


def _cuda_available() -> bool:
    try:
        import torch  # heavy: only when a config is validated

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        return False


def _loggers() -> tuple[set[str], set[str]]:
    """(the `report_to` names transformers knows, those whose package is installed here)."""
    from transformers.integrations.integration_utils import (  # heavy: only when a config is validated
        INTEGRATION_TO_CALLBACK,
        get_available_reporting_integrations,
    )

    return set(INTEGRATION_TO_CALLBACK), set(get_available_reporting_integrations())
