"""How an experiment becomes library calls: its base model, its training (per method and profile), its evaluation.

`default_base_model`, `default_train` and `default_evaluate` are what `run_experiment` calls unless it is handed
other functions (`base_model_fn`, `train_fn`, `evaluate_fn`; the tests and the stand-ins do).

- smoke / toy: `murphy_lab.train.train` in this process, on the toy world's executor.
- paper: the trainer's recipe `reproduce/configs/<model>/<method>.yaml` with the experiment's seed, launched by
  `reproduce/configs/launch/train_8xh100.sh` (8 GPUs: 2 vLLM + 6 training) or `colocate_1gpu.sh` (fewer GPUs).
- µCode and ReVeal: their own pipelines (murphy_lab.baselines.mucode / .reveal, `experiment_train`), evaluated
  like every other column: plain Iter-k pass@1 under the experiment's scaffold.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import yaml

from murphy_lab.config import MurphyConfig
from murphy_lab.evaluate import evaluate
from murphy_lab.executor import Executor
from murphy_lab.experiments.formats import check_prompt_format, make_policy, trained_format
from murphy_lab.experiments.plan import MODE_FIELDS, Experiment
from murphy_lab.profiles import TOY_TEST_SEED, get_profile
from murphy_lab.prompts import extract_program
from murphy_lab.smoke import build_smoke
from murphy_lab.tasks import load_tasks
from murphy_lab.toy import build_toy_policy, make_tasks
from murphy_lab.toy.execution import get_executor
from murphy_lab.train import train

PAPER_MODEL_IDS = {  # Hugging Face ids for the paper profile; override with `model_paths=` where they differ
    "Qwen3-1.7B": "Qwen/Qwen3-1.7B",
    "Qwen3-4B": "Qwen/Qwen3-4B",
    "OLMo-2-7B": "allenai/OLMo-2-1124-7B-Instruct",
}
REPO = Path(__file__).resolve().parents[2]
RECIPE_DIRS = {"Qwen3-1.7B": "qwen3-1.7b", "Qwen3-4B": "qwen3-4b", "OLMo-2-7B": "olmo2-7b"}
BENCHMARK_LOADERS = {"HumanEval": "humaneval", "MBPP": "mbpp", "LCB-v6": "livecodebench"}


def default_base_model(exp: Experiment, cache_dir: Path) -> str:
    """The base policy: a paper model's hub id, the smoke profile's tiny random model, or the toy world's policy."""
    if exp.profile == "paper":
        if exp.model not in PAPER_MODEL_IDS:
            raise ValueError(
                f"unknown paper model {exp.model!r}; known: {sorted(PAPER_MODEL_IDS)} (or pass model_paths)"
            )
        return PAPER_MODEL_IDS[exp.model]
    if exp.profile == "smoke":
        return str(build_smoke(Path(cache_dir) / "base")[0])
    # the toy world's own cache (~/.cache/murphy_lab/toy or $MURPHY_LAB_CACHE): shared with notebooks/, built once
    return str(build_toy_policy(size="toy", seed=0))


def train_config(exp: Experiment, base_model: str) -> MurphyConfig:
    """The trainer's `MurphyConfig` for this experiment: the profile's presets, overrides, then method and variant.

    Pruning budgets follow the paper's ratio (G = 8 -> b_traj = b_grp = 4, i.e. half): b = max(2, G // 2).
    """
    kw: dict = dict(model=base_model, seed=exp.seed, **MODE_FIELDS[exp.method])
    kw = {"max_completion_length": get_profile(exp.profile).max_new_tokens, **dict(exp.overrides), **kw}
    if exp.method == "murphy":
        kw.update(credit=exp.credit, gamma=float(exp.gamma), backup_on=exp.backup_on)
    if exp.profile == "paper":  # the trainer's recipe for this model and method (the paper's values, docs/training.md)
        cfg = MurphyConfig.from_yaml(paper_recipe(exp), **kw)
        check_prompt_format(exp, trained_format(cfg))  # before validate(): the format error is the one to fix
        return cfg.validate()
    cfg = MurphyConfig.for_profile(exp.profile, **kw)
    check_prompt_format(exp, trained_format(cfg))
    if exp.pruning == "intrap":
        cfg.b_traj = max(2, min(cfg.g1, cfg.g2) // 2)  # b_traj, IntraP (paper: 4 of 8)
    elif exp.pruning == "interp":
        cfg.b_grp = max(1, cfg.g1 // 2)  # b_grp, InterP (paper: 4 of 8 turn-2 groups)
    return cfg.validate()


def default_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """Train `base_model` with the experiment's method (module docstring); returns the trained model's folder."""
    # The baselines' pipelines are imported when they run: they pull in torch and TRL, and import this package.
    if exp.method == "mucode":  # expert iteration with a learned verifier
        from murphy_lab.baselines.mucode.pipeline import experiment_train

        exp = mucode_experiment(exp)
        mucode_config(exp, base_model)  # refuses a training prompt format that evaluation does not use
        return Path(experiment_train(exp, base_model, output_dir))
    if exp.method == "reveal":  # generation/verification rounds, TAPO advantages
        from murphy_lab.baselines.reveal.trainer import experiment_train as reveal_train

        return Path(reveal_train(exp, base_model, output_dir))
    cfg = train_config(exp, base_model)  # refuses, before any launch, a recipe trained in another prompt format
    if exp.profile == "paper":
        return paper_train(exp, base_model, output_dir)
    # the executor whose feedback the toy policy was trained on; the tasks are the profile's (murphy_lab.profiles)
    return Path(train(cfg, output_dir, executor=get_executor(workers=1)))


def paper_recipe(exp: Experiment) -> Path:
    """The trainer's YAML for a paper experiment: reproduce/configs/<model>/<grpo|grpo_mt|murphy_...>.yaml."""
    if exp.model not in RECIPE_DIRS:
        raise ValueError(f"no recipe folder for model {exp.model!r}; known: {sorted(RECIPE_DIRS)}")
    if exp.method != "murphy":
        name = exp.method
    elif exp.pruning != "none":
        if exp.credit != "mars":
            raise ValueError(
                f"no recipe for pruning={exp.pruning!r} with credit={exp.credit!r} (the paper prunes MaRS)"
            )
        name = f"murphy_{exp.pruning}"
    else:
        name = "murphy_mars" if exp.credit == "mars" else f"murphy_mers_g{float(exp.gamma):.1f}"
    path = REPO / "reproduce" / "configs" / RECIPE_DIRS[exp.model] / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no training recipe {path} for {exp.model}/{exp.method}/{exp.variant}")
    return path


def paper_train(exp: Experiment, base_model: str, output_dir: Path) -> Path:
    """Launch the paper recipe (seed and base model from the experiment) on this machine's GPUs; wait for it."""
    import torch  # heavy: only the GPU profile counts its devices

    output_dir = Path(output_dir)
    recipe = yaml.safe_load(paper_recipe(exp).read_text())
    recipe.update(seed=exp.seed, model=base_model, **dict(exp.overrides))
    if exp.method == "murphy":
        recipe.update(backup_on=exp.backup_on)  # the pruning ablation runs both orders from one recipe
    cfg_path = output_dir.parent / f"{output_dir.name}.recipe.yaml"  # outside OUT: the trainer wants it empty
    cfg_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    script = "train_8xh100.sh" if torch.cuda.device_count() >= 8 else "colocate_1gpu.sh"
    launcher = REPO / "reproduce" / "configs" / "launch" / script
    subprocess.run(["bash", str(launcher), str(cfg_path), str(output_dir)], check=True)
    return output_dir / "final"


def default_evaluate(
    exp: Experiment, model_dir: str, benchmark: str, transcripts_path: str | None = None
) -> pd.DataFrame:
    """Iter-k pass@1 of `model_dir` on `benchmark` with the experiment's scaffold, via `murphy_lab.evaluate`."""
    tasks = load_benchmark(benchmark, exp)
    policy = make_policy(model_dir, exp)
    # the toy policy's SFT feedback came from the toy world's executor
    executor = get_executor(workers=1) if benchmark in ("toy", "smoke") else Executor()
    scaffold_kw = {}  # every scaffold reads answers with prompts.extract_program, as training does
    if exp.method == "reveal" or exp.scaffold == "reveal":
        import murphy_lab.baselines.reveal  # noqa: F401  (registers the "reveal" scaffold; pulls in torch)
    if exp.method == "reveal" and exp.scaffold != "reveal":  # its program sits in <generation-answer> when tagged
        scaffold_kw["extract"] = reveal_program()
    return evaluate(policy, tasks, executor, iters=tuple(exp.iters), runs=exp.runs, scaffold=exp.scaffold,
                    seed=exp.seed, transcripts_path=transcripts_path, progress=False, scaffold_kw=scaffold_kw)  # fmt: skip


def reveal_program(fallback: Callable[[str], str] | None = None) -> Callable[[str], str]:
    """Program extraction for a ReVeal-trained model in a shared scaffold: its <generation-answer> when it wrote
    one (`reveal_extract`), else the usual extraction (`fallback`, default `prompts.extract_program`)."""
    from murphy_lab.baselines.reveal.format import reveal_extract  # the reveal package pulls in torch

    fallback = fallback or extract_program

    def extract(completion: str) -> str:
        return reveal_extract(completion) if "<generation-answer" in completion.lower() else fallback(completion)

    return extract


def load_benchmark(benchmark: str, exp: Experiment) -> list:
    """Evaluation tasks: the toy world's test split (disjoint from training), or a benchmark via `murphy_lab.tasks`
    with the profile's loader arguments for it (`Profile.benchmark_args`: the paper's MBPP split, its LCB window)."""
    n = exp.n_eval_tasks
    if benchmark == "toy":
        return make_tasks("test", n=n or get_profile("toy").n_eval_tasks, seed=TOY_TEST_SEED)
    args = dict(dict(get_profile(exp.profile).benchmark_args).get(benchmark, ()))
    tasks = list(load_tasks(BENCHMARK_LOADERS.get(benchmark, benchmark), **args))
    return tasks[:n] if n else tasks


def mucode_experiment(exp: Experiment) -> Experiment:
    """The experiment with only µCode's own fields as overrides: the profile's trainer overrides (e.g. the toy
    demo's max_steps) mean nothing to µCode (removed fields stay, so MuCodeConfig refuses them with the reason)."""
    from murphy_lab.baselines.mucode.config import REMOVED, MuCodeConfig  # the µCode package pulls in torch

    names = {f.name for f in dataclasses.fields(MuCodeConfig)} | set(REMOVED)
    return dataclasses.replace(exp, overrides=tuple(kv for kv in exp.overrides if kv[0] in names))


def mucode_config(exp: Experiment, base_model: str):
    """The MuCodeConfig µCode trains with in this experiment, checked against the evaluation's prompt format."""
    from murphy_lab.baselines.mucode.pipeline import experiment_config  # pulls in torch and TRL

    cfg = experiment_config(mucode_experiment(exp), base_model)
    check_prompt_format(exp, trained_format(cfg))
    return cfg
