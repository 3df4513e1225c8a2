"""Every method of the paper profile is trained in the format it is evaluated in: for each paper model and trained
method, the first prompt its *real* training path sends to the model and the first prompt its *real* evaluation
path sends are captured and compared, as the model sees them (chat template applied).

- training: the method's registry entry (`murphy_lab.methods`), as `default_train` calls it; a paper recipe is
  launched as on the cluster (the written recipe run by the launch script's ENTRY module, here in-process), and
  the prompt is captured where TRL's generation receives its token ids (GRPO, GRPO-MT, MURPHY, ReVeal) or where
  µCode's rollout policy samples;
- evaluation: `default_evaluate`, i.e. the method's own scaffold (ReVeal: its tagged rounds) and the evaluation
  policy (`make_policy`).

ReVeal's prompt is its tagged round-1 prompt in both (before, it was evaluated under the Reflexion prompts); the
generation length per turn is one value; a config that would train in another format is refused before any model
loads, naming the option."""

from __future__ import annotations

import dataclasses
import runpy
import subprocess
import sys

import pytest

import murphy_lab.experiments as X
from murphy_lab import profiles
from murphy_lab.methods import default_methods, get_method
from murphy_lab.methods.formats import policy_kwargs
from murphy_lab.profiles import get_profile
from murphy_lab.tasks import Task

# a chat template that shows the template arguments in the text, so a lost {enable_thinking: false} is visible
TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}[no-think]{% endif %}{% endif %}"
)
PAPER = get_profile("paper")
TRAINED = [m for m in default_methods(PAPER) if get_method(m).trains]  # the base model is evaluated only
# the recipes' GPU settings, off for a CPU test
CPU = (("use_vllm", False), ("bf16", False), ("report_to", "none"))
TASKS = [
    Task(
        f"t/{i}",
        f"Write add{i}(a, b) that returns a + b + {i}.",
        visible_tests=[f"assert add{i}(1, 2) == {3 + i}"],
        hidden_tests=[f"assert add{i}(2, 2) == {4 + i}"],
        reference=f"def add{i}(a, b):\n    return a + b + {i}\n",
    )
    for i in range(4)
]


class Seen(Exception):
    """Raised where the first prompt reaches the model: nothing is generated, trained or executed."""


class NoExecutor:
    """Stands in for the sandboxed executor: the first prompt is captured before anything runs."""

    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass

    def run_many(self, jobs):
        raise AssertionError("nothing should run before the first prompt reaches the model")


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> str:
    from murphy_lab.policy.tiny import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("chat") / "m", hidden=16, layers=1, heads=2, chat_template=TEMPLATE
    )


@pytest.fixture
def capture(monkeypatch):
    """Intercepts the two places a prompt reaches a model, the data loaders, the executor and the launch; returns
    the list the rendered prompts land in."""
    import murphy_lab.baselines.mucode.pipeline as mucode_pipeline
    import murphy_lab.experiments.dispatch as dispatch
    import murphy_lab.policy as policy_pkg
    import murphy_lab.preflight as preflight
    import murphy_lab.trainer.run as lifecycle
    from murphy_lab.policy import TransformersPolicy
    from murphy_lab.policy.base import TextPolicy
    from murphy_lab.trainer.core import MurphyTrainer

    seen: list[str] = []

    def generate(self, prompt_ids, *args, **kwargs):  # TRL's generation inside MurphyTrainer / ReVealTrainer
        seen.append(self.processing_class.decode(prompt_ids[0]))
        raise Seen

    def sample(self, prompts, n, **kwargs):  # a Policy: µCode's rollouts, the evaluation scaffolds
        seen.append(self.render(prompts[0]))
        raise Seen

    def run(cmd, check, env):  # the launch script: its ENTRY module with the recipe it was handed, in-process
        monkeypatch.setattr(sys, "argv", [env["ENTRY"], "--config", cmd[2], "--output-dir", cmd[3]])
        runpy.run_module(env["ENTRY"], run_name="__main__", alter_sys=True)

    monkeypatch.setattr(MurphyTrainer, "_generate_single_turn", generate)
    monkeypatch.setattr(TextPolicy, "sample", sample)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(profiles, "load_tasks", lambda name, **kw: TASKS)  # KodCode, LCB-v6: not on disk here
    # ... so train's reach check must not ask
    monkeypatch.setattr(preflight, "cached", lambda repo_id, kind: True)
    monkeypatch.setattr(policy_pkg, "VLLMPolicy", TransformersPolicy)  # both render through the chat template
    for module in (lifecycle.executor_pkg, mucode_pipeline, dispatch):
        monkeypatch.setattr(module, "Executor", NoExecutor)
    return seen


def paper_exp(model: str, method: str, overrides=CPU) -> X.Experiment:
    (exp,) = X.plan("paper", methods=(method,), models=(model,), seeds=(0,))
    return dataclasses.replace(exp, overrides=exp.overrides + tuple(overrides))


def first_prompt(fn, seen: list) -> str:
    with pytest.raises(Seen):
        fn()
    return seen.pop()


# runpy, as `python -m` would not
@pytest.mark.filterwarnings("ignore:'murphy_lab.train' found in sys.modules")
@pytest.mark.parametrize("method", TRAINED)
@pytest.mark.parametrize("model", PAPER.models)
def test_training_and_evaluation_send_the_same_first_prompt(model, method, chat_model, capture, tmp_path):
    exp = paper_exp(model, method)
    trained = first_prompt(lambda: X.default_train(exp, chat_model, tmp_path / "ckpt"), capture)
    evaluated = first_prompt(lambda: X.default_evaluate(exp, chat_model, exp.benchmarks[0]), capture)
    assert trained == evaluated and trained.startswith("<|user|>")  # the chat template, in both
    assert ("[no-think]" in evaluated) == model.startswith("Qwen3")
    # ReVeal's own rounds, Reflexion otherwise
    assert ("<generation-answer>" in evaluated) == (method == "reveal")
    assert TASKS[0].prompt in evaluated


def test_reveal_is_evaluated_in_its_own_rounds_by_default_and_reads_tags_in_a_shared_scaffold():
    from murphy_lab.baselines.reveal import ReVealScaffold
    from murphy_lab.scaffolds import Reflexion

    own = paper_exp("Qwen3-4B", "reveal")
    assert own.scaffold == "reveal" and X.Experiment("toy", "toy", "murphy").scaffold == "reflexion"
    scaffold = get_method("reveal").evaluation(own)
    # the paper's chat transcripts, as in training
    assert isinstance(scaffold, ReVealScaffold) and scaffold.chat
    shared = get_method("reveal").evaluation(dataclasses.replace(own, scaffold="reflexion"))
    assert isinstance(shared, Reflexion)
    assert (
        shared.extract("<generation-answer>\n```python\nx = 1\n```\n</generation-answer>").strip() == "x = 1"
    )


@pytest.mark.parametrize("method", TRAINED)
@pytest.mark.parametrize("profile", ["toy", "paper"])
def test_generation_length_per_turn_is_the_profiles_one_value(profile, method):
    exp = X.plan(profile, methods=(method,), seeds=(0,))[0]
    exp = dataclasses.replace(exp, overrides=exp.overrides + CPU)
    cfg = get_method(method).config(exp, "base")
    length = getattr(cfg, "max_completion_length", None) or cfg.max_new_tokens
    assert length == policy_kwargs(exp)["max_new_tokens"] == get_profile(profile).max_new_tokens


@pytest.mark.parametrize(
    "method, option, value",
    [
        ("mucode", "chat", False),
        ("murphy", "chat", False),
        ("grpo", "chat_template_kwargs", {}),
        ("reveal", "chat", False),
        ("mucode", "max_new_tokens", 2048),
        ("murphy", "max_completion_length", 2048),
    ],
)
def test_a_training_format_that_evaluation_does_not_use_is_refused_naming_the_option(
    method, option, value, tmp_path
):
    exp = paper_exp("Qwen3-1.7B", method, overrides=((option, value),))
    shown = "max_new_tokens" if option == "max_completion_length" else option
    with pytest.raises(ValueError, match=rf"training option {shown}=.* differs from the evaluation's"):
        X.default_train(exp, "base", tmp_path)  # before any model loads or any process starts


@pytest.mark.parametrize("model", PAPER.models)
def test_paper_mucode_config_takes_its_recipe_fields(model):
    # the paper µCode row trains with reproduce/configs/<model>/mucode.yaml (vLLM, bf16, its executor), not the
    # dataclass defaults
    import yaml

    from murphy_lab.methods.recipes import recipe_path

    exp = paper_exp(model, "mucode", overrides=())
    recipe = yaml.safe_load(recipe_path(exp).read_text())
    cfg = get_method("mucode").config(exp, "base")
    assert (cfg.use_vllm, cfg.bf16, cfg.executor) == (recipe["use_vllm"], recipe["bf16"], recipe["executor"])
    assert cfg.model == "base" and cfg.evaluate is False
