"""ReVeal baseline: the tag parser on messy outputs, test validation against the reference, each reward term on
hand-made transcripts, TAPO against a hand computation, the ScriptedPolicy evaluation path, a smoke training run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from murphy_lab.baselines.reveal import (
    Chain,
    Check,
    Turn,
    check_rounds,
    evaluate_reveal,
    extract_tests,
    parse_round,
    reveal_extract,
    run_chains,
    tapo,
    turn_rewards,
    verification_reward,
)
from murphy_lab.executor.types import IOTest, TestSuite
from murphy_lab.policy.scripted import ScriptedPolicy
from murphy_lab.tasks.task import Task

RIGHT = "def f(x):\n    return 2 * x\n"
WRONG = "def f(x):\n    return x + 1\n"  # right only at x = 1


def double_task(task_id="double") -> Task:
    return Task(
        task_id=task_id,
        prompt="Write f(x) that returns twice x.",
        visible_tests=["assert f(1) == 2"],
        hidden_tests=["assert f(1) == 2", "assert f(5) == 10", "assert f(0) == 0"],
        entry_point="f",
        reference=RIGHT,
    )


def round_text(code: str, tests: list[str]) -> str:
    return (
        f"<generation-think>think</generation-think>\n<generation-answer>\n```python\n{code}```\n"
        f"</generation-answer>\n<verification-think>edge cases</verification-think>\n"
        f"<verification-answer>\n" + "\n".join(tests) + "\n</verification-answer>"
    )


# --- the parser -------------------------------------------------------------------------------------------------
def test_parser_reads_code_and_tests_of_a_well_formed_round():
    rd = parse_round(round_text(RIGHT, ["assert f(2) == 4"]))
    assert rd.code == RIGHT and rd.tests_text == "assert f(2) == 4" and rd.issues == []


def test_parser_splits_generation_from_verification_at_the_first_verification_tag():
    text = round_text(RIGHT, ["assert f(2) == 4"])
    rd = parse_round(text)
    assert text[rd.split :].startswith("<verification-think>") and rd.cut == len(text)


def test_parser_cuts_a_tool_feedback_the_model_wrote_itself():
    text = round_text(RIGHT, ["assert f(2) == 4"]) + "\n<tool-feedback>all good</tool-feedback>"
    rd = parse_round(text)
    assert text[: rd.cut].endswith("</verification-answer>") and any("tool-feedback" in i for i in rd.issues)


def test_parser_accepts_aliases_and_unclosed_tags_and_reports_them():
    rd = parse_round("< Generation-Think >hmm\n<answer>\ndef f(x): return x\n<verify>assert f(1) == 1\n")
    assert rd.code == "def f(x): return x\n" and rd.tests_text.strip() == "assert f(1) == 1"
    assert "<answer> read as <generation-answer>" in rd.issues
    assert "<verification-answer> is not closed" in rd.issues


def test_parser_takes_untagged_code_and_reports_missing_tags():
    rd = parse_round("Here you go:\n```python\ndef f(x):\n    return 1\n```\n")
    assert rd.code == "def f(x):\n    return 1\n" and rd.tests_text == ""
    assert any("no <generation-answer>" in i for i in rd.issues)
    assert any("no <verification-answer>" in i for i in rd.issues)


def test_parser_keeps_the_last_of_duplicate_sections():
    text = "<generation-answer>def f(): return 1</generation-answer><generation-answer>def f(): return 2</generation-answer>"
    rd = parse_round(text)
    assert "return 2" in rd.code and any("more than once" in i for i in rd.issues)


def test_reveal_extract_gives_other_scaffolds_the_generation_answer():
    assert reveal_extract(round_text(RIGHT, ["assert f(1) == 2"])) == RIGHT


def test_extract_tests_reads_multiline_asserts_and_ignores_other_statements():
    tests, issues = extract_tests("```python\nx = 3\nassert f(x) == (\n    6)\nassert f(0) == 0\n```")
    assert tests == ["assert f(x) == (\n    6)", "assert f(0) == 0"] and len(issues) == 1


def test_extract_tests_falls_back_to_assert_lines_when_the_block_does_not_parse():
    tests, issues = extract_tests("assert f(1) == 2\nassert f(2) ==\nthis is prose")
    assert tests == ["assert f(1) == 2", "assert f(2) =="] and "does not parse" in issues[0]


def test_extract_tests_reads_input_output_pairs():
    tests, issues = extract_tests(
        "Input:\n1 2\nOutput:\n3\nInput: 5 5\nExpected Output: 10\nInput:\n7", io=True
    )
    assert tests == [IOTest("1 2\n", "3"), IOTest("5 5\n", "10")] and issues == [
        "an Input: without an Output: (ignored)"
    ]


def test_extract_tests_caps_the_number_of_tests():
    tests, issues = extract_tests("\n".join(f"assert f({i}) == {2 * i}" for i in range(12)), max_tests=10)
    assert len(tests) == 10 and "only the first 10" in issues[0]


# --- the tool: validation against the reference ------------------------------------------------------------------
def test_a_test_the_reference_fails_is_invalid_and_not_run(executor):
    # the last two are wrong (reference fails)
    tests = ["assert f(2) == 4", "assert f(3) == 7", "assert f(0) == 1"]
    (c,) = check_rounds([(WRONG, tests, RIGHT, None)], executor)
    assert c.valid == [True, False, False] and c.n_valid == 1
    assert "Invalid test cases" in c.feedback and "assert f(3) == 7" in c.feedback


def test_the_candidate_is_judged_on_valid_tests_with_expected_vs_actual(executor):
    (c,) = check_rounds([(WRONG, ["assert f(2) == 4", "assert f(1) == 2"], RIGHT, None)], executor)
    assert c.status == ["failed", "passed"] and c.n_passed == 1 and not c.verdict
    assert "Test 1: failed  assert f(2) == 4  # actual: 3" in c.feedback and "Passed 1 of 2" in c.feedback


def test_runtime_errors_and_compile_errors_reach_the_feedback(executor):
    crash = "def f(x):\n    return 1 / 0\n"
    c1, c2 = check_rounds(
        [(crash, ["assert f(2) == 4"], RIGHT, None), ("def f(x) return", ["assert f(2) == 4"], RIGHT, None)],
        executor,
    )
    assert "ZeroDivisionError" in c1.feedback and "does not compile" in c2.feedback


def test_without_a_reference_tests_run_unvalidated(executor):
    (c,) = check_rounds([(RIGHT, ["assert f(3) == 7"], None, None)], executor)
    assert c.valid == [True] and c.status == ["failed"] and "could not be checked" in c.feedback


def test_io_tests_are_validated_and_judged(executor):
    ref, cand = "print(int(input()) * 2)\n", "print(int(input()) + 1)\n"
    (c,) = check_rounds([(cand, [IOTest("2\n", "4"), IOTest("1\n", "3")], ref, None)], executor)
    assert c.valid == [True, False] and c.status[0] == "failed" and "Expected:\n4\nGot:\n3" in c.feedback


# --- rewards on hand-made transcripts -----------------------------------------------------------------------------
def turn(h: float, tests: int = 0, valid: int = 0, passed: int = 0) -> Turn:
    """A hand-made round: oracle pass rate h, `tests` written, `valid` of them valid, `passed` of the valid pass."""
    status = ["passed"] * passed + ["failed"] * (tests - passed)
    c = Check(
        tests=[f"t{j}" for j in range(tests)],
        valid=[True] * valid + [False] * (tests - valid),
        status=status,
        oracle=h,
        oracle_total=3,
    )
    return Turn(prompt="", raw="", completion="", split=0, code="", issues=[], check=c)


def chain_of(*turns: Turn, i: int = 0) -> Chain:
    return Chain(task_id="t", index=i, turns=list(turns))


def test_generation_reward_is_the_improvement_in_oracle_pass_rate():
    c = turn_rewards(chain_of(turn(1 / 3), turn(1 / 3), turn(1.0)))
    assert [round(t.r_gen, 6) for t in c.turns] == [round(1 / 3, 6), 0.0, round(2 / 3, 6)]


def test_outcome_reward_is_whether_the_final_program_solves():
    assert turn_rewards(chain_of(turn(1.0), turn(2 / 3))).outcome == 0.0
    assert turn_rewards(chain_of(turn(0.0), turn(1.0))).outcome == 1.0


def test_verification_reward_pays_a_valid_test_that_catches_wrong_code():
    # caught: verdict False = oracle
    assert verification_reward(turn(1 / 3, tests=2, valid=2, passed=1)) == 1.0


def test_verification_reward_is_zero_when_wrong_code_passes_every_self_test():
    assert verification_reward(turn(1 / 3, tests=2, valid=2, passed=2)) == 0.0  # missed the bug


def test_verification_reward_pays_confirming_right_code_scaled_by_validity():
    assert verification_reward(turn(1.0, tests=4, valid=3, passed=3)) == 0.75  # one invalid test of four


def test_verification_reward_is_zero_without_tests():
    assert verification_reward(turn(1.0)) == 0.0 and verification_reward(turn(0.0)) == 0.0


def test_tapo_equals_a_hand_computation():
    # chain 0: h = 1/3 then 1 (solved, tests caught the bug in round 1); chain 1: h = 0, one round, no tests
    c0 = chain_of(turn(1 / 3, tests=1, valid=1, passed=0), turn(1.0, tests=1, valid=1, passed=1), i=0)
    c1 = chain_of(turn(0.0), i=1)
    tapo([c0, c1], gamma=1.0)
    s = 2**0.5 / 2  # Bessel std of two values differing by 1 is 1/sqrt(2)
    a_out = 1 / (s + 1e-4)  # R = (1, 0): ±0.5 / (std + eps)
    # round 1: G^g = (1, 0) -> ±0.5/(s+eps); G^v = (2, 0) -> std of (2, 0) is sqrt(2)
    assert c0.turns[0].adv_gen == pytest.approx(0.5 * a_out + 0.5 * a_out)
    assert c0.turns[0].adv_ver == pytest.approx(0.5 * a_out + 1.0 / (2**0.5 + 1e-4))
    assert c1.turns[0].adv_gen == pytest.approx(-a_out)
    # round 2: only chain 0 played it: turn-level part 0, outcome part only
    assert c0.turns[1].adv_gen == pytest.approx(0.5 * a_out) and c0.turns[1].adv_ver == pytest.approx(
        0.5 * a_out
    )


def test_verification_rewards_never_reach_generation_tokens():
    a = chain_of(turn(0.0, tests=1, valid=1, passed=0), i=0)  # caught its bug: r^v = 1
    b = chain_of(turn(0.0), i=1)  # no tests: r^v = 0
    tapo([a, b])
    assert a.turns[0].adv_gen == b.turns[0].adv_gen == 0.0 and a.turns[0].adv_ver > 0 > b.turns[0].adv_ver


# --- rollouts and evaluation with a scripted policy --------------------------------------------------------------
def repairing_policy() -> ScriptedPolicy:
    """Round 1: wrong code plus a test that catches it; after feedback: right code (its tests pass)."""

    def fn(prompt, n):
        if "### Round 2" in prompt:
            return [round_text(RIGHT, ["assert f(2) == 4"])] * n
        return [round_text(WRONG, ["assert f(2) == 4", "assert f(2) == 5"])] * n

    return ScriptedPolicy(fn)


def test_a_chain_feeds_back_its_tests_and_stops_when_self_verified(executor):
    policy = repairing_policy()
    (chain,) = run_chains([double_task()], policy.sample, executor, n=1, rounds=5, validate=True)
    assert len(chain.turns) == 2 and chain.turns[1].check.verdict and chain.turns[1].check.solved
    assert chain.turns[0].check.valid == [True, False]  # f(2) == 5 is wrong: the reference fails it
    assert "Invalid test cases" in chain.context[2]["content"] and policy.calls == 2


def test_chains_make_one_sampling_call_per_round(executor):
    policy = repairing_policy()
    chains = run_chains([double_task("a"), double_task("b")], policy.sample, executor, n=3, rounds=3)
    assert (
        len(chains) == 6
        and policy.calls == 2
        and policy.history[0][1] == 3
        and len(policy.history[1][0]) == 6
    )


def test_chat_chains_send_the_transcript_as_messages(executor):
    def fn(messages, n):
        return [round_text(RIGHT if len(messages) > 1 else WRONG, ["assert f(2) == 4"])] * n

    policy = ScriptedPolicy(fn)
    (chain,) = run_chains([double_task()], policy.sample, executor, n=1, rounds=3, chat=True)
    second = policy.history[1][0][0]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[2]["content"].startswith("<tool-feedback>") and len(chain.turns) == 2


def test_reveal_own_loop_fills_the_iter_k_table(executor):
    df = evaluate_reveal(
        repairing_policy(),
        [double_task()],
        executor,
        iters=(1, 3),
        runs=2,
        progress=False,
        scaffold="reveal-own",
    )
    assert list(df["pass@1"]) == [0.0, 100.0] and list(df.columns[:3]) == ["difficulty", "k", "pass@1"]


def test_the_reveal_column_sees_the_public_tests_as_every_column_does(executor):
    from murphy_lab.scaffolds import Reflexion

    # the visible test f(1) == 2 does not catch WRONG: like every column in the Reflexion loop, the episode ends
    df = evaluate_reveal(repairing_policy(), [double_task()], executor, iters=(1, 3), runs=1, progress=False)
    assert list(df["pass@1"]) == [0.0, 0.0] and df.attrs["records"][0]["attempts"][0]["status"] == "passed"
    # a visible test that catches it: its feedback is the executor's, the text Reflexion shows, in <tool-feedback>
    task = dataclasses.replace(double_task(), visible_tests=TestSuite(cases=("assert f(5) == 10",)))
    policy = repairing_policy()
    df = evaluate_reveal(policy, [task], executor, iters=(1, 2), runs=1, progress=False)
    first = df.attrs["records"][0]["attempts"][0]
    assert (
        list(df["pass@1"]) == [0.0, 100.0]
        and first["feedback"] == executor.run(task.program(WRONG), task.visible_tests).feedback
    )
    second_prompt = policy.history[1][0][0]
    assert f"<tool-feedback>\n{first['feedback'].strip()}\n</tool-feedback>" in second_prompt
    assert "assert f(2) == 5" not in first["feedback"]  # its own tests are not run
    reflexion = Reflexion().run(
        [task], ScriptedPolicy(lambda p, n: [f"```python\n{WRONG}```"] * n), executor, 1
    )
    assert reflexion[0].attempts[0].feedback == first["feedback"]


def test_reveal_is_a_registered_scaffold_of_evaluate(executor):
    from murphy_lab.evaluate import evaluate

    for name, want in (("reveal", [0.0, 0.0]), ("reveal-own", [0.0, 100.0])):
        df = evaluate(
            repairing_policy(), [double_task()], executor, iters=(1, 2), runs=1, scaffold=name, progress=False
        )
        assert df.attrs["scaffold"] == name and list(df["pass@1"]) == want


def test_the_shared_reflexion_scaffold_reads_the_generation_answer(executor):
    df = evaluate_reveal(
        repairing_policy(),
        [double_task()],
        executor,
        iters=(1, 2),
        runs=1,
        scaffold="reflexion",
        progress=False,
    )
    assert list(df["pass@1"]) == [0.0, 0.0]  # reflexion prompts have no round 2: the script never repairs
    assert df.attrs["records"][0]["attempts"][0]["code"] == WRONG  # read from <generation-answer>


# --- training ----------------------------------------------------------------------------------------------------
def make_trainer(tmp_path, model_path, executor, **overrides):
    from murphy_lab.baselines.reveal.config import ReVealConfig
    from murphy_lab.baselines.reveal.trainer import ReVealTrainer
    from murphy_lab.config import MurphyConfig
    from murphy_lab.smoke import smoke_tasks

    cfg = MurphyConfig.for_profile("smoke", model=model_path, **{"max_steps": 1, **overrides})
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    return ReVealTrainer(
        model=model_path,
        args=args,
        murphy=cfg,
        tasks=smoke_tasks(),
        executor=executor,
        reveal=ReVealConfig(rounds=2),
    )


def test_rows_are_rounds_with_one_advantage_per_token(tmp_path, tiny_model_path, executor):
    import json

    from murphy_lab.smoke import smoke_tasks
    from murphy_lab.trainer import task_dataset

    torch.manual_seed(0)
    trainer = make_trainer(tmp_path, tiny_model_path, executor, steps_per_generation=1)
    rows = [r for r in task_dataset(smoke_tasks()[:2]) for _ in range(trainer.num_generations)]
    batch = trainer._generate_and_score_completions(rows)
    chains = [
        json.loads(x) for x in (tmp_path / "run" / "chains" / "step_000001.jsonl").read_text().splitlines()
    ]
    turns = [t for c in chains for t in c["turns"]]
    adv, mask = batch["advantages"], batch["completion_mask"]
    assert adv.shape == batch["completion_ids"].shape and len(turns) == len(adv)
    for j, t in enumerate(turns):  # untagged random text: every token is a generation token, A^gen_{i,t}
        assert torch.allclose(adv[j][mask[j].bool()], torch.tensor(t["adv_gen"], dtype=torch.float32))


@pytest.mark.slow
def test_smoke_training_changes_every_parameter(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor, max_steps=2)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) == len(before) and (tmp_path / "run" / "metrics.jsonl").exists()


def test_a_killed_run_resumed_writes_no_duplicate_metric_lines(tmp_path, tiny_model_path, executor):
    """The run lifecycle is murphy_lab.train's: a resumed run drops the lines logged past its last checkpoint."""
    import json
    import shutil

    from murphy_lab.baselines.reveal.config import ReVealConfig
    from murphy_lab.baselines.reveal.trainer import train_reveal
    from murphy_lab.config import MurphyConfig
    from murphy_lab.smoke import smoke_tasks

    cfg = MurphyConfig.for_profile(
        "smoke", model=tiny_model_path, max_steps=2, save_steps=1, per_device_train_batch_size=4
    )
    out = tmp_path / "run"
    train_reveal(cfg, out, ReVealConfig(rounds=1), executor=executor, tasks=smoke_tasks())
    shutil.rmtree(out / "checkpoint-2")  # killed after logging step 2, before its checkpoint landed
    shutil.rmtree(out / "final")
    train_reveal(cfg, out, ReVealConfig(rounds=1), resume=True, executor=executor, tasks=smoke_tasks())
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]


def test_token_index_finds_the_tokens_covering_a_text_prefix(tmp_path, tiny_model_path, executor):
    trainer = make_trainer(tmp_path, tiny_model_path, executor)
    ids = trainer.processing_class.encode("abc<verification-think>", add_special_tokens=False)
    assert trainer._token_index(ids, 3, 23) == 3 and trainer._token_index(ids, 23, 23) == len(ids)


def test_paper_profile_launches_the_reveal_recipe_like_every_other_method(tmp_path, monkeypatch):
    import subprocess

    import yaml

    import murphy_lab.config as config_mod
    from murphy_lab import experiments as X

    seen = {}
    monkeypatch.setattr(subprocess, "run", lambda cmd, check, env: seen.update(cmd=cmd, env=env))
    monkeypatch.setattr(config_mod, "_cuda_available", lambda: True)  # the recipe asks for bf16 and vLLM
    base, out = tmp_path / "base", tmp_path / "ckpt"
    base.mkdir()
    out.mkdir()
    exp = X.Experiment("paper", "Qwen3-1.7B", "reveal", seed=2, overrides=(("rounds", 2), ("max_steps", 5)))
    assert X.default_train(exp, str(base), out) == out / "final"
    assert Path(seen["cmd"][1]).name in ("train_8xh100.sh", "colocate_1gpu.sh")
    assert seen["env"]["ENTRY"] == "murphy_lab.baselines.reveal"
    recipe = yaml.safe_load(Path(seen["cmd"][2]).read_text())
    assert (recipe["seed"], recipe["model"], recipe["max_steps"], recipe["reveal"]["rounds"]) == (
        2,
        str(base),
        5,
        2,
    )
    # the recipe of the other methods, not MurphyConfig's dataclass defaults
    assert (
        recipe["use_vllm"],
        recipe["vllm_mode"],
        recipe["per_device_train_batch_size"],
        recipe["gradient_accumulation_steps"],
        recipe["num_train_epochs"],
        recipe["gradient_checkpointing"],
    ) == (True, "server", 2, 16, 2, True)
    # ReVealConfig fields go into its `reveal:` mapping, as load_recipe reads them
    assert "rounds" not in recipe


def test_reveal_program_reads_the_generation_answer_else_falls_back():
    from murphy_lab.baselines.reveal.method import reveal_program

    extract = reveal_program(lambda c: "fallback")
    assert extract("<generation-answer>\n```python\nx = 1\n```\n</generation-answer>").strip() == "x = 1"
    assert extract("def f(): pass") == "fallback"
