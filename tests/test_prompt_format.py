"""Every method of the paper profile is trained in the prompt format it is evaluated in: for each paper model and
method, one training prompt and one evaluation prompt are rendered through the real code paths (the trainer's
turn sampler feeding TRL's tokenization, µCode's rollout policy, the evaluation policy) and compared; the
generation length per turn is one value; a config that would train in another format is refused before any
model loads, naming the option."""

from __future__ import annotations

import dataclasses

import pytest

import murphy_lab.experiments as X
from murphy_lab.profiles import get_profile
from murphy_lab.prompts import first_prompt

# a chat template that shows the template arguments in the text, so a lost {enable_thinking: false} is visible
TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}[no-think]{% endif %}{% endif %}"
)
PROMPT = first_prompt("Write add(a, b) that returns a + b.")
PAPER = get_profile("paper")
METHODS = [m for m in PAPER.methods if m != "base"]  # base is evaluated only


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> str:
    from murphy_lab.policy.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("chat") / "m", hidden=16, layers=1, heads=2, chat_template=TEMPLATE)


def paper_exp(model: str, method: str) -> X.Experiment:
    return X.plan("paper", methods=(method,), models=(model,), seeds=(0,))[0]


def training_config(exp: X.Experiment, monkeypatch, tmp_path):
    """The config the method would train with (nothing trains: ReVeal's trainer call is intercepted)."""
    if exp.method == "mucode":
        return X.mucode_config(exp, "base")
    if exp.profile == "paper":  # a CPU test: no vLLM server, no bf16 GPU
        exp = dataclasses.replace(exp, overrides=exp.overrides + (("use_vllm", False), ("bf16", False)))
    if exp.method == "reveal":  # the real dispatch, with the launch intercepted: the recipe file it launches
        import subprocess

        import murphy_lab.baselines.reveal.trainer as reveal

        seen = {}
        monkeypatch.setattr(reveal, "train_reveal", lambda config, *a, **k: seen.setdefault("cfg", config) and "out")
        monkeypatch.setattr(subprocess, "run", lambda argv, **k: seen.setdefault("recipe", argv[2]))  # paper
        X.default_train(exp, "base", tmp_path / "out")
        if "recipe" in seen:
            return reveal.load_recipe(seen["recipe"], use_vllm=False, bf16=False)[0]
        return seen["cfg"]
    return X.train_config(exp, "base")


def render_training_prompt(cfg, model_path: str, tmp_path) -> str:
    """The turn-1 prompt as the trainer (MurphyTrainer's turn sampler + TRL's tokenization) or µCode's rollout
    policy renders it for the model, decoded."""
    from murphy_lab.baselines.mucode.config import MuCodeConfig

    if isinstance(cfg, MuCodeConfig):
        from murphy_lab.baselines.mucode.pipeline import generator_policy

        return generator_policy(model_path, dataclasses.replace(cfg, use_vllm=False), 0.7).render(PROMPT)
    from murphy_lab.config import MurphyConfig
    from murphy_lab.smoke import smoke_tasks
    from murphy_lab.trainer import MurphyTrainer, TurnSampler

    small = MurphyConfig.for_profile("smoke", model=model_path, chat=cfg.chat,
                                     chat_template_kwargs=cfg.chat_template_kwargs)  # fmt: skip
    args = small.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    trainer = MurphyTrainer(model=model_path, args=args, murphy=small, tasks=smoke_tasks(), executor=object())
    seen = []

    def generate(prompt_ids, images, multimodal, num_generations):  # TRL's generation, intercepted
        seen.extend(prompt_ids)
        return [[trainer.processing_class.eos_token_id]] * len(prompt_ids), None

    trainer._generate_single_turn = generate
    TurnSampler(trainer, filler=PROMPT)([PROMPT], 1)
    return trainer.processing_class.decode(seen[0])


def render_evaluation_prompt(exp: X.Experiment, model_path: str) -> str:
    from murphy_lab.policy import TransformersPolicy

    return TransformersPolicy(model_path, **X.policy_kwargs(exp)).render(PROMPT)  # make_policy's options


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("model", PAPER.models)
def test_training_and_evaluation_render_the_same_prompt(model, method, chat_model, tmp_path, monkeypatch):
    exp = paper_exp(model, method)
    cfg = training_config(exp, monkeypatch, tmp_path)
    trained, evaluated = render_training_prompt(cfg, chat_model, tmp_path), render_evaluation_prompt(exp, chat_model)
    assert trained == evaluated and trained.startswith("<|user|>")  # the chat template, in both
    assert ("[no-think]" in evaluated) == model.startswith("Qwen3")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("profile", ["toy", "paper"])
def test_generation_length_per_turn_is_the_profiles_one_value(profile, method, monkeypatch, tmp_path):
    exp = X.plan(profile, methods=(method,), seeds=(0,))[0]
    cfg = training_config(exp, monkeypatch, tmp_path)
    length = getattr(cfg, "max_completion_length", None) or cfg.max_new_tokens
    assert length == X.policy_kwargs(exp)["max_new_tokens"] == get_profile(profile).max_new_tokens


@pytest.mark.parametrize("method, option, value", [
    ("mucode", "chat", False), ("murphy", "chat", False), ("grpo", "chat_template_kwargs", {}),
    ("mucode", "max_new_tokens", 2048), ("murphy", "max_completion_length", 2048),
])  # fmt: skip
def test_a_training_format_that_evaluation_does_not_use_is_refused_naming_the_option(method, option, value, tmp_path):
    exp = dataclasses.replace(paper_exp("Qwen3-1.7B", method), overrides=((option, value),))
    shown = "max_new_tokens" if option == "max_completion_length" else option
    with pytest.raises(ValueError, match=rf"training option {shown}=.* differs from the evaluation's"):
        X.default_train(exp, "base", tmp_path)  # before any model loads or any process starts


@pytest.mark.parametrize("model", PAPER.models)
def test_paper_mucode_config_takes_its_recipe_fields(model):
    # the paper µCode row trains with reproduce/configs/<model>/mucode.yaml (vLLM, bf16, its executor), not the
    # dataclass defaults
    import yaml

    recipe = yaml.safe_load(X.paper_recipe(paper_exp(model, "mucode")).read_text())
    cfg = X.mucode_config(paper_exp(model, "mucode"), "base")
    assert (cfg.use_vllm, cfg.bf16, cfg.executor) == (recipe["use_vllm"], recipe["bf16"], recipe["executor"])
    assert cfg.model == "base" and cfg.evaluate is False
