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

A profile is plain data plus two builders: `build(config, workdir) -> (model path, training tasks)` for what a config
leaves empty, and `base_model(model key, cache dir)` for an experiment's base policy. `register(Profile(...))` adds
one (tests do); nothing is registered by importing another module. A profile is identified by its name (two
`Profile`s are equal when their names are), so an `Experiment` carries the resolved `Profile` and still hashes.

Resolved once, passed down: a run resolves its profile where it starts (`Experiment`, `plan`, `setup`,
`MurphyConfig.for_profile`, the command lines) and hands the `Profile` on; every function below takes
`profile: str | Profile` (`get_profile` returns a `Profile` as it is), and the rest of the package reads the
fields of the one it was handed.

What an experiment trains and evaluates on is decided here too, once for every method: `training_set(train_data)`
(the same tasks for every method and every seed) and `benchmark_tasks(profile, benchmark, n)`; both name task
sources of the one registry, `murphy_lab.tasks.registry` (benchmarks, the toy world, the smoke tasks, your files).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from murphy_lab.smoke import build_smoke
from murphy_lab.suggest import registered
from murphy_lab.tasks import check_source, load_tasks
from murphy_lab.toy.build import build_toy_policy
from murphy_lab.toy.world import make_tasks

Builder = Callable[[Any, Path], tuple[str, list]]  # (MurphyConfig, workdir) -> (model path or hub id, tasks)
BaseModel = Callable[[str, Path], str]  # (model key, cache dir) -> the base policy's path or hub id

TOY_TEST_SEED = 1234  # the toy world's held-out test split: make_tasks("test", n, seed=TOY_TEST_SEED)


def toy_benchmark(n: int) -> tuple[str, tuple[tuple[str, object], ...]]:
    """The benchmark "toy" of a toy-world profile (its `benchmark_args` entry): the first `n` tasks of the toy
    world's held-out split, the task source "toy" at make_tasks("test", n, seed=TOY_TEST_SEED)."""
    return "toy", (("split", "test"), ("n", n), ("seed", TOY_TEST_SEED))


@dataclass(frozen=True, eq=False)
class Profile:
    """Everything a profile fixes; a notebook's parameters or a config's fields override any of it. Equal (and
    hashed) by name: the registry's key."""

    name: str
    # --- the trainer -------------------------------------------------------------------------------------------
    trainer: Mapping[str, Any] = field(default_factory=dict)
    """MurphyConfig presets (`MurphyConfig.for_profile`); empty = the dataclass defaults (the paper's values)."""
    build: Builder | None = None
    """(config, workdir) -> (model, training tasks) for a config without `model` / `tasks`; None: both required."""
    mucode: Mapping[str, Any] = field(default_factory=dict)
    """MuCodeConfig presets (`MuCodeConfig.for_profile`)."""
    use_vllm: bool = False
    """Evaluation (and µCode's rollouts) generate with vLLM (GPU) instead of transformers (MurphyConfig's field)."""
    recipes: bool = False
    """Every method trains from its recipe `reproduce/configs/<model>/<method>.yaml` (launched by the scripts in
    reproduce/configs/launch/) instead of the presets above (`murphy_lab.methods.recipes`)."""
    executor: Mapping[str, Any] = field(default_factory=dict)
    """Executor settings of an experiment's local training and evaluation runs (e.g. one worker a run, since runs go
    side by side); empty: the Executor's defaults in evaluation, the recipe's or the presets' in training."""
    # --- the experiments' models and prompt format ----------------------------------------------------------------
    base_model: BaseModel | None = None
    """(model key, cache dir) -> the base policy of an experiment (a hub id, or a model it builds); None: none."""
    chat: bool = False
    """Prompts go through the model's chat template (one user message), in training and evaluation alike."""
    chat_template_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Chat-template arguments per model key (e.g. Qwen3 without its thinking section), training and evaluation."""
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
    """Training set, a name of `TRAIN_DATA`: "smoke", "toy" (the synthetic world) or "kodcode-1k" (the paper)."""
    n_eval_tasks: int | None = None
    """Evaluation tasks per benchmark; None = the whole benchmark."""
    benchmark_args: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    """(benchmark, loader keyword arguments) each benchmark is evaluated with, e.g. the paper's MBPP split or the toy
    world's test split; a benchmark is a task source (`murphy_lab.tasks.registry`), and one not named here loads
    with its loader's defaults. A plan checks every benchmark and its arguments when it is made."""
    needs_gpu: bool = False
    """The paper profile refuses to start without CUDA rather than fail hours in."""
    refuse_overlap: bool = False
    """Refuse to train when the training set repeats a task of the profile's benchmarks (the paper profile;
    `experiments.contamination.refuse_overlap`, checked after the CUDA check; MURPHY_LAB_ALLOW_OVERLAP=1 overrides)."""
    jobs: int = 1
    """Runs trained side by side, one process each (the toy demo: 2, one per core of a 2-core laptop)."""
    max_new_tokens: int = 48
    """Generation length per turn (tokens), in training (every method) and evaluation alike (`prompt_format`)."""
    scaffolds: tuple[str, ...] = ("reflexion", "lats", "dot")
    """Scaffolds of the cross-scaffold table (the paper: Reflexion-style, LATS, DoT)."""
    train_overrides: tuple[tuple[str, object], ...] = ()
    """Trainer-config fields this profile's tables set on top of `trainer` (e.g. the demo's step budget)."""
    methods: tuple[str, ...] = ()
    """The main table's default methods (the notebook's `methods = None`); empty: every registered method
    (`murphy_lab.methods.METHODS`)."""
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

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Profile) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"<Profile {self.name!r}>"

    def benchmark_args_of(self, benchmark: str) -> dict[str, Any]:
        """The loader arguments this profile evaluates `benchmark` with (`benchmark_args`; {} when it names none)."""
        return dict(dict(self.benchmark_args).get(benchmark, ()))


PROFILES: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    """Add (or replace) a profile in the registry; returns it."""
    PROFILES[profile.name] = profile
    return profile


def get_profile(profile: str | Profile) -> Profile:
    """The registered `Profile` called `profile` (smoke | toy | toy-full | paper); a `Profile` is returned as it is."""
    return registered(
        profile, PROFILES, Profile, f"profile must be one of {sorted(PROFILES)}, got {profile!r}"
    )


def not_run_note(profile: str | Profile | None, method: str) -> str | None:
    """Why `profile` leaves `method` out of its default main table (None when it does not say)."""
    if profile is None or (isinstance(profile, str) and profile not in PROFILES):
        return None
    return dict(get_profile(profile).not_run).get(method)


# --- model and tasks ----------------------------------------------------------------------------------------------
def config_tasks(config) -> list | None:
    """The training tasks a config names (`tasks` with its `task_args`), read and checked; None when it names none
    and its profile builds them (`resolve`)."""
    return load_tasks(config.tasks, **config.task_args) if config.tasks else None


def resolve(config, workdir: str | os.PathLike, tasks: list | None = None) -> tuple[str, list]:
    """Turn a MurphyConfig into (model path or hub id, list of Task). Builds local models under `workdir`.

    `config.model` / `config.tasks`, when set, win over what the profile would build; `tasks`: already read.
    """
    model = config.model or None
    tasks = config_tasks(config) if tasks is None else tasks
    if model is None or tasks is None:
        profile = PROFILES.get(config.profile)  # a config records its profile by name
        if profile is None or profile.build is None:
            raise ValueError(
                f"profile: {config.profile!r} builds no model or tasks; set both `model` and `tasks`"
            )
        built_model, built_tasks = profile.build(config, Path(workdir))
        model, tasks = model or built_model, tasks if tasks is not None else built_tasks
    if not tasks:
        raise ValueError(f"tasks: the source {config.tasks or config.profile!r} gave no tasks")
    return model, list(tasks)


def _build_smoke(config, workdir: Path) -> tuple[str, list]:
    return build_smoke(workdir)


def build_toy(config, workdir: Path) -> tuple[str, list]:
    """The cached toy policy and the training split. `config.task_args` may set n, seed, p_hide_a, p_hide_b
    (make_tasks) and `policy_size` ("toy" | "smoke"). The policy is built once per machine in the shared cache
    (murphy_lab.toy.default_cache_dir), not in workdir."""
    args = {**TRAIN_DATA["toy"][1], **(config.task_args or {})}
    size = args.pop("policy_size", "toy")
    model = config.model or build_toy_policy(size=size, progress=True)
    return model, make_tasks(**args)


# --- what an experiment trains and evaluates on: one rule for every method --------------------------------------------
# Experiment.train_data -> (task source, loader arguments): the config fields `tasks` / `task_args` every method's
# training config receives (murphy_lab.methods.recipes). The training set is drawn once, with seed 0, and is the same
# for every training seed: a seed changes the task order, the samples and the initialisation, never the tasks (as the
# paper trains every run on the same 1,000 KodCode tasks). A method with a smaller data budget (µCode's
# `n_train_tasks`) trains on the first n of these tasks.
TRAIN_DATA: dict[str, tuple[str, dict[str, Any]]] = {
    "smoke": ("smoke", {}),  # the four hand-made text tasks (murphy_lab.smoke)
    # the toy world's training split (murphy_lab.toy.world)
    "toy": ("toy", dict(split="train", n=512, seed=0)),
    # the paper: 1,000 KodCode-V1 tasks (murphy_lab.tasks.kodcode)
    "kodcode-1k": ("kodcode", dict(n=1000, seed=0)),
}


def training_set(train_data: str) -> dict[str, Any]:
    """The training tasks of `train_data` as config fields: {"tasks": source, "task_args": {...}}."""
    if train_data not in TRAIN_DATA:
        raise ValueError(f"train_data must be one of {sorted(TRAIN_DATA)}, got {train_data!r}")
    source, args = TRAIN_DATA[train_data]
    return {"tasks": source, "task_args": dict(args)}


def check_benchmark(profile: str | Profile, benchmark: str, **args: Any) -> None:
    """ValueError (one line) unless `benchmark` is a task source and the profile's arguments for it plus `args` fit
    its loader; nothing is read (a plan calls it for each of its benchmarks)."""
    args = {**get_profile(profile).benchmark_args_of(benchmark), **args}
    check_source(benchmark, args, field="benchmarks", args_field="benchmark_args")


def benchmark_tasks(profile: str | Profile, benchmark: str, n: int | None = None, **args: Any) -> list:
    """Evaluation tasks of a benchmark in a profile's tables: the task source `benchmark` ("toy": the toy world's
    held-out split, which shares no function with training; "HumanEval", "MBPP", "LCB-v6", or any other source of
    `murphy_lab.tasks.registry`) loaded with the profile's arguments for it (`Profile.benchmark_args`: the paper's
    MBPP split, its LCB window, the toy test split) and `args` on top; the first `n` tasks when given."""
    tasks = load_tasks(benchmark, **{**get_profile(profile).benchmark_args_of(benchmark), **args})
    return tasks[:n] if n else tasks


def _smoke_base(model: str, cache_dir: Path) -> str:
    # a tiny random model, built in the experiment's cache
    return str(build_smoke(Path(cache_dir) / "base")[0])


def _toy_base(model: str, cache_dir: Path) -> str:
    # the toy world's own cache (~/.cache/murphy_lab/toy or $MURPHY_LAB_CACHE): shared with notebooks/, built once
    return str(build_toy_policy(size="toy", seed=0))


PAPER_MODEL_IDS = {  # Hugging Face ids for the paper profile; override with `model_paths=` where they differ
    "Qwen3-1.7B": "Qwen/Qwen3-1.7B",
    "Qwen3-4B": "Qwen/Qwen3-4B",
    "OLMo-2-7B": "allenai/OLMo-2-1124-7B-Instruct",
}


def _paper_base(model: str, cache_dir: Path) -> str:
    if model not in PAPER_MODEL_IDS:
        raise ValueError(
            f"unknown paper model {model!r}; known: {sorted(PAPER_MODEL_IDS)} (or pass model_paths)"
        )
    return PAPER_MODEL_IDS[model]


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

MUCODE_SMOKE = dict(
    rounds=1, final_verifier=False, rollouts=2, turns=2, max_new_tokens=16, pairs_per_task=4, verifier_lr=1e-3,
    verifier_epochs=1, verifier_batch_size=4, verifier_grad_accum=1, verifier_max_length=512, sft_lr=1e-3,
    sft_epochs=1, sft_batch_size=4, sft_grad_accum=1, sft_max_length=512, iters=(1, 2), runs=1, best_of_n=2,
    trl=dict(logging_steps=1),
)  # fmt: skip
# µCode over the toy world: learning rates sized for the small toy model, fewer rollouts.
MUCODE_TOY = dict(
    rounds=2, final_verifier=True, rollouts=8, turns=3, max_new_tokens=96, pairs_per_task=16, verifier_lr=3e-4,
    verifier_epochs=2, verifier_batch_size=16, verifier_grad_accum=1, verifier_max_length=1024, sft_lr=3e-4,
    sft_epochs=2, sft_batch_size=16, sft_grad_accum=1, sft_max_length=1024, iters=(1, 3, 5), runs=3, best_of_n=4,
    trl=dict(logging_steps=10), n_train_tasks=200,  # µCode's budget is rounds × tasks × chains (docs/mucode.md)
)  # fmt: skip

register(
    Profile(
        "smoke",
        trainer=SMOKE_PRESETS,
        build=_build_smoke,
        mucode=MUCODE_SMOKE,
        base_model=_smoke_base,
        executor=dict(workers=1),
        models=("tiny",),
        benchmarks=("toy",),
        seeds=(0,),
        iters=(1, 2),
        runs=1,
        n_eval_tasks=4,
        train_data="smoke",
        benchmark_args=(toy_benchmark(200),),
        max_new_tokens=8,  # = SMOKE_PRESETS' max_completion_length
    )
)
# make demo on a 2-core laptop: the toy policy's SFT, then 4 methods × 3 seeds × 40 RL steps
register(
    Profile(
        "toy",
        trainer=TOY_PRESETS,
        build=build_toy,
        mucode=MUCODE_TOY,
        base_model=_toy_base,
        executor=dict(workers=1),
        models=("toy",),
        benchmarks=("toy",),
        seeds=(0, 1, 2),
        iters=(1, 3, 5),
        runs=1,
        n_eval_tasks=200,
        benchmark_args=(toy_benchmark(200),),
        train_overrides=(("max_steps", 40),),
        methods=("base", "grpo", "grpo_mt", "murphy"),
        jobs=2,
        not_run=(
            (
                "mucode",
                "not run in the toy demo (pass -y 'methods: [base, grpo, grpo_mt, mucode, murphy]' to include "
                "it; it adds minutes of training per seed on 2 cores, docs/mucode.md)",
            ),
            (
                "reveal",
                "not run in the toy demo: the toy policy was never taught ReVeal's generation/verification tag "
                "format, so all its rewards are zero (docs/reveal.md)",
            ),
        ),
    )
)
# GRPO-MT at MURPHY's sample budget: a toy MURPHY tree samples G1 + G2·(failed roots) ≈ 4 + 4·3.8 ≈ 19.3
# sequences per task (measured with policy v3: 6,181 per 40 steps of 8 tasks); GRPO-MT with G1 = 10 samples
# 10 + 1·(failed roots) ≈ 19.6 (measured: 6,267). The batch grows with G1 so that a step still holds 8 tasks
# (rows = tasks × G1), as in every other method. µCode samples chains of up to 3 attempts, 8 per task, for 200
# tasks in each of 2 rounds: 7,063 sequences (measured, policy v3); 7 chains per task ≈ 6,180, MURPHY's budget.
TOY_MATCHED = (("grpo_mt", (("g1", 10), ("per_device_train_batch_size", 80))), ("mucode", (("rollouts", 7),)))
# make demo-full: the powered design (docs/toy_world.md §4.4). Five paired seeds, all 288 distinct held-out test
# functions × 4 sampling runs, GRPO-MT also at MURPHY's sample budget, a checkpoint every 10 steps for the curves.
# Iter-5 is left out (the verdict is read at Iter-3; Iter-5 would add ~40 % to every evaluation).
# µCode runs on the first 3 seeds, at its default and at MURPHY's sample budget.
register(
    dataclasses.replace(
        get_profile("toy"),
        name="toy-full",
        seeds=(0, 1, 2, 3, 4),
        iters=(1, 3),
        runs=4,
        n_eval_tasks=288,
        benchmark_args=(toy_benchmark(288),),
        train_overrides=(("max_steps", 40), ("save_steps", 10), ("save_total_limit", None)),
        matched=TOY_MATCHED,
        curve=True,
        methods=("base", "grpo", "grpo_mt", "mucode", "murphy"),
        method_seeds=(("mucode", (0, 1, 2)),),
        not_run=tuple(kv for kv in get_profile("toy").not_run if kv[0] != "mucode"),
    )
)
# The paper's evaluation sets, where its text names only the benchmark (docs/evaluation.md, "What the paper does not
# state"): MBPP = full MBPP's test split, task ids 11–510 (500 tasks; its numbers are whole counts of 500 × 3 runs,
# the 257-task sanitized split's are not); LiveCodeBench-v6 = the problems added in release v6 (`v6`: test6.jsonl,
# after release_v5's January 2025), the contamination-free reading of "v6" (release_v6 reaches back to May 2023).
PAPER_BENCHMARKS = (("MBPP", (("variant", "full"), ("split", "test"))), ("LCB-v6", (("version_tag", "v6"),)))
register(
    Profile(
        "paper",
        mucode=dict(use_vllm=True),
        use_vllm=True,
        recipes=True,
        base_model=_paper_base,
        chat=True,
        # as the recipes
        chat_template_kwargs={m: {"enable_thinking": False} for m in ("Qwen3-1.7B", "Qwen3-4B")},
        models=("OLMo-2-7B", "Qwen3-1.7B", "Qwen3-4B"),
        benchmarks=("HumanEval", "MBPP", "LCB-v6"),
        seeds=(0, 1, 2),
        runs=3,
        train_data="kodcode-1k",
        needs_gpu=True,
        refuse_overlap=True,
        benchmark_args=PAPER_BENCHMARKS,
        max_new_tokens=1024,  # per turn, as the training recipes (reproduce/configs/*/*.yaml)
        method_benchmarks=(("reveal", ("LCB-v6",)),),  # the paper reports ReVeal on LiveCodeBench-v6 only
    )
)


# --- real-cpu: the packaged code model learns on a CPU (docs/real_model.md, "The first real training run") ----------
def mbpp_files() -> str:
    """MBPP's original release files (no hub here): $MURPHY_LAB_MBPP, else ../shared/data/mbpp beside the checkout or
    beside the folder of its worktrees (the first that exists; else the first of these, which then fails to load)."""
    root = Path(__file__).resolve().parents
    found = [Path(p) for p in (os.environ.get("MURPHY_LAB_MBPP"),) if p] + [
        root[i] / "shared" / "data" / "mbpp" for i in (2, 3)
    ]
    return str(next((p for p in found if p.is_dir()), found[0]))


# held-out: sanitized test
REAL_CPU_MBPP = (("split", "test"), ("variant", "sanitized"), ("source", mbpp_files()))
# Training: MBPP's train, validation and prompt splits (full release: 374 + 90 + 10 tasks), less every task that
# repeats a held-out one (experiments.contamination.decontaminated: sanitized MBPP test, HumanEval).
TRAIN_DATA["mbpp-train"] = (
    "murphy_lab.experiments.contamination:decontaminated",
    dict(
        parts=[
            ["mbpp", dict(split=split, variant="full", source=mbpp_files())]
            for split in ("train", "validation", "prompt")
        ],
        against=[["mbpp", dict(REAL_CPU_MBPP)], ["humaneval", {}]],
    ),
)
# held-out tasks per benchmark (the first 100; docs/real_model.md: the budget and its error)
REAL_CPU_EVAL_TASKS = 100
# A LoRA MURPHY step of the code model on a 2-core CPU: 4 tasks a step, G1 = 4, G2 = 2, 512-token turns ending at the
# closed code block, bf16 (a CPU with bf16 instructions), 8 length-sorted micro-batches (~4 rows each: a 6-row
# micro-batch of real lengths peaks at ~10 GB, docs/performance.md), Iter-1/Iter-3 on held-out
# MBPP every 10 steps, a checkpoint every step (a run of hours resumes where it was killed).
REAL_CPU_PRESETS = dict(
    g1=4, g2=2, turns=2, per_device_train_batch_size=2, steps_per_generation=8, gradient_accumulation_steps=8,
    max_completion_length=512, max_steps=20, learning_rate=2e-5, beta=0.04, temperature=1.0, loss_type="group_sum",
    bf16=True, use_peft=True, lora_r=8, lora_alpha=16, lora_target_modules="all-linear", chat=True, save_steps=1,
    save_total_limit=2, eval_every=10, eval_tasks="mbpp", eval_task_args=dict(REAL_CPU_MBPP), eval_iters=[1, 3],
    eval_n_tasks=REAL_CPU_EVAL_TASKS, executor={"timeout": 3.0, "workers": 1},
)  # fmt: skip


def _build_real_cpu(config, workdir: Path) -> tuple[str, list]:
    from murphy_lab.policy.packaged import CODE_MODEL

    source, args = TRAIN_DATA["mbpp-train"]  # the model by its name: its cached folder is built on first use
    return config.model or CODE_MODEL, load_tasks(source, **args)


def _real_cpu_base(model: str, cache_dir: Path) -> str:
    return model  # the packaged model's name: every loader resolves it to its cached folder


# Planned (and run, one at a time) in this order: MURPHY, GRPO-MT at MURPHY's samples, GRPO-MT at the same steps, the
# base model's evaluation (training first: its checkpoints are what a killed run resumes from).
# GRPO-MT at MURPHY's sampled sequences: a MURPHY tree samples G1 + G2 x F = 4 + 8(1 - q) sequences per task (F of
# its 4 first attempts fail, pass rate q), GRPO-MT with G1 = 6 chains 6 + 6(1 - q): at the code model's q ~ 0.42 on
# these tasks (a probe: 27 of 64 first attempts) 8.6 against 9.5, so the baseline gets ~10 % more (G1 = 5 would get
# ~9 % fewer, but 20 rows do not split into 8 micro-batches); the budget table reports what each sampled.
register(
    Profile(
        "real-cpu",
        trainer=REAL_CPU_PRESETS,
        build=_build_real_cpu,
        base_model=_real_cpu_base,
        chat=True,
        executor=dict(timeout=3.0, workers=1),
        models=("qwen2.5-coder-0.5b",),
        benchmarks=("MBPP", "HumanEval"),
        benchmark_args=(("MBPP", REAL_CPU_MBPP),),
        seeds=(0,),
        iters=(1, 3),
        runs=1,
        n_eval_tasks=REAL_CPU_EVAL_TASKS,
        train_data="mbpp-train",
        max_new_tokens=512,
        methods=("murphy", "grpo_mt", "base"),
        jobs=1,
        matched=(("grpo_mt", (("g1", 6), ("per_device_train_batch_size", 3))),),
    )
)
