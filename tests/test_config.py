"""MurphyConfig: the paper's defaults, YAML loading, and validation that names the field before anything loads."""

from __future__ import annotations

from pathlib import Path

import pytest

import murphy_lab.config as config_mod
import murphy_lab.policy.hf as hf_mod
from murphy_lab import profiles, trl_args
from murphy_lab.config import MurphyConfig
from murphy_lab.profiles import Profile, resolve

CONFIGS = Path(__file__).resolve().parents[1] / "reproduce" / "configs"


def test_defaults_are_the_papers_values():
    c = MurphyConfig()
    assert (c.beta, c.learning_rate, c.g1, c.g2, c.turns, c.epsilon) == (0.04, 1e-6, 8, 8, 2, 0.2)
    assert (c.mode, c.credit, c.b_grp, c.b_traj, c.backup_on) == ("murphy", "mars", None, None, "full")


@pytest.mark.parametrize(
    "field, overrides",
    [
        ("b_traj", dict(b_traj=9)),  # larger than a group of g2 = 8
        ("b_traj", dict(b_traj=1)),
        ("b_grp", dict(b_grp=9)),  # more turn-2 groups than g1 candidates can open
        ("beta", dict(beta=-0.1)),
        ("mode", dict(mode="ppo")),
        ("credit", dict(credit="sum")),
        ("gamma", dict(gamma=1.5)),
        ("model", dict(model="/nonexistent/model/dir")),
        ("turns", dict(mode="grpo", turns=2)),  # single-turn GRPO with turns = 2
        ("g2", dict(mode="grpo_mt", g2=8)),  # GRPO-MT with g2 = 8
        ("b_traj", dict(mode="grpo_mt", g2=1, b_traj=4)),  # pruning outside murphy
        ("per_device_train_batch_size", dict(per_device_train_batch_size=6)),  # trees split across devices
        ("loss_type", dict(loss_type="sapo")),
    ],
)
def test_invalid_field_is_named(field, overrides):
    with pytest.raises(ValueError, match=field):
        MurphyConfig.for_profile("smoke", **overrides).validate()


@pytest.mark.parametrize(
    "mode, implied",
    [("grpo_mt", dict(g2=1, turns=2)), ("grpo", dict(g2=2, turns=1)), ("murphy", dict(g2=2, turns=2))],
)
def test_a_mode_alone_takes_the_g2_and_s_it_implies(mode, implied):
    """`--set mode=grpo_mt` alone grows chains (G2 = 1) instead of being refused for the smoke preset's G2 = 2; a value
    given with it still has to fit the mode."""
    cfg = MurphyConfig.for_profile("smoke", mode=mode).validate()
    assert {k: getattr(cfg, k) for k in implied} == implied
    from murphy_lab.train import config_from_args

    assert config_from_args(None, "smoke", [f"mode={mode}"]).validate() == cfg
    with pytest.raises(ValueError, match="g2: must be 1 for mode='grpo_mt'"):
        config_from_args(None, "smoke", ["mode=grpo_mt", "g2=3"]).validate()


def test_trl_may_not_set_a_field_the_config_names_itself():
    with pytest.raises(ValueError, match=r"trl: trl.num_generations is g1: set g1 instead"):
        MurphyConfig.for_profile("smoke", trl={"num_generations": 4}).validate()


@pytest.mark.parametrize("field", ["use_vllm", "bf16"])
def test_gpu_only_option_without_cuda_is_named(field, monkeypatch):
    monkeypatch.setattr(config_mod, "_cuda_available", lambda: False)
    # bf16 is also allowed on a CPU with bf16 instructions
    monkeypatch.setattr(config_mod, "cpu_bf16", lambda: False)
    with pytest.raises(ValueError, match=field):
        MurphyConfig.for_profile("smoke", **{field: True}).validate()


def test_bf16_on_a_cpu_with_bf16_instructions(monkeypatch, tmp_path):
    """bf16 without CUDA is accepted where the CPU has bfloat16 instructions: TRL is told the run is on the CPU, and a
    LoRA run loads its frozen base weights in bf16 (a full fine-tuning keeps fp32 weights under autocast)."""
    monkeypatch.setattr(config_mod, "_cuda_available", lambda: False)
    monkeypatch.setattr(config_mod, "cpu_bf16", lambda: True)
    lora = MurphyConfig.for_profile("smoke", bf16=True, use_peft=True).to_grpo_config(tmp_path)
    assert (lora.bf16, lora.use_cpu, lora.model_init_kwargs) == (True, True, {"dtype": "bfloat16"})
    full = MurphyConfig.for_profile("smoke", bf16=True).to_grpo_config(tmp_path)
    assert (full.bf16, full.use_cpu, full.model_init_kwargs) == (True, True, None)


def test_cpu_bf16_reads_the_cpu_flags(monkeypatch, tmp_path):
    info = {
        "x86 with AVX512-BF16": "flags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n",
        "Arm BF16": "Features\t: fp asimd bf16 i8mm\n",
        "x86 without": "flags\t\t: fpu avx2 avx512f\n",
    }
    found = {}
    for name, text in info.items():
        (tmp_path / name).write_text(text)
        monkeypatch.setattr(
            hf_mod, "Path", lambda p, f=tmp_path / name: f if p == "/proc/cpuinfo" else Path(p)
        )
        found[name] = hf_mod.cpu_bf16()
    assert found == {"x86 with AVX512-BF16": True, "Arm BF16": True, "x86 without": False}


def test_unknown_field_is_named():
    with pytest.raises(ValueError, match="warmup"):
        MurphyConfig.for_profile("smoke", warmup=3)


def test_unknown_trl_passthrough_field_is_named():
    with pytest.raises(ValueError, match="not_a_grpo_field"):
        MurphyConfig.for_profile("smoke", trl={"not_a_grpo_field": 1}).validate()


def test_paper_profile_requires_model_and_tasks():
    with pytest.raises(ValueError, match="model"):
        MurphyConfig().validate()


def test_hub_id_is_not_checked_as_a_path():
    MurphyConfig(model="Qwen/Qwen3-1.7B", tasks="kodcode").validate()


def test_yaml_round_trip(tmp_path):
    c = MurphyConfig.for_profile("smoke", mode="murphy", credit="mers", gamma=0.9, b_traj=2)
    c.to_yaml(tmp_path / "c.yaml")
    assert MurphyConfig.from_yaml(tmp_path / "c.yaml") == c


def test_yaml_layers_profile_then_file_then_overrides(tmp_path):
    (tmp_path / "c.yaml").write_text("profile: smoke\ng2: 3\nturns: 3\n")
    c = MurphyConfig.from_yaml(tmp_path / "c.yaml", turns=2)
    assert (c.g1, c.g2, c.turns) == (MurphyConfig.for_profile("smoke").g1, 3, 2)


def test_grpo_config_carries_g1_beta_and_no_kl_bias_correction(tmp_path):
    args = MurphyConfig.for_profile("smoke").to_grpo_config(tmp_path)
    assert (args.num_generations, args.beta, args.use_bias_correction_kl) == (4, 0.04, False)


def test_registered_profile_builder_is_used(tmp_path, monkeypatch):
    monkeypatch.setitem(
        profiles.PROFILES,
        "unit",
        Profile("unit", trainer={"g1": 2, "g2": 2}, build=lambda cfg, workdir: ("some/model", ["t"])),
    )
    assert resolve(MurphyConfig.for_profile("unit"), tmp_path) == ("some/model", ["t"])
    assert MurphyConfig.for_profile("unit").g1 == 2


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in CONFIGS.glob("*/*.yaml")
        if p.parent.name != "launch"
        # their own loaders: test_recipes.py
        and p.stem not in ("reveal", "mucode")
    ),
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_every_reproduce_config_validates_on_a_gpu_machine(path, monkeypatch):
    monkeypatch.setattr(config_mod, "_cuda_available", lambda: True)
    c = MurphyConfig.from_yaml(path).validate()
    assert (c.profile, c.beta, c.learning_rate, c.g1) == ("paper", 0.04, 1e-6, 8)


def test_reproduce_configs_cover_every_paper_model_and_method():
    names = {(p.parent.name, p.stem) for p in CONFIGS.glob("*/*.yaml") if p.parent.name != "launch"}
    methods = {
        "murphy_mars",
        "murphy_mers_g0.9",
        "murphy_mers_g1.0",
        "murphy_interp",
        "murphy_intrap",
        "grpo_mt",
    }
    assert {(m, x) for m in ("qwen3-1.7b", "qwen3-4b", "olmo2-7b") for x in methods} <= names


@pytest.mark.parametrize(
    "logger, message",
    [
        ("tensorboard", "'tensorboard', which is not installed \\(pip install tensorboard; the gpu"),
        ("wandb", "'wandb', which is not installed \\(pip install wandb\\)"),
    ],
)
def test_report_to_a_logger_that_is_not_installed_is_named(monkeypatch, logger, message):
    monkeypatch.setattr(config_mod, "_loggers", lambda: ({"tensorboard", "wandb"}, set()))
    with pytest.raises(ValueError, match=f"report_to: includes {message}"):
        MurphyConfig.for_profile("smoke", report_to=[logger]).validate()


def test_report_to_wandb_without_wandb_is_refused_before_any_trainer():
    """transformers raises only when the trainer is built (a RuntimeError traceback after the model loads)."""
    pytest.importorskip("transformers")
    if "wandb" in config_mod._loggers()[1]:
        pytest.skip("wandb is installed here")
    with pytest.raises(ValueError, match="report_to: includes 'wandb', which is not installed"):
        MurphyConfig.for_profile("smoke", report_to="wandb").validate()


def test_an_unknown_logger_gets_the_nearest_name():
    with pytest.raises(
        ValueError, match="'tensorbord' is not a logger transformers knows \\(did you mean 'tensorboard'"
    ):
        MurphyConfig.for_profile("smoke", report_to="tensorbord").validate()


def test_an_unknown_config_field_suggests_the_nearest_name():
    with pytest.raises(ValueError, match="'learning_rat' \\(did you mean 'learning_rate'\\?\\)"):
        MurphyConfig.for_profile("smoke", learning_rat=1e-3)


# building a GRPOConfig resets accelerate's state, so this lives here, not beside test_prefix.py's module-wide trainer
@pytest.mark.parametrize("on", [False, True])
def test_gradient_checkpointing_is_what_the_config_says_not_trls_default(on, tmp_path):
    """TRL's GRPOConfig turns checkpointing on by default, which also switches prefix sharing off in training."""
    args = MurphyConfig.for_profile("smoke", model="x", gradient_checkpointing=on).to_grpo_config(tmp_path)
    assert args.gradient_checkpointing is on


@pytest.mark.parametrize("args_cls", ["GRPOConfig", "SFTConfig", "RewardConfig"])
def test_checkpointing_uses_the_keyword_the_installed_transformers_knows(args_cls, tmp_path):
    """transformers 5.24 names it activation_checkpointing, 5.17 (the gpu extra's pin) gradient_checkpointing."""
    import trl

    cls = getattr(trl, args_cls)
    ((name, on),) = trl_args.checkpointing(cls, True).items()
    args = cls(output_dir=str(tmp_path), use_cpu=True, report_to=[], **{name: on})
    assert getattr(args, name) is True


def test_a_cpu_run_does_not_ask_for_pinned_memory(tmp_path):
    # transformers' default (True) makes torch warn "'pin_memory' argument is set as true but no accelerator" twice
    # per CPU run; pinning only helps a CUDA device
    import torch

    args = MurphyConfig.for_profile("smoke").to_grpo_config(tmp_path)
    assert args.dataloader_pin_memory is torch.cuda.is_available()
