"""reproduce/configs/: every YAML loads and validates with its own loader, the recipes agree with each other and
with the models they name, and the launch scripts assemble the commands they should (stubbed `accelerate`, `trl`,
`curl`). The slow dry run trains one optimizer step of every recipe on CPU with a tiny model of the same family."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import murphy_lab.config as config_mod
from murphy_lab.baselines.mucode.config import MuCodeConfig
from murphy_lab.baselines.reveal.config import ReVealConfig, load_recipe
from murphy_lab.config import MurphyConfig
from murphy_lab.methods import METHODS as REGISTERED
from murphy_lab.methods import get_method

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "reproduce" / "configs"
LAUNCH = CONFIGS / "launch"
MODELS = ("qwen3-1.7b", "qwen3-4b", "olmo2-7b")
# the recipe names every registered method ships for the paper profile (opt-in: `Method.recipes`, empty for one
# that has none, which the paper profile then refuses naming the files; tests/test_methods.py)
METHODS = tuple(r for name in REGISTERED for r in get_method(name).recipes)
# max_position_embeddings in each model's config.json (Qwen/Qwen3-1.7B, Qwen/Qwen3-4B, allenai/OLMo-2-1124-7B-Instruct)
POSITIONS = {"qwen3-1.7b": 40960, "qwen3-4b": 40960, "olmo2-7b": 4096}
RECIPES = sorted(p for p in CONFIGS.glob("*/*.yaml") if p.parent.name != "launch")


def load(path: Path, **overrides):
    """A recipe through the loader its trainer uses: µCode (`method: mucode`), ReVeal (`reveal:`) or MurphyConfig."""
    raw = yaml.safe_load(path.read_text())
    if raw.get("method") == "mucode":
        return MuCodeConfig.from_file(path, **overrides)
    if "reveal" in raw:
        return load_recipe(path, **overrides)
    return MurphyConfig.from_yaml(path, **overrides).validate()


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recipe_validates_on_a_gpu_machine(path, monkeypatch):
    monkeypatch.setattr(config_mod, "_cuda_available", lambda: True)
    loaded = load(path)
    assert isinstance(loaded, (MurphyConfig, MuCodeConfig)) or isinstance(loaded[1], ReVealConfig)


@pytest.mark.parametrize("path", sorted(LAUNCH.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_accelerate_config_is_a_bf16_deepspeed_layout(path):
    d = yaml.safe_load(path.read_text())
    gpus = int(path.stem.rsplit("_", 1)[1].removesuffix("gpu"))
    assert (d["distributed_type"], d["mixed_precision"], d["num_processes"]) == ("DEEPSPEED", "bf16", gpus)
    assert d["deepspeed_config"]["zero_stage"] in (2, 3)


def test_recipes_cover_every_paper_model_and_method():
    assert {(p.parent.name, p.stem) for p in RECIPES} == {(m, x) for m in MODELS for x in METHODS}


def test_the_rl_recipes_aggregate_the_loss_as_the_paper_states():
    # the paper's objective is a sum of per-group GRPO objectives (docs/training.md, decision 8), which weighs the
    # groups that pruning leaves differently from TRL's token mean; ReVeal has turn-level advantages, not groups
    trained = {
        (p.parent.name, p.stem): yaml.safe_load(p.read_text()).get("loss_type")
        for p in RECIPES
        if p.stem != "mucode"
    }
    assert {k for k, v in trained.items() if v != "group_sum"} == {(m, "reveal") for m in MODELS}


@pytest.mark.parametrize("model", MODELS)
def test_reveal_runs_the_same_recipe_as_the_other_methods(model):
    reveal, grpo_mt = (
        yaml.safe_load((CONFIGS / model / f"{n}.yaml").read_text()) for n in ("reveal", "grpo_mt")
    )
    for key in (
        "model",
        "tasks",
        "task_args",
        "chat",
        "chat_template_kwargs",
        "g1",
        "learning_rate",
        "beta",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "steps_per_generation",
        "num_train_epochs",
        "bf16",
        "gradient_checkpointing",
        "use_vllm",
        "vllm_mode",
        "executor",
        "trl",
    ):
        assert reveal[key] == grpo_mt[key], key
    mucode = yaml.safe_load((CONFIGS / model / "mucode.yaml").read_text())
    assert (mucode["model"], mucode["tasks"], mucode["task_args"], mucode["chat"]) == (
        grpo_mt["model"],
        grpo_mt["tasks"],
        grpo_mt["task_args"],
        grpo_mt["chat"],
    )


@pytest.mark.parametrize(
    "path",
    [p for p in RECIPES if p.stem != "mucode"],  # µCode: its own vLLM policy
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_vllm_context_fits_the_model_and_a_turn(path):
    d = yaml.safe_load(path.read_text())
    max_len = d["trl"]["vllm_max_model_length"]
    assert d["max_completion_length"] < max_len <= POSITIONS[path.parent.name]


def test_qwen3_4b_recipes_differ_from_1_7b_only_in_the_model():
    # the slow dry run trains one model per family; this is why that covers Qwen3-4B's recipes too
    for name in METHODS:
        a, b = (
            yaml.safe_load((CONFIGS / m / f"{name}.yaml").read_text()) for m in ("qwen3-1.7b", "qwen3-4b")
        )
        assert {k for k in a if a[k] != b.get(k)} == {"model"}, name


# --- launch scripts, with stubs for the GPU tools ------------------------------------------------------------------
def stub_bin(tmp_path: Path, curl_ok: bool = True) -> Path:
    """`accelerate` and `trl` record their argv in <tmp>/calls/<name>.json; `curl` answers /health once `trl` runs."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    calls.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    record = f"#!{sys.executable}\nimport json, sys, os\njson.dump(sys.argv[1:], open(os.path.join({str(calls)!r}, os.path.basename(sys.argv[0]) + '.json'), 'w'))\n"
    for name in ("accelerate", "trl"):
        (bin_dir / name).write_text(record + ("import time; time.sleep(60)\n" if name == "trl" else ""))
        (bin_dir / name).chmod(0o755)
    # healthy only once the stub server has started (recorded its argv), as a real server is; answering before
    # that let the script kill `trl` before it wrote trl.json on a loaded machine
    health = f"test -f {str(calls / 'trl.json')!r} || exit 7\nexit 0" if curl_ok else "exit 7"
    (bin_dir / "curl").write_text(f"#!/bin/sh\n{health}\n")
    (bin_dir / "curl").chmod(0o755)
    # the script polls /health every 5 s; against the stub a tenth of a second is as good (the loop, the give-up
    # path and the argv are the same) and saves 5 s of idle wait per script run
    (bin_dir / "sleep").write_text("#!/bin/sh\nexec /bin/sleep 0.1\n")
    (bin_dir / "sleep").chmod(0o755)
    return bin_dir


def run_script(
    name: str, args: list[str], bin_dir: Path, timeout: float = 60, **env
) -> subprocess.CompletedProcess:
    full_env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "VIRTUAL_ENV": str(bin_dir.parent),
        **env,
    }
    return subprocess.run(
        ["bash", str(LAUNCH / name), *args], env=full_env, capture_output=True, text=True, timeout=timeout
    )


def calls(bin_dir: Path, name: str) -> list[str]:
    return json.loads((bin_dir.parent / "calls" / f"{name}.json").read_text())


def test_colocate_keeps_the_users_overrides_and_loads_bf16_under_deepspeed(tmp_path):
    bin_dir = stub_bin(tmp_path)
    recipe = CONFIGS / "olmo2-7b" / "murphy_mars.yaml"
    r = run_script(
        "colocate_1gpu.sh",
        [str(recipe), str(tmp_path / "out"), "--resume", "--set", "max_steps=3", "learning_rate=2e-6"],
        bin_dir,
    )
    assert r.returncode == 0, r.stderr
    argv = calls(bin_dir, "accelerate")
    assert argv[:3] == ["launch", "--config_file", str(LAUNCH / "accelerate_zero2_1gpu.yaml")]
    assert argv.count("--set") == 1 and "--resume" in argv  # argparse keeps only the last --set list
    sets = argv[argv.index("--set") + 1 :]
    assert sets[0] == "vllm_mode=colocate" and sets[-2:] == ["max_steps=3", "learning_rate=2e-6"]
    trl = json.loads(next(s for s in sets if s.startswith("trl=")).removeprefix("trl="))
    assert trl["model_init_kwargs"]["dtype"] == "bfloat16" and trl["vllm_max_model_length"] == 4096
    assert not any(k.startswith("vllm_server_") for k in trl) and trl["max_grad_norm"] == 1.0


def test_colocate_set_items_parse_as_the_trainer_cli_reads_them(tmp_path):
    from murphy_lab.train import config_from_args

    bin_dir = stub_bin(tmp_path)
    r = run_script(
        "colocate_1gpu.sh", [str(CONFIGS / "qwen3-1.7b" / "grpo.yaml"), str(tmp_path / "o")], bin_dir
    )
    assert r.returncode == 0, r.stderr
    argv = calls(bin_dir, "accelerate")
    cfg = config_from_args(str(CONFIGS / "qwen3-1.7b" / "grpo.yaml"), None, argv[argv.index("--set") + 1 :])
    assert cfg.vllm_mode == "colocate" and cfg.trl["vllm_max_model_length"] == 8192


@pytest.mark.parametrize("model, expected", [("olmo2-7b", "4096"), ("qwen3-1.7b", "8192")])
def test_train_8xh100_asks_vllm_for_the_models_context(tmp_path, model, expected):
    bin_dir = stub_bin(tmp_path)
    r = run_script(
        "train_8xh100.sh",
        [str(CONFIGS / model / "reveal.yaml"), str(tmp_path / "out")],
        bin_dir,
        ENTRY="murphy_lab.baselines.reveal",
    )
    assert r.returncode == 0, r.stderr
    serve = calls(bin_dir, "trl")
    assert serve[serve.index("--max_model_len") + 1] == expected
    train = calls(bin_dir, "accelerate")
    assert train[train.index("-m") + 1] == "murphy_lab.baselines.reveal"


def test_train_8xh100_gives_up_when_vllm_never_becomes_healthy(tmp_path):
    bin_dir = stub_bin(tmp_path, curl_ok=False)
    r = run_script(
        "train_8xh100.sh",
        [str(CONFIGS / "qwen3-1.7b" / "grpo.yaml"), str(tmp_path / "out")],
        bin_dir,
        timeout=30,
        VLLM_STARTUP_TIMEOUT="1",
    )
    assert r.returncode != 0 and "VLLM_STARTUP_TIMEOUT" in r.stderr
    assert not (bin_dir.parent / "calls" / "accelerate.json").exists()  # training never started


def test_train_on_four_gpus_serves_on_one_and_trains_on_three(tmp_path):
    bin_dir = stub_bin(tmp_path)
    r = run_script(
        "train_8xh100.sh",
        [
            str(CONFIGS / "qwen3-1.7b" / "murphy_mars.yaml"),
            str(tmp_path / "out"),
            "--set",
            "gradient_accumulation_steps=32",
            "steps_per_generation=32",
        ],
        bin_dir,
        VLLM_GPUS="0",
        TRAIN_GPUS="1,2,3",
    )
    assert r.returncode == 0, r.stderr
    serve, train = calls(bin_dir, "trl"), calls(bin_dir, "accelerate")
    assert serve[serve.index("--tensor_parallel_size") + 1] == "1"
    assert train[train.index("--num_processes") + 1] == "3"
    assert train[-2:] == ["gradient_accumulation_steps=32", "steps_per_generation=32"]
    r = run_script(
        "train_8xh100.sh", [str(CONFIGS / "qwen3-1.7b" / "grpo.yaml"), str(tmp_path / "o2")], bin_dir
    )
    assert calls(bin_dir, "accelerate")[calls(bin_dir, "accelerate").index("--num_processes") + 1] == "6"


def test_launch_scripts_activate_the_venv_or_say_there_is_none(tmp_path):
    bin_dir = stub_bin(tmp_path)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text(f"export VIRTUAL_ENV={venv}\ntouch {tmp_path / 'activated'}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    args = [
        "bash",
        str(LAUNCH / "colocate_1gpu.sh"),
        str(CONFIGS / "qwen3-1.7b" / "grpo.yaml"),
        str(tmp_path / "o"),
    ]
    r = subprocess.run(
        args,
        env={**env, "PATH": f"{bin_dir}:{env['PATH']}", "VENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "activated").exists()
    r = subprocess.run(
        args,
        env={**env, "PATH": f"{bin_dir}:{env['PATH']}", "VENV": str(tmp_path / "none")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        f"no venv at {tmp_path / 'none'}: create it (docs/gpu.md, Install), activate one, or set VENV=/path/to/venv"
    ]


# --- the dry run: one optimizer step of every recipe on CPU, tiny model of the same family, vLLM off --------------
CHAT = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
DRY = [p for p in RECIPES if p.parent.name in ("qwen3-1.7b", "olmo2-7b")]  # one model per family (see above)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """{family folder: a random tiny model of that architecture family}: Qwen3 for qwen3-*, OLMo-2 for olmo2-*."""
    import importlib.util

    import torch

    from murphy_lab.policy.tiny import build_tiny_model

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("families")
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "benchmarks" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    qwen3 = gpu_check.build_random_model(root / "qwen3", gpu_check.TINY_QWEN3)
    olmo2 = build_tiny_model(root / "olmo2", hidden=32, layers=2, heads=4, seed=0, chat_template=CHAT)
    return {"qwen3-1.7b": qwen3, "olmo2-7b": olmo2}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", DRY, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recipe_trains_one_step_on_cpu(path, tiny_models, tmp_path):
    """The recipe as written (report_to, gradient checkpointing, batch layout, trl fields), with the model replaced
    by a tiny one of its family, the smoke tasks, vLLM and bf16 off, 8-token completions and one step."""
    from murphy_lab.baselines.mucode.pipeline import run_mucode
    from murphy_lab.baselines.reveal.trainer import train_reveal
    from murphy_lab.train import train

    model, raw = tiny_models[path.parent.name], yaml.safe_load(path.read_text())
    cpu = dict(model=model, tasks="smoke", task_args={}, bf16=False, executor={"timeout": 5.0, "workers": 1})
    if raw.get("method") == "mucode":
        cfg = load(
            path,
            **cpu,
            use_vllm=False,
            rounds=1,
            rollouts=2,
            turns=2,
            max_new_tokens=8,
            pairs_per_task=4,
            final_verifier=False,
            evaluate=False,
            trl={"max_steps": 1},
        )
        final = run_mucode(cfg, tmp_path / "run", progress=False)
    else:
        rl = dict(cpu, use_vllm=False, max_steps=1, max_completion_length=8)
        if "reveal" in raw:
            config, reveal = load_recipe(path, **rl)
            final = train_reveal(config, tmp_path / "run", reveal)
        else:
            final = train(MurphyConfig.from_yaml(path, **rl), tmp_path / "run")
        steps = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines() if x]
        assert [s["step"] for s in steps] == [1]
    assert (Path(final) / "config.json").exists()


def test_reveal_cli_takes_plain_and_dotted_set_items(monkeypatch):
    # the launch scripts pass the trainer's --set items to `python -m murphy_lab.baselines.reveal` unchanged
    import murphy_lab.baselines.reveal.__main__ as entry
    import murphy_lab.baselines.reveal.trainer as rv

    seen = {}
    monkeypatch.setattr(
        rv, "train_reveal", lambda config, out, reveal, resume: seen.update(cfg=config, rv=reveal)
    )
    # the hub model and data: not this test's
    monkeypatch.setattr(entry, "check", lambda config, gpus=None: [])
    entry.main(
        [
            "--config",
            str(CONFIGS / "qwen3-1.7b" / "reveal.yaml"),
            "--output-dir",
            "out",
            "--set",
            "use_vllm=false",
            "bf16=false",
            "executor.timeout=3",
            "--set",
            "reveal.rounds=2",
        ]
    )
    assert seen["cfg"].use_vllm is False and seen["cfg"].executor["timeout"] == 3 and seen["rv"].rounds == 2


# --- --check, for every recipe, through the entry point that trains it ------------------------------------------------
def entry_point(path: Path):
    """The `main` of the command that trains a recipe: µCode's (`method: mucode`), ReVeal's (`reveal:`), the trainer's."""
    from murphy_lab import train
    from murphy_lab.baselines.mucode import __main__ as mucode_entry
    from murphy_lab.baselines.reveal import __main__ as reveal_entry

    raw = yaml.safe_load(path.read_text())
    return (
        mucode_entry.main
        if raw.get("method") == "mucode"
        else reveal_entry.main
        if "reveal" in raw
        else train.main
    )


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recipe_passes_the_check_of_its_entry_point_on_a_ready_node(
    path, monkeypatch, tmp_path, capsys
):
    """An 8-GPU node with the model and KodCode in the hub's caches and the gpu extra installed, offline: each of the
    27 recipes is "ok" from its own command's `--check` (no unknown field, nothing misread), without a GPU here."""
    import importlib.util

    from murphy_lab import preflight

    model = yaml.safe_load(path.read_text())["model"]
    (tmp_path / "hub" / f"models--{model.replace('/', '--')}" / "snapshots" / "r").mkdir(parents=True)
    (tmp_path / "datasets" / "KodCode___KodCode-V1").mkdir(parents=True)
    monkeypatch.setattr(preflight, "_hub_cache", lambda: tmp_path / "hub")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("MURPHY_LAB_DATA", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n in ("vllm", "deepspeed") else real(n, *a)
    )
    assert entry_point(path)(["--check", "--config", str(path), "--gpus", "8"]) is None
    assert capsys.readouterr().out.startswith(f"ok: {path}")


def test_a_recipe_check_lists_its_problems_in_one_line_each(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for path, sets in (
        (CONFIGS / "qwen3-1.7b" / "reveal.yaml", ["rounds=0"]),
        (CONFIGS / "qwen3-1.7b" / "mucode.yaml", ["rounds=0", "turns=-1"]),
    ):
        with pytest.raises(SystemExit) as err:
            entry_point(path)(["--check", "--config", str(path), "--gpus", "8", "--set", *sets])
        out = capsys.readouterr().out.splitlines()
        assert (
            err.value.code == 2 and out[0].startswith("rounds") and not any("unknown" in line for line in out)
        )
