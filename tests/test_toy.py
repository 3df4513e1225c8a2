"""The toy world: tasks, staged feedback, the noisy-expert corpus, the smoke-size SFT build and its cache."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from murphy_lab.prompts import refine_prompt
from murphy_lab.toy import build_corpus, build_toy_policy, informative_share, make_tasks, revealed
from murphy_lab.toy.world import functions, program, spec_of


@pytest.fixture(scope="module")
def executor():
    from murphy_lab.executor import Executor

    with Executor(timeout=2.0, workers=1) as ex:
        yield ex


@pytest.fixture(scope="module")
def smoke_policy(tmp_path_factory):
    return build_toy_policy("smoke", cache_dir=tmp_path_factory.mktemp("toy-cache"), seed=0, threads=1)


def _task(mask: str = "ab"):
    return next(t for t in make_tasks("train", 40, seed=3, min_hidden=0) if spec_of(t).mask == mask)


def test_make_tasks_is_deterministic_in_seed():
    a, b, c = (
        make_tasks("train", 30, seed=7),
        make_tasks("train", 30, seed=7),
        make_tasks("train", 30, seed=8),
    )
    assert [(t.prompt, t.metadata) for t in a] == [(t.prompt, t.metadata) for t in b]
    assert [t.metadata for t in a] != [t.metadata for t in c]


def test_train_and_test_splits_share_no_function():
    train = {
        (t.metadata["family"], t.metadata["a"], t.metadata["b"]) for t in make_tasks("train", 500, seed=0)
    }
    test = {(t.metadata["family"], t.metadata["a"], t.metadata["b"]) for t in make_tasks("test", 500, seed=0)}
    assert train and test and not train & test
    assert not set(functions("train")) & set(functions("test"))


def test_every_default_task_hides_a_constant():
    masks = {spec_of(t).mask for t in make_tasks("train", 300, seed=0)}
    # "none" needs no feedback: a failure on it is worth the same whatever it says
    assert masks == {"a", "b", "ab"}
    assert "none" in {spec_of(t).mask for t in make_tasks("train", 300, seed=0, min_hidden=0)}


@pytest.mark.parametrize(
    "kw", [dict(min_hidden=3), dict(min_hidden=2, p_hide_a=0.0), dict(p_hide_a=0, p_hide_b=0)]
)
def test_impossible_hiding_is_a_value_error(kw):
    with pytest.raises(ValueError, match="min_hidden"):
        make_tasks("train", 3, **kw)


def test_unknown_split_is_a_value_error():
    with pytest.raises(ValueError, match="split"):
        make_tasks("validation", 3)


def test_prompts_are_short_printable_ascii():
    for t in make_tasks("test", 50, seed=1):
        assert t.prompt.isascii() and t.prompt.isprintable() and len(t.prompt) <= 24


def test_references_pass_visible_and_hidden_tests(executor):
    tasks = make_tasks("test", 20, seed=0)
    results = executor.run_many([(t.reference, s) for t in tasks for s in (t.visible_tests, t.hidden_tests)])
    assert all(r.solved for r in results)


def test_reward_is_all_or_nothing_for_running_but_wrong_code(executor):
    t = _task("none")
    m = t.metadata
    half_right = program(m["family"], m["a"] + 1, m["b"])  # runs, right offset, wrong slope
    res = [executor.run(half_right, s) for s in (t.visible_tests, t.hidden_tests)]
    assert [r.reward for r in res] == [0.0, 0.0]


def test_wrong_offset_reveals_b_but_not_a(executor):
    t = _task()
    m = t.metadata
    fb = executor.run(program(m["family"], m["a"] % 9 + 2, m["b"] % 30 + 1), t.visible_tests).feedback
    assert revealed(t, fb) == {"b"}


def test_right_offset_wrong_slope_reveals_a(executor):
    t = _task()
    m = t.metadata
    fb = executor.run(program(m["family"], m["a"] % 9 + 2, m["b"]), t.visible_tests).feedback
    assert revealed(t, fb) == {"a"}


def test_syntax_error_reveals_nothing(executor):
    t = _task()
    fb = executor.run("def f(x)\n    return x*3+4\n", t.visible_tests).feedback
    assert revealed(t, fb) == set() and informative_share([fb]) == 0.0


def test_broken_attempts_carry_no_constant_in_code_or_feedback(executor):
    from murphy_lab.toy.corpus import BREAKS, Attempt

    t = _task()
    spec = spec_of(t)
    for i in range(len(BREAKS)):
        att = Attempt(spec, spec.a, spec.b, broken=i)
        res = executor.run(att.code, t.visible_tests)
        assert res.status == "syntax" and revealed(t, res.feedback) == set()
        quoted = re.sub(r"line \d", "", res.feedback)  # the line number is the only digit the executor adds
        assert not re.search(r"\d", att.code + quoted), att.code


def test_repairing_a_broken_attempt_starts_over():
    import random

    from murphy_lab.toy.corpus import Attempt, NoiseConfig, repair
    from murphy_lab.toy.world import Spec

    spec = Spec("add", 6, 12, hide_a=True, hide_b=False)
    noise = NoiseConfig(r_miscopy=0.0, r_broken=0.0)
    right_but_broken = Attempt(spec, 6, 12, broken=0)  # its constants were cut off: nothing to keep
    slopes = {repair(right_but_broken, set(), random.Random(i), noise).a for i in range(60)}
    assert len(slopes) >= 4  # the hidden slope is guessed again, not kept
    kept = {repair(Attempt(spec, 6, 12), set(), random.Random(i), noise).a for i in range(20)}
    assert kept == {6}  # a readable attempt keeps what it had


def test_informative_share_counts_only_failures():
    from murphy_lab.tree import Node, RolloutTree

    tree = RolloutTree(
        Node(
            children=[
                Node(reward=0.0, feedback="Tests failed:\nassert f(0) == +12  # output: 7  (via: check(f))"),
                Node(reward=0.0, feedback="The program does not compile:\nSyntaxError: invalid syntax"),
                Node(reward=1.0, feedback="All tests passed."),
            ]
        )
    )
    assert informative_share([tree]) == 0.5


def test_corpus_quotes_real_executor_feedback(executor):
    from murphy_lab.toy.world import Spec, to_task

    # 300 chains: many tasks share a program text (the same guess), and each must quote ITS task's lock (the v2
    # corpus ran a program once per text and tests, not per lock, and quoted another task's feedback)
    repairs = [e for e in build_corpus(300, executor, seed=0) if e["turn"] > 1]
    tasks = [to_task(Spec(**e["spec"]), "corpus") for e in repairs]
    codes = [
        e["prompt"].split("### Previous attempt:\n", 1)[1].split("\n### Feedback:\n", 1)[0] + "\n"
        for e in repairs
    ]
    results = executor.run_many([(code, task.visible_tests) for code, task in zip(codes, tasks)])
    assert len(repairs) > 300 and len(set(codes)) < len(codes)
    for e, task, code, res in zip(repairs, tasks, codes, results):
        assert e["prompt"] == refine_prompt(task.prompt, code, res.feedback)


def test_corpus_is_identical_for_one_seed_even_on_a_loaded_machine(executor):
    quiet = build_corpus(40, executor, seed=5)
    with cpu_hogs(3, seconds=8.0):
        loaded = build_corpus(40, executor, seed=5)
    assert loaded == quiet and build_corpus(40, executor, seed=6) != quiet


@contextlib.contextmanager
def cpu_hogs(n: int, seconds: float):
    """`n` processes that spin for up to `seconds` while the block runs (a loaded machine)."""
    import multiprocessing as mp

    hogs = [mp.get_context("spawn").Process(target=_burn, args=(seconds,)) for _ in range(n)]
    for h in hogs:
        h.start()
    try:
        yield
    finally:
        for h in hogs:
            h.terminate()
            h.join()


def _burn(seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        pass


def test_a_starved_executor_stops_the_corpus_build():
    from murphy_lab.executor.types import ExecutionResult

    class Starved:
        def run_many(self, jobs):
            return [ExecutionResult(0.0, 0, 1, "timeout", "Timed out after 2 s") for _ in jobs]

    with pytest.raises(RuntimeError, match="timed out"):
        build_corpus(5, Starved(), seed=0)


def test_two_builds_of_one_config_are_identical(smoke_policy, tmp_path):
    from pathlib import Path

    again = build_toy_policy("smoke", cache_dir=tmp_path, seed=0, threads=1)
    for name in ("model.safetensors", "corpus.jsonl"):
        assert (Path(again) / name).read_bytes() == (Path(smoke_policy) / name).read_bytes(), name


def test_shipped_policy_loads_and_matches_the_build_config(executor):
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    from murphy_lab.toy.build import SHIPPED, SIZES, config_hash, feedback_fingerprint

    info = json.loads((SHIPPED / "build.json").read_text())
    expected = config_hash(SIZES["toy"], 0, feedback_fingerprint(executor))
    assert info["config_hash"] == expected, (
        "the shipped toy policy was built from another world, corpus or executor feedback format: rebuild it with "
        "`python -m murphy_lab.toy.build --ship` and commit murphy_lab/toy/policy/"
    )
    assert sum(f.stat().st_size for f in SHIPPED.iterdir()) <= 1_000_000
    assert AutoModelForCausalLM.from_pretrained(SHIPPED).num_parameters() == info["parameters"]
    assert Path(build_toy_policy()) == SHIPPED  # the default build is the shipped one: nothing is rebuilt


def test_smoke_sft_runs_and_loss_decreases(smoke_policy):
    log = json.loads((__import__("pathlib").Path(smoke_policy) / "build.json").read_text())["loss_log"]
    assert log[-1]["loss"] < log[0]["loss"]


def test_built_policy_loads_through_from_pretrained(smoke_policy):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(smoke_policy)
    tok = AutoTokenizer.from_pretrained(smoke_policy)
    assert (
        model.config.model_type == "olmo2"
        and tok("ab", add_special_tokens=False)["input_ids"][0] != tok.unk_token_id
    )


def test_build_is_cached(smoke_policy, tmp_path_factory):
    from pathlib import Path

    stamp = (Path(smoke_policy) / "build.json").stat().st_mtime
    again = build_toy_policy("smoke", cache_dir=Path(smoke_policy).parent, seed=0, threads=1)
    # found, not rebuilt
    assert again == smoke_policy and (Path(again) / "build.json").stat().st_mtime == stamp


def test_toy_profile_is_registered_with_visible_rewards(tmp_path, monkeypatch):
    monkeypatch.setenv("MURPHY_LAB_CACHE", str(tmp_path))
    from murphy_lab.config import MurphyConfig
    from murphy_lab.profiles import resolve

    cfg = MurphyConfig.for_profile("toy", task_args={"n": 8, "policy_size": "smoke"}).validate()
    assert cfg.reward_tests == "visible"
    model, tasks = resolve(cfg, tmp_path)
    assert len(tasks) == 8 and (tmp_path / "toy").is_dir() and str(tmp_path) in model


def test_compare_summary_reports_mean_and_std_per_method():
    from murphy_lab.experiments.toy_compare import summarize

    rows = [
        {"method": "grpo", "pass@1": {"1": 10.0, "3": 20.0}, "eval_informative_share": 0.5},
        {"method": "grpo", "pass@1": {"1": 30.0, "3": 40.0}, "eval_informative_share": 0.7},
    ]
    line = summarize(rows).splitlines()[2]
    assert line.startswith("| grpo | 2 | 20.0 ± 10.0 | 30.0 ± 10.0 | 60.0 ± 10.0 |")


def test_the_stand_in_executor_compiles_as_plain_python_does():
    from murphy_lab.toy.execution import StandInExecutor

    prog = "def f(x: int) -> int:\n    return x\n"
    assert StandInExecutor().run(prog, ["assert type(f.__annotations__['x']) is type"]).solved


# --- the tokenizer, revealing feedback and p(repair) ------------------------------------------------
def test_the_toy_tokenizer_makes_each_constant_and_fixed_phrase_one_token():
    from murphy_lab.toy.tokenizer import toy_tokenizer

    tok = toy_tokenizer()
    assert tok.tokenize("def f(x):\n    return x*6+12\n") == [
        "def f(x):\n    return x*",
        "6",
        "+",
        "12",
        "\n",
    ]
    fb = "Tests failed:\nassert f(1) - f(0) == 1*6  # output: 3  (via: check(f))"
    assert tok.tokenize(fb)[:3] == ["Tests failed:\n", "assert f(1) - f(0) == 1*", "6"]
    # anything round-trips
    for text in (fb, "x = 123 # any\ttext ~`\\^$", "def g(y):\n  return y**2 - 7.5\n"):
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_revealing_feedback_is_feedback_that_determines_the_repair(executor):
    from murphy_lab.toy.world import revealing

    t = _task("a")  # A hidden, B given
    m = t.metadata
    run = lambda a, b: executor.run(program(m["family"], a, b), t.visible_tests).feedback  # noqa: E731
    wrong_a = m["a"] % 9 + 2
    assert revealing(t, run(wrong_a, m["b"]))  # states A; B passed the lock
    assert not revealing(t, run(wrong_a, m["b"] % 30 + 1))  # states B only: A is still a guess
    assert not revealing(t, executor.run("def f(x)\n    return x\n", t.visible_tests).feedback)
    t_b = _task("b")  # A given: stating B determines the function
    assert revealing(
        t_b, executor.run(program(t_b.metadata["family"], t_b.metadata["a"], 31), t_b.visible_tests).feedback
    )


class _Reader:
    """A scripted refinement policy: reads A and B from the feedback, else the prompt, else the previous attempt
    (the noise-free expert), or with `stubborn` resubmits the previous attempt."""

    def __init__(self, stubborn: bool = False):
        self.stubborn = stubborn

    def sample(self, prompts, n, seed=None):
        return [[self._one(p)] * n for p in prompts]

    def _one(self, prompt: str) -> str:
        prev = re.search(r"return x\*(\d+)([+-])(\d+)", prompt)
        if self.stubborn:
            return f"def f(x):\n    return x*{prev[1]}{prev[2]}{prev[3]}\n"
        task = re.match(r"#task: x\*(\?|\d+)[+-](\?|\d+)", prompt)
        fb_a, fb_b = re.search(r"== 1\*(\d+)", prompt), re.search(r"f\(0\) == [+-](\d+)", prompt)
        a = fb_a[1] if fb_a else task[1] if task[1] != "?" else prev[1]
        b = fb_b[1] if fb_b else task[2] if task[2] != "?" else prev[3]
        return f"def f(x):\n    return x*{a}{prev[2]}{b}\n"


def test_repair_rate_is_one_for_a_reader_and_zero_for_a_stubborn_policy(executor):
    from murphy_lab.toy.measure import repair_rate

    read = repair_rate(_Reader(), n_tasks=30, samples=2, executor=executor)
    assert read["p"] == 1.0 and read["n"] == 60 and set(read["by_mask"]) == {"a", "b", "ab"}
    assert repair_rate(_Reader(stubborn=True), n_tasks=30, samples=2, executor=executor)["p"] == 0.0


# --- reproducible under load -------------------------------------------------------------------------------------
def _short_toy_training(out: Path) -> dict:
    from murphy_lab.config import MurphyConfig
    from murphy_lab.toy.execution import get_executor
    from murphy_lab.train import train

    cfg = MurphyConfig.for_profile("toy", mode="grpo_mt", g2=1, max_steps=3, seed=1, save_steps=10)
    ex = get_executor(workers=1)
    try:
        final = train(cfg, out, executor=ex)
    finally:
        ex.close()
    trees = b"".join(p.read_bytes() for p in sorted((out / "trees").glob("*.jsonl")))
    return {"weights": (final / "model.safetensors").read_bytes(), "trees": trees}


@pytest.mark.slow
def test_toy_training_is_identical_on_a_loaded_machine(tmp_path):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the demo's run processes
    try:
        quiet = _short_toy_training(tmp_path / "quiet")
        with cpu_hogs(3, seconds=120.0):
            loaded = _short_toy_training(tmp_path / "loaded")
    finally:
        torch.set_num_threads(threads)
    assert loaded["trees"] == quiet["trees"] and b'"reward": 1.0' in quiet["trees"]
    assert loaded["weights"] == quiet["weights"]


def test_the_demo_targets_pin_the_cpu_kernels():
    """What differed between machines was the CPU kernels (AVX-512 vs AVX2 sum in another order; after ~20 RL
    steps a sampled token flips): the demo targets pin them, and torch obeys the pin."""
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    pinned = dict(re.findall(r"^demo demo-full toy-policy: export (\w+) = (\w+)$", makefile, re.M))
    assert pinned == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists() or " avx2" not in cpuinfo.read_text():
        pytest.skip("not an x86-64 CPU with AVX2")
    probe = "import torch; torch.ones(2) + 1; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **pinned},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "AVX2"
