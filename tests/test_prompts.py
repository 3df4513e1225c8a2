"""Prompts and code extraction: fixed plain-text formats, messy real-looking model outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from murphy_lab import prompts as P

SOLUTION = "def add(a, b):\n    return a + b\n"


def test_first_prompt_format_is_fixed():
    assert P.first_prompt("Add two numbers.\n") == "Add two numbers.\n### Code:\n"


def test_refine_prompt_quotes_task_code_and_feedback():
    q = P.refine_prompt("Add.", "def add(a, b): pass\n", "assert add(1, 2) == 3 # output: None\n")
    assert q == (
        "Add.\n### Previous attempt:\ndef add(a, b): pass\n### Feedback:\nassert add(1, 2) == 3 # output: None\n"
        "### Fixed code:\n"
    )


@pytest.mark.parametrize("extract", [P.extract_code, P.extract_program])
def test_unfenced_code_is_kept_whole(extract):
    assert extract(SOLUTION) == SOLUTION


@pytest.mark.parametrize("extract", [P.extract_code, P.extract_program])
def test_solution_block_wins_over_usage_example(extract):
    out = f"Here you go:\n```python\n{SOLUTION}```\nUsage:\n```python\nprint(add(1, 2))\n```\n"
    assert extract(out) == SOLUTION


@pytest.mark.parametrize("extract", [P.extract_code, P.extract_program])
def test_qwen3_think_block_is_removed(extract):
    out = f"<think>\nMaybe ```python\ndef add(a, b):\n    return a - b  # wrong idea, a long long draft\n```\n</think>\n\n```python\n{SOLUTION}```"
    assert extract(out) == SOLUTION


@pytest.mark.parametrize("extract", [P.extract_code, P.extract_program])
def test_truncated_thinking_gives_no_program(extract):
    assert extract("<think>\nLet me consider the cases one by one") == ""


def test_orphan_closing_think_drops_the_reasoning_before_it():
    out = f"The user wants addition, so I will write it.\n</think>\n\n```python\n{SOLUTION}```"
    assert P.extract_program(out) == SOLUTION


def test_prose_around_unfenced_code_is_dropped():
    out = f"Sure! Here is the function:\n\n{SOLUTION}\nIt returns the sum of a and b."
    assert P.extract_program(out) == SOLUTION


def test_imports_start_the_program_span():
    out = "Solution below.\nimport math\n\ndef area(r):\n    return math.pi * r * r\n\nHope this helps!"
    assert P.extract_program(out) == "import math\n\ndef area(r):\n    return math.pi * r * r\n"


def test_shell_block_before_python_block_is_ignored():
    out = f"Install nothing:\n```bash\npip list\n```\nThen:\n```python\n{SOLUTION}```\n"
    assert P.extract_program(out) == SOLUTION


def test_unclosed_fence_of_a_truncated_generation_is_read_to_the_end():
    assert P.extract_program(f"```python\n{SOLUTION}") == SOLUTION


def test_tilde_fences_are_read():
    assert P.extract_program(f"~~~python\n{SOLUTION}~~~\n") == SOLUTION


def test_block_that_parses_wins_over_a_longer_broken_draft():
    broken = "def add(a, b):\n    return a +\n    # a long broken draft that does not parse at all\n"
    assert P.extract_program(f"```python\n{broken}```\nFixed:\n```python\n{SOLUTION}```") == SOLUTION


def test_unparseable_text_is_returned_unchanged():
    assert P.extract_program("this is not code (") == "this is not code (\n"


@pytest.mark.parametrize("extract", [P.extract_code, P.extract_program])
def test_empty_output_gives_empty_program(extract):
    assert extract("  \n") == ""


def test_chat_messages_carry_the_plain_prompt_as_user_message():
    msgs = P.refine_messages("Add.", "x = 1", "failed")
    assert msgs[0]["role"] == "system" and msgs[-1] == {
        "role": "user",
        "content": P.refine_prompt("Add.", "x = 1", "failed"),
    }


def test_first_messages_without_system():
    assert P.first_messages("Add.", system=None) == [{"role": "user", "content": P.first_prompt("Add.")}]


def test_guided_refine_prompt_without_notes_is_the_refine_prompt():
    assert P.guided_refine_prompt("Add.", "x = 1", "failed", []) == P.refine_prompt("Add.", "x = 1", "failed")


def test_guided_refine_prompt_lists_notes():
    assert "### Notes:\n- use +\n- mind negatives\n" in P.guided_refine_prompt(
        "Add.", "x", "f", ["use +", "mind negatives"]
    )


@pytest.mark.parametrize(
    "text,score", [("8", 0.8), ("Score: 10/10", 1.0), ("I'd say 15", 1.0), ("no idea", None)]
)
def test_parse_score(text, score):
    assert P.parse_score(text) == score


# --------------------------------------------------------------------------- one reading in training and evaluation
CHAT_ANSWER = "Sure! Here is the function:\ndef add(a, b):\n    return a + b\nIt adds the two numbers."


def test_every_training_and_evaluation_path_reads_an_answer_the_same_way():
    import inspect

    from murphy_lab.baselines.mucode.inference import VerifierBestOfN
    from murphy_lab.prompts import answer_extractor, extract_code, extract_program
    from murphy_lab.rollout import build_task_trees
    from murphy_lab.scaffolds import LATS, DoT, Reflexion
    from murphy_lab.tasks import Task

    code_task = Task("t", "Write add(a, b).", visible_tests=["assert add(1, 2) == 3"])
    readers = {
        "rollout": inspect.signature(build_task_trees).parameters["extract"].default,
        # MurphyTrainer._grow, mucode.collect_rollouts
        "trainer, mucode rollouts": answer_extractor([code_task]),
        "reflexion": Reflexion().extract,
        "lats": LATS().extract,
        "dot": DoT().extract,
        "mucode best-of-n": VerifierBestOfN(None, n=1, selection="random").extract,
    }
    read = {name: fn(CHAT_ANSWER) for name, fn in readers.items()}
    assert set(read.values()) == {extract_program(CHAT_ANSWER)} == {"def add(a, b):\n    return a + b\n"}
    # the reading training used before: prose and all
    assert extract_code(CHAT_ANSWER) != read["trainer, mucode rollouts"]


def test_experiments_evaluation_adds_no_extraction_of_its_own(monkeypatch):
    import murphy_lab.experiments as X
    from murphy_lab.experiments import dispatch
    from murphy_lab.prompts import extract_program

    seen = {}
    monkeypatch.setattr(dispatch, "evaluate", lambda *a, **kw: seen.update(kw))
    monkeypatch.setattr(dispatch, "make_policy", lambda model_dir, exp: None)
    monkeypatch.setattr(dispatch, "benchmark_tasks", lambda profile, benchmark, n: [])
    exp = X.plan("toy", methods=("murphy",), seeds=(0,))[0]
    X.default_evaluate(exp, "model", "HumanEval")
    assert seen["scaffold"].extract is extract_program  # the scaffold's default reading, as in training


def test_text_answers_are_read_stripped_and_run_as_a_string():
    from murphy_lab.prompts import answer_extractor, read_answer
    from murphy_lab.smoke import smoke_tasks

    tasks = smoke_tasks()
    assert answer_extractor(tasks)("  a 1.\n") == read_answer("  a 1.\n", "text") == "a 1."
    assert tasks[0].program("a 1.") == "ANSWER = 'a 1.'\n"


def test_a_batch_mixing_text_and_code_tasks_is_refused():
    from murphy_lab.prompts import answer_extractor
    from murphy_lab.smoke import smoke_tasks
    from murphy_lab.tasks import Task

    with pytest.raises(ValueError, match=r"tasks mix answer kinds \['code', 'text'\]"):
        answer_extractor(smoke_tasks()[:1] + [Task("c", "p")])


# ------------------------------------------------------------------- the prompt budget (context - completion length)
# OLMo-2-7B's max_position_embeddings; the paper profile's turn length
OLMO2_POSITIONS, COMPLETION = 4096, 1024
# ~1.4k characters, an LCB-sized statement
LONG_TASK = "Given a grid of n x m cells, count the paths... " * 30
LONG_CODE = "def solve(grid):\n" + "".join(f"    row_{i} = sum(grid[{i}])  # accumulate\n" for i in range(30))
LONG_FEEDBACK = "Tests failed:\n" + "assert solve([[1] * 50] * 50) == 2500  # output: 0\n" * 60


def test_a_turn_2_prompt_is_cut_to_the_context_minus_the_completion_with_visible_markers():
    from murphy_lab.policy.tiny import char_tokenizer

    tok = char_tokenizer()
    fit = P.token_budget(tok, OLMO2_POSITIONS, COMPLETION)
    prompt = P.refine_prompt(LONG_TASK, LONG_CODE, LONG_FEEDBACK, **fit)
    # needs cutting
    assert fit["count"](P.refine_prompt(LONG_TASK, LONG_CODE, LONG_FEEDBACK)) > fit["max_tokens"]
    assert len(tok(prompt)["input_ids"]) + COMPLETION <= OLMO2_POSITIONS  # special tokens included
    assert LONG_TASK.rstrip() in prompt and prompt.count("... [truncated ") >= 1
    cut = int(prompt.split("... [truncated ")[-1].split(" chars]")[0])
    assert cut > 0 and "def solve(grid):" in prompt  # each part keeps its head


def test_a_prompt_within_the_budget_is_unchanged():
    assert P.refine_prompt("t", "x = 1", "fb", max_tokens=1000) == P.refine_prompt("t", "x = 1", "fb")


def test_the_budget_is_shared_so_a_short_feedback_stays_whole():
    prompt = P.refine_prompt("task", "x = 1\n" * 200, "assert f() == 2  # output: 1", max_tokens=300)
    assert len(prompt) <= 300 and "assert f() == 2  # output: 1\n### Fixed code:" in prompt
    assert "... [truncated " in prompt.split("### Feedback:")[0]


def test_a_completion_longer_than_the_context_is_refused():
    with pytest.raises(
        ValueError, match="max_new_tokens=4096 .* leaves no room for a prompt in 4096 positions"
    ):
        P.prompt_budget(4096, 4096)


class LongFeedback:
    """Every candidate fails with 3,000 characters of feedback."""

    def run_many(self, jobs):
        from murphy_lab.executor.types import ExecutionResult

        return [ExecutionResult(0.0, 0, 1, "failed", "assert f() == 1  # output: 0\n" * 100) for _ in jobs]


def test_trainer_refinement_prompts_fit_the_models_context(tmp_path, tiny_model_path):
    from murphy_lab.config import MurphyConfig
    from murphy_lab.smoke import smoke_tasks
    from murphy_lab.trainer import MurphyTrainer

    cfg = MurphyConfig.for_profile("smoke", model=tiny_model_path, max_completion_length=8)
    args = cfg.to_grpo_config(tmp_path / "run", save_strategy="no", disable_tqdm=True)
    trainer = MurphyTrainer(
        model=tiny_model_path, args=args, murphy=cfg, tasks=smoke_tasks(), executor=LongFeedback()
    )
    trainer.model.config.max_position_embeddings = 400  # a small context, as OLMo-2's 4,096 for a real turn 2
    trees, _, _ = trainer._grow(smoke_tasks()[:1])
    turn2 = [n for t in trees for n in t.nodes() if n.turn == 2]
    assert turn2 and all(len(n.meta["prompt_ids"]) + 8 <= 400 for n in turn2)
    assert all("... [truncated " in n.prompt for n in turn2)


@pytest.mark.parametrize("scaffold", ["reflexion", "lats", "dot"])
def test_evaluation_refinement_prompts_fit_the_models_context(scaffold, tiny_model_path):
    from murphy_lab.policy import TransformersPolicy
    from murphy_lab.scaffolds import get_scaffold
    from murphy_lab.smoke import smoke_tasks

    policy = TransformersPolicy(tiny_model_path, max_new_tokens=8)
    policy.model.config.max_position_embeddings = 400
    (ep,) = get_scaffold(scaffold).run(smoke_tasks()[:1], policy, LongFeedback(), budget=6)
    repair = next(a.prompt for a in ep.attempts if a.parent is not None)  # a refinement of a failed attempt
    assert policy.num_tokens(policy.render(repair)) + 8 <= 400 and "... [truncated " in repair


def test_a_refinement_prompt_within_budget_in_bytes_is_not_tokenized():
    # every token covers at least one UTF-8 byte, so a short prompt needs no tokenizer call (hot path: one per
    # refinement); a long one is still measured with `count`
    def count(text):
        raise AssertionError("tokenized a prompt that fits by its byte length")

    short = P.refine_prompt("add", "def f(): pass", "failed", max_tokens=10_000, count=count)
    assert "[truncated" not in short
    calls = []
    long = P.refine_prompt(
        "add", "x" * 5000, "y" * 5000, max_tokens=2000, count=lambda t: calls.append(t) or len(t)
    )
    assert calls and "[truncated" in long and len(long) <= 2000


# --- what SmolLM2-135M-Instruct really wrote (tests/fixtures/smollm2_completions.json; docs/real_model.md) -----
REAL = {
    c["name"]: c
    for c in json.loads((Path(__file__).parent / "fixtures" / "smollm2_completions.json").read_text())[
        "completions"
    ]
}


@pytest.mark.parametrize(
    "name",
    [
        "code_then_closing_fence_then_prose",
        "code_then_closing_fence_then_output_block",
        "mbpp_code_then_closing_fence_then_prose",
    ],
)
def test_code_closed_by_a_fence_it_never_opened_is_the_program(name):
    completion = REAL[name]["completion"]
    code = completion[: completion.index("\n```")]  # everything before the model's first (closing) fence
    assert P.extract_program(completion) == code.strip("\n") + "\n"  # before: the prose after the fence
    assert P.parses(P.extract_program(completion))


def test_a_bare_fence_after_prose_still_opens_a_block():
    out = "The answer:\n```\ndef add(a, b):\n    return a + b\n```\nDone."
    assert P.extract_program(out) == SOLUTION


@pytest.mark.parametrize(
    "name, kept",
    [
        ("truncated_in_the_usage_example", "def has_close_elements"),
        ("truncated_in_a_second_function", "from typing import List"),
    ],
)
def test_a_block_cut_by_the_length_limit_loses_only_its_unfinished_last_statement(name, kept):
    completion = REAL[name]["completion"]
    program = P.extract_program(completion)
    last = completion.rstrip("\n").split("\n")[-1]  # the line the limit cut
    assert P.parses(program) and kept in program
    # a head of the block, nothing rewritten
    assert last not in program and program.rstrip("\n") in completion


def test_a_function_cut_in_its_body_is_not_patched_up():
    out = "```python\ndef f(x):\n    if x:\n        return [x,"
    # the syntax error is the feedback
    assert P.extract_program(out) == "def f(x):\n    if x:\n        return [x,\n"


# --- Qwen2.5-Coder-0.5B-Instruct's real answers (tests/fixtures/qwen_coder/completions.json) ----------------------
QWEN = json.loads((Path(__file__).parent / "fixtures" / "qwen_coder" / "completions.json").read_text())[
    "completions"
]


@pytest.mark.parametrize("row", QWEN, ids=[r["task_id"] for r in QWEN])
def test_stopping_at_the_closed_code_block_loses_nothing_the_reader_keeps(row):
    """The code model answers prose, one ```python block, then an explanation (which ran HumanEval/0 to the 384-token
    limit). Ending the answer at its closed block (TransformersPolicy(stop_after_code=True)) changes no program."""
    from murphy_lab.policy.hf import CLOSED_BLOCK

    text = row["completion"]
    end = CLOSED_BLOCK.search(text)
    if end is None:  # HumanEval/1: a step-by-step plan in prose, then the block, cut inside it at 384 tokens
        assert row["tokens"] == row["max_new_tokens"] and not P.parses(P.extract_program(text))
        return
    assert P.extract_program(text[: end.end()]) == P.extract_program(text) and P.parses(
        P.extract_program(text)
    )
    assert P.extract_program(text).startswith(("from typing import", "def "))


def test_most_of_a_long_real_answer_is_the_explanation_after_the_block():
    from murphy_lab.policy.hf import CLOSED_BLOCK

    cut = {r["task_id"]: r for r in QWEN}["HumanEval/0"]
    after = cut["completion"][CLOSED_BLOCK.search(cut["completion"]).end() :]
    assert cut["tokens"] == cut["max_new_tokens"] and after.lstrip().startswith("### Explanation")
    assert len(after) > 0.2 * len(cut["completion"])  # what stop_after_code no longer generates
