"""Run profiles: ONE registry, name -> the model, the training tasks, the evaluation tasks and every default.

    from murphy_lab.profiles import get_profile, resolve
    p = get_profile("toy")   # p.trainer: MurphyConfig presets, p.mucode: MuCodeConfig presets, p.seeds, p.benchmarks ...
    model, tasks = resolve(MurphyConfig.for_profile("toy"), workdir)

Four profiles, registered below (docs/reproduce.md, "Profiles"):

- `smoke`: a tiny random model and four hand-made tasks (murphy_lab.smoke): every code path in seconds on a CPU.
- `toy`: the project's synthetic world and its self-trained policy (murphy_lab.toy, docs/toy_world.md): a laptop CPU.
- `toy-full`: the toy world's powered design (`make demo-full`): more seeds and evaluation, matched budgets, curves.
- `paper`: the paper's models on KodCode-1k, evaluated on HumanEval, MBPP and LiveCodeBench-v6: 8×H100. Its
  trainer settings are MurphyConfig's defaults plus the recipes `reproduce/configs/<model>/<method>.yaml`.

A profile is plain data plus one `build(config, workdir) -> (model path, training tasks)` for what a config leaves
empty. `register(Profile(...))` adds one (tests do); nothing is registered by importing another module.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from murphy_lab.smoke import build_smoke, smoke_tasks
from murphy_lab.tasks import load_tasks as load_named_tasks

Builder = Callable[[Any, Path], tuple[str, list]]  # (MurphyConfig, workdir) -> (model path or hub id, tasks)

# The main table's columns: the paper's, in its order, plus single-turn GRPO (our toy table has it; the paper's not).
METHODS = ("base", "grpo", "grpo_mt", "mucode", "reveal", "murphy")
TOY_TEST_SEED = 1234  # the toy world's held-out test split: make_tasks("test", n, seed=TOY_TEST_SEED)


@dataclass(frozen=True)
class Profile:
    """Everything a profile fixes; a notebook's parameters or a config's fields override any of it."""

    name: str
    # --- the trainer -------------------------------------------------------------------------------------------
    trainer: Mapping[str, Any] = field(default_factory=dict)
    """MurphyConfig presets (`MurphyConfig.for_profile`); empty = the dataclass defaults (the paper's values)."""
    build: Builder | None = None
    """(config, workdir) -> (model, training tasks) for a config without `model` / `tasks`; None: both required."""
    train_tasks: int = 0
    """Toy-world training tasks (`make_tasks("train", n)`) of a `train_data="toy"` run: RL methods and ReVeal."""
    mucode: Mapping[str, Any] = field(default_factory=dict)
    """MuCodeConfig presets (`MuCodeConfig.for_profile`)."""
    mucode_train_tasks: int = 0
    """µCode's toy-world training tasks: its budget is rounds × tasks × chains, not steps (docs/mucode.md)."""
    use_vllm: bool = False
    """Evaluation (and µCode's rollouts) generate with vLLM (GPU) instead of transformers (MurphyConfig's field)."""
    # --- the tables (murphy_lab.experiments) ---------------------------------------------------------------------
    models: tuple[str, ...] = ()
    """Model keys the tables are built for (paper names for `paper`, our own built models otherwise)."""
    benchmarks: tuple[str, ...] = ()
    """Evaluation benchmarks; "LCB-v6" results carry Easy/Medium/Hard in their `difficulty` column."""
    seeds: tuple[int, ...] = (0,)
    """Training seeds; tables show mean ± std over them (with one seed: ± over evaluation runs)."""
    iters: tuple[int, ...] = (1, 3, 5)
    """k of Iter-k: attempts allowed by the refinement scaffold (the paper reports 1, 3, 5)."""
    runs: int = 3
    """Sampling repeats per evaluation (the paper: mean ± std over 3 runs)."""
    train_data: str = "toy"
    """Training set: "toy" (the synthetic world) or "kodcode-1k" (the paper: 1,000 KodCode tasks)."""
    n_eval_tasks: int | None = None
    """Evaluation tasks per benchmark; None = the whole benchmark."""
    needs_gpu: bool = False
    """The paper profile refuses to start without CUDA rather than fail hours in."""
    jobs: int = 1
    """Runs trained side by side, one process each (the toy demo: 2, one per core of a 2-core laptop)."""
    max_new_tokens: int = 48
    """Generation length per turn (tokens), in training (every method) and evaluation alike (`prompt_format`)."""
    scaffolds: tuple[str, ...] = ("reflexion", "lats", "dot")
    """Scaffolds of the cross-scaffold table (the paper: Reflexion-style, LATS, DoT)."""
    train_overrides: tuple[tuple[str, object], ...] = ()
    """Trainer-config fields this profile's tables set on top of `trainer` (e.g. the demo's step budget)."""
    methods: tuple[str, ...] = METHODS
    """The main table's default methods (the notebook's `methods = None`)."""
    not_run: tuple[tuple[str, str], ...] = ()
    """(method, why) for main-table methods this profile leaves out by default; the table's "–" note says why."""
    method_benchmarks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(method, benchmarks) where the paper reports a method on some benchmarks only (ReVeal: LiveCodeBench-v6)."""
    method_seeds: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """(method, seeds) for a method trained on fewer seeds than `seeds` (toy-full: µCode, the costliest run)."""
    matched: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    """(method, trainer overrides) that give a baseline as many sampled sequences per task as MURPHY's run: the
    main table then also has that baseline at MURPHY's sample budget (`Experiment.budget = "samples"`)."""
    curve: bool = False
    """Evaluate every run's intermediate checkpoints too (the budget curve: pass@1 against sampled sequences)."""


PROFILES: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    """Add (or replace) a profile in the registry; returns it."""
    PROFILES[profile.name] = profile
    return profile


def get_profile(name: str) -> Profile:
    """The registered `Profile` called `name` (smoke | toy | paper)."""
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name]


def not_run_note(profile_name: str | None, method: str) -> str | None:
    """Why `profile_name` leaves `method` out of its default main table (None when it does not say)."""
    if profile_name not in PROFILES:
        return None
    return dict(PROFILES[profile_name].not_run).get(method)


# --- model and tasks ----------------------------------------------------------------------------------------------
def resolve(config, workdir: str | os.PathLike) -> tuple[str, list]:
    """Turn a MurphyConfig into (model path or hub id, list of Task). Builds local models under `workdir`.

    `config.model` / `config.tasks`, when set, win over what the profile would build.
    """
    model = config.model or None
    tasks = load_tasks(config.tasks, **config.task_args) if config.tasks else None
    if model is None or tasks is None:
        profile = PROFILES.get(config.profile)
        if profile is None or profile.build is None:
            raise ValueError(f"profile: {config.profile!r} builds no model or tasks; set both `model` and `tasks`")
        built_model, built_tasks = profile.build(config, Path(workdir))
        model, tasks = model or built_model, tasks if tasks is not None else built_tasks
    if not tasks:
        raise ValueError(f"tasks: the source {config.tasks or config.profile!r} gave no tasks")
    return model, list(tasks)


def load_tasks(name: str, **kw: Any) -> list:
    """Tasks by name: 'smoke', 'module:function' (called with kw), or murphy_lab.tasks.load_tasks(name, **kw)."""
    if name == "smoke":
        return smoke_tasks(**kw)
    if ":" in name:  # a user's own task source, named in a YAML config
        module, fn = name.split(":", 1)
        return list(getattr(importlib.import_module(module), fn)(**kw))
    return list(load_named_tasks(name, **kw))


def _build_smoke(config, workdir: Path) -> tuple[str, list]:
    return build_smoke(workdir)


def build_toy(config, workdir: Path) -> tuple[str, list]:
    """The cached toy policy and the training split. `config.task_args` may set n, seed, p_hide_a, p_hide_b
    (make_tasks) and `policy_size` ("toy" | "smoke"). The policy is built once per machine in the shared cache
    (murphy_lab.toy.default_cache_dir), not in workdir."""
    from murphy_lab.toy import build_toy_policy, make_tasks  # not at the top: the toy package imports us

    args = {**TOY_TRAIN, **(config.task_args or {})}
    size = args.pop("policy_size", "toy")
    model = config.model or build_toy_policy(size=size, progress=True)
    return model, make_tasks("train", **args)


# --- the three profiles -------------------------------------------------------------------------------------------
# Every code path in seconds on a CPU: tiny random model, 4 hand-made tasks, 2 tasks per step.
SMOKE_PRESETS = dict(
    g1=4, g2=2, turns=2, per_device_train_batch_size=8, max_completion_length=8, max_steps=2,
    learning_rate=1e-2, save_steps=2, bf16=False, executor={"timeout": 5.0, "workers": 1},
)  # fmt: skip

# The toy trainer, for a 2-core CPU: 8 tasks per step with G1 = G2 = 4 (a full tree: 4 + 16 trajectories), two
# turns, programs of at most 48 characters, 40 steps at lr 2e-4 (the prototype moved pass@1 within ~45 steps at
# 3e-4 but collapsed later), beta = 0.04 as in the paper, and `reward_tests="visible"`: in the toy world the visible
# suite is the staged lock whose feedback reveals what the next turn needs, and it is all-or-nothing, so reward and
# feedback both come from it (the hidden suite is kept for the evaluation verdict).
TOY_PRESETS = dict(
    g1=4, g2=4, turns=2, per_device_train_batch_size=32, max_completion_length=48, max_steps=40,
    learning_rate=2e-4, beta=0.04, temperature=1.0, save_steps=50, bf16=False, reward_tests="visible",
    executor={"timeout": 2.0, "workers": 2},
)  # fmt: skip
TOY_TRAIN = dict(n=512, seed=0)  # the toy training split every RL method trains on (task_args override these)

MUCODE_SMOKE = dict(
    rounds=1, final_verifier=False, rollouts=2, turns=2, max_new_tokens=16, pairs_per_task=4, verifier_lr=1e-3,
    verifier_epochs=1, verifier_batch_size=4, verifier_grad_accum=1, verifier_max_length=512, sft_lr=1e-3,
    sft_epochs=1, sft_batch_size=4, sft_grad_accum=1, sft_max_length=512, iters=(1, 2), runs=1, best_of_n=2,
    trl=dict(logging_steps=1),
)  # fmt: skip
# µCode over the toy world: learning rates sized for a small char-level model, fewer rollouts.
MUCODE_TOY = dict(
    rounds=2, final_verifier=True, rollouts=8, turns=3, max_new_tokens=96, pairs_per_task=16, verifier_lr=3e-4,
    verifier_epochs=2, verifier_batch_size=16, verifier_grad_accum=1, verifier_max_length=1024, sft_lr=3e-4,
    sft_epochs=2, sft_batch_size=16, sft_grad_accum=1, sft_max_length=1024, iters=(1, 3, 5), runs=3, best_of_n=4,
    trl=dict(logging_steps=10),
)  # fmt: skip

register(Profile(
    "smoke", trainer=SMOKE_PRESETS, build=_build_smoke, train_tasks=8, mucode=MUCODE_SMOKE, mucode_train_tasks=8,
    models=("tiny",), benchmarks=("toy",), seeds=(0,), iters=(1, 2), runs=1, n_eval_tasks=4,
    max_new_tokens=8,  # = SMOKE_PRESETS' max_completion_length
))  # fmt: skip
# make demo on a 2-core laptop: the toy policy's SFT, then 4 methods × 3 seeds × 40 RL steps
register(Profile(
    "toy", trainer=TOY_PRESETS, build=build_toy, train_tasks=TOY_TRAIN["n"], mucode=MUCODE_TOY,
    mucode_train_tasks=200, models=("toy",), benchmarks=("toy",), seeds=(0, 1, 2), iters=(1, 3, 5), runs=1,
    n_eval_tasks=200, train_overrides=(("max_steps", 40),), methods=("base", "grpo", "grpo_mt", "murphy"), jobs=2,
    not_run=(
        ("mucode", 'not run in the toy demo (pass -p methods \'["base", "grpo", "grpo_mt", "mucode", "murphy"]\' '
                   "to include it; it adds minutes of training per seed on 2 cores, docs/mucode.md)"),
        ("reveal", "not run in the toy demo: the toy policy was never taught ReVeal's generation/verification tag "
                   "format, so all its rewards are zero (docs/reveal.md)"),
    ),
))  # fmt: skip
# GRPO-MT at MURPHY's sample budget: a toy MURPHY tree samples G1 + G2·(failed roots) = 4 + 4·3.9 ≈ 19.5
# sequences per task (measured: 6,227 per 40 steps of 8 tasks); GRPO-MT with G1 = 10 samples 10 + 1·9.6 ≈ 19.6.
# The batch grows with G1 so that a step still holds 8 tasks (rows = tasks × G1), as in every other method.
# µCode samples chains of up to 3 attempts, 8 per task, for 200 tasks in each of 2 rounds: ≈ 9,200 sequences
# (measured: 4,609 + 4,558); with 5 chains per task it samples ≈ 5,750, the nearest to MURPHY's 6,227.
TOY_MATCHED = (("grpo_mt", (("g1", 10), ("per_device_train_batch_size", 80))), ("mucode", (("rollouts", 5),)))
# make demo-full: the powered design (docs/toy_world.md §4.4). Five paired seeds, all 288 distinct held-out test
# functions × 4 sampling runs, GRPO-MT also at MURPHY's sample budget, a checkpoint every 10 steps for the curves.
# Iter-5 is left out (the verdict is read at Iter-3; Iter-5 would add ~40 % to every evaluation).
# µCode (≈ 12–20 min a run on 2 cores) runs on the first 2 seeds, at its default and at MURPHY's sample budget.
register(dataclasses.replace(
    get_profile("toy"), name="toy-full", seeds=(0, 1, 2, 3, 4), iters=(1, 3), runs=4, n_eval_tasks=288,
    train_overrides=(("max_steps", 40), ("save_steps", 10), ("save_total_limit", None)), matched=TOY_MATCHED,
    curve=True, methods=("base", "grpo", "grpo_mt", "mucode", "murphy"), method_seeds=(("mucode", (0, 1)),),
    not_run=tuple(kv for kv in get_profile("toy").not_run if kv[0] != "mucode"),
))  # fmt: skip
register(Profile(
    "paper", mucode=dict(use_vllm=True), use_vllm=True,
    models=("OLMo-2-7B", "Qwen3-1.7B", "Qwen3-4B"), benchmarks=("HumanEval", "MBPP", "LCB-v6"), seeds=(0, 1, 2),
    runs=3, train_data="kodcode-1k", needs_gpu=True,
    max_new_tokens=1024,  # per turn, as the training recipes (reproduce/configs/*/*.yaml)
    method_benchmarks=(("reveal", ("LCB-v6",)),),  # the paper reports ReVeal on LiveCodeBench-v6 only
))  # fmt: skip
