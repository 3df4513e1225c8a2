"""evaluate: Iter-k pass@1 with visible-test feedback and hidden-test verdicts, batched rounds, transcripts."""

from __future__ import annotations

import pytest

from murphy_lab.evaluate import COLUMNS, evaluate, table_from_transcripts
from murphy_lab.policy import ScriptedPolicy, TransformersPolicy
from murphy_lab.tasks import Task

WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
OVERFIT = "def add(a, b):\n    return 3\n"  # passes the visible test add(1, 2) == 3, fails the hidden ones


def add_task(i: int = 0, difficulty: str = "all") -> Task:
    return Task(
        task_id=f"add{i}",
        prompt=f"Write add(a, b) that returns a + b. ({i})",
        visible_tests=["assert add(1, 2) == 3"],
        hidden_tests=["assert add(2, 2) == 4", "assert add(0, 0) == 0"],
        difficulty=difficulty,
    )


def feedback_fixes(prompt, n):
    """Wrong at turn 1, right whenever the prompt carries executor feedback."""
    return [RIGHT if "### Feedback:" in prompt else WRONG] * n


class Counting:
    def __init__(self, executor):
        self.executor, self.batches = executor, 0

    def run_many(self, jobs):
        self.batches += 1
        return self.executor.run_many(jobs)


def row(df, k, difficulty="all"):
    return df[(df.difficulty == difficulty) & (df.k == k)].iloc[0]


def test_feedback_policy_scores_iter1_zero_and_iter3_hundred(executor):
    df = evaluate(
        ScriptedPolicy(feedback_fixes),
        [add_task(0), add_task(1)],
        executor,
        iters=(1, 3),
        runs=2,
        progress=False,
    )
    assert row(df, 1)["pass@1"] == 0.0 and row(df, 3)["pass@1"] == 100.0


def test_table_has_one_row_per_difficulty_and_k(executor):
    tasks = [add_task(0, "easy"), add_task(1, "hard"), add_task(2, "hard")]
    df = evaluate(ScriptedPolicy(feedback_fixes), tasks, executor, iters=(1, 3, 5), runs=1, progress=False)
    assert list(df.columns) == COLUMNS
    assert list(zip(df.difficulty, df.k)) == [(d, k) for d in ("all", "easy", "hard") for k in (1, 3, 5)]
    assert list(df.n_tasks) == [3] * 3 + [1] * 3 + [2] * 3


def test_one_sample_call_and_one_batch_per_attempt_round(executor):
    policy, counting = ScriptedPolicy(lambda p, n: [WRONG] * n), Counting(executor)
    evaluate(policy, [add_task(0), add_task(1)], counting, iters=(1, 3), runs=2, progress=False)
    assert policy.calls == 3 and counting.batches == 3 + 1  # 3 rounds + one hidden-test batch


def test_runs_share_the_first_prompt_as_n(executor):
    policy = ScriptedPolicy(lambda p, n: [WRONG] * n)
    evaluate(policy, [add_task(0), add_task(1)], executor, iters=(1,), runs=3, progress=False)
    prompts, n = policy.history[0]
    assert len(prompts) == 2 and n == 3


def test_std_is_taken_over_runs(executor):
    # run 0 (first sample) is right, run 1 is wrong, and the feedback does not help: per-run pass@1 = 100, 0
    policy = ScriptedPolicy(lambda p, n: [WRONG if "### Feedback:" in p else RIGHT] + [WRONG] * (n - 1))
    df = evaluate(policy, [add_task(0)], executor, iters=(1,), runs=2, progress=False)
    assert row(df, 1)["pass@1"] == 50.0 and row(df, 1)["std"] == 50.0


def test_a_visible_pass_stops_the_loop(executor):
    policy = ScriptedPolicy(lambda p, n: [OVERFIT] * n)
    df = evaluate(policy, [add_task()], executor, iters=(1, 5), runs=1, progress=False)
    assert policy.calls == 1 and row(df, 5)["calls"] == 1.0


def test_hidden_tests_decide_success(executor):
    df = evaluate(
        ScriptedPolicy(lambda p, n: [OVERFIT] * n), [add_task()], executor, iters=(1,), runs=1, progress=False
    )
    assert row(df, 1)["pass@1"] == 0.0


def test_cost_columns_count_calls_up_to_k(executor):
    df = evaluate(
        ScriptedPolicy(lambda p, n: [WRONG] * n), [add_task()], executor, iters=(1, 3), runs=1, progress=False
    )
    assert list(df.calls) == [1.0, 3.0] and row(df, 3)["tokens"] > row(df, 1)["tokens"]


def test_transcripts_rederive_the_table(executor, tmp_path):
    path = str(tmp_path / "eval.jsonl")
    tasks = [add_task(0, "easy"), add_task(1, "hard")]
    df = evaluate(
        ScriptedPolicy(feedback_fixes),
        tasks,
        executor,
        iters=(1, 2),
        runs=2,
        transcripts_path=path,
        progress=False,
    )
    assert table_from_transcripts(path).equals(df)


def test_transcripts_cannot_invent_unscored_iters(executor, tmp_path):
    path = str(tmp_path / "eval.jsonl")
    evaluate(
        ScriptedPolicy(feedback_fixes),
        [add_task()],
        executor,
        iters=(1,),
        runs=1,
        transcripts_path=path,
        progress=False,
    )
    with pytest.raises(ValueError, match="not scored"):
        table_from_transcripts(path, iters=(3,))


@pytest.mark.parametrize("iters", [(), (0, 1), [1.5]])
def test_bad_iters_are_rejected(executor, iters):
    with pytest.raises(ValueError, match="iters"):
        evaluate(ScriptedPolicy(feedback_fixes), [add_task()], executor, iters=iters, progress=False)


def test_task_without_hidden_tests_is_rejected(executor):
    task = Task(task_id="t", prompt="p", visible_tests=["assert True"])
    with pytest.raises(ValueError, match="no hidden tests"):
        evaluate(ScriptedPolicy(feedback_fixes), [task], executor, progress=False)


def test_task_without_visible_tests_is_rejected(executor):
    task = Task(task_id="t", prompt="p", hidden_tests=["assert True"])
    with pytest.raises(ValueError, match="no visible tests"):
        evaluate(ScriptedPolicy(feedback_fixes), [task], executor, progress=False)


def test_tiny_model_end_to_end(tiny_model_path, executor):
    policy = TransformersPolicy(tiny_model_path, max_new_tokens=8)
    df = evaluate(policy, [add_task(0), add_task(1)], executor, iters=(1, 2), runs=2, progress=False)
    # a random-init model solves nothing; two attempt rounds = two generate calls
    assert list(df["pass@1"]) == [0.0, 0.0] and policy.calls == 2 and list(df.n_tasks) == [2, 2]


def test_the_report_counts_extractable_truncated_and_each_status(executor):
    # prose, a wrong program, the fix
    outputs = iter(["Sorry, I cannot help you with that today.", WRONG, RIGHT])

    def policy_fn(prompt, n):
        return [next(outputs) for _ in range(n)]

    # counts words as tokens: 8 in the prose (cut at the limit), 7 in each program
    policy = ScriptedPolicy(policy_fn)
    df = evaluate(policy, [add_task()], executor, iters=(1, 3), runs=1, progress=False, max_new_tokens=8)
    assert df.attrs["completions"] == {
        "completions": 3,
        "extractable": 2,
        "truncated": 1,
        "visible_status": {"syntax": 1, "failed": 1, "passed": 1},
        "hidden_status": {"syntax": 1, "passed": 1},
    }


# --- progress counts tasks ---------------------------------------------------------------------------------------
class Bar:
    """Records what evaluate's progress bar is told."""

    made: list = []

    def __init__(self, total=None, unit="it", **kw):
        self.total, self.unit, self.updates = total, unit, []
        Bar.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.updates.append(n)


def test_the_progress_bar_counts_tasks_a_batch_at_a_time(executor, monkeypatch):
    import murphy_lab.evaluate as evaluate_mod

    Bar.made = []
    monkeypatch.setattr(evaluate_mod, "tqdm", Bar)
    evaluate(
        ScriptedPolicy(feedback_fixes),
        [add_task(i) for i in range(5)],
        executor,
        iters=(1, 3),
        runs=2,
        task_batch=2,
        progress=False,
    )
    (bar,) = Bar.made
    assert (bar.total, bar.unit, bar.updates) == (5, "task", [2, 2, 1])


def test_a_task_batch_holding_every_task_gives_the_unbatched_table(tiny_model_path, executor):
    """Batch 0 samples with the seed itself: batching changes nothing until there is a second batch."""
    tasks = [add_task(0), add_task(1)]
    kw = dict(iters=(1, 2), runs=2, progress=False, seed=3)
    whole = evaluate(TransformersPolicy(tiny_model_path, max_new_tokens=8), tasks, executor, **kw)
    batched = evaluate(
        TransformersPolicy(tiny_model_path, max_new_tokens=8), tasks, executor, task_batch=2, **kw
    )
    texts = [[a["completion"] for a in r["attempts"]] for r in whole.attrs["records"]]
    assert texts == [[a["completion"] for a in r["attempts"]] for r in batched.attrs["records"]]


def test_batches_keep_the_episodes_task_major_and_score_the_same_for_a_deterministic_policy(executor):
    tasks = [add_task(i, difficulty="easy" if i % 2 else "hard") for i in range(5)]
    whole = evaluate(ScriptedPolicy(feedback_fixes), tasks, executor, iters=(1, 2), runs=2, progress=False)
    batched = evaluate(
        ScriptedPolicy(feedback_fixes), tasks, executor, iters=(1, 2), runs=2, progress=False, task_batch=2
    )
    assert batched.equals(whole)
    assert [(r["task_id"], r["run"]) for r in batched.attrs["records"]] == [
        (f"add{i}", r) for i in range(5) for r in range(2)
    ]


@pytest.mark.parametrize("task_batch", [0, -1, 1.5, True])
def test_a_bad_task_batch_is_rejected(executor, task_batch):
    with pytest.raises(ValueError, match="task_batch"):
        evaluate(
            ScriptedPolicy(feedback_fixes), [add_task()], executor, task_batch=task_batch, progress=False
        )


def test_a_long_evaluation_shows_its_progress_and_a_short_one_none(executor, monkeypatch, capsys):
    import time

    import murphy_lab.evaluate as evaluate_mod

    monkeypatch.setattr(evaluate_mod, "PROGRESS_DELAY_S", 2.0)

    def slow(prompt, n):
        time.sleep(0.8)
        return feedback_fixes(prompt, n)

    kw = dict(iters=(1,), runs=1, task_batch=1)
    evaluate(ScriptedPolicy(feedback_fixes), [add_task(0), add_task(1)], executor, **kw)
    assert "task" not in capsys.readouterr().err  # over before the delay: no bar
    evaluate(ScriptedPolicy(slow), [add_task(i) for i in range(3)], executor, **kw)
    assert "3/3" in capsys.readouterr().err  # the bar, once the evaluation lasted
