"""µCode's data collection: multi-turn chains from the current generator, labeled by the hidden tests (the oracle).

Each task gets `rollouts` independent chains (µCode: 15) of up to `turns` attempts (µCode: 3) at temperature 0.7.
An attempt is run on the task's *visible* tests (µCode's public tests); their feedback builds the next attempt's
prompt q = [task, previous code, feedback] (`prompts.refine_prompt`, the same prompt MURPHY trains on), and a chain
stops at the first visible pass. Chains are rollout trees grown with G2 = 1 (`rollout.task_trees(g1=rollouts, g2=1)`,
one `sample` call and one execution batch per turn), so they serialize, plot and load like every other tree.

Afterwards every attempt is run once more on the *hidden* tests (µCode's private tests): `node.meta["oracle"]` is
the hidden pass fraction and `node.meta["correct"]` whether all pass — the labels the verifier learns from.
The executor runs `task.program(code)` everywhere (a benchmark's import header, text answers as strings).

The candidates are the SAMPLED attempts only: the task's reference solution is never one of them (an expert that
may pick the gold program trains on supervision no RL method gets; docs/mucode.md, "Candidates of the expert").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from murphy_lab import prompts as P
from murphy_lab.rollout import task_trees
from murphy_lab.tree import RolloutTree


def collect_rollouts(
    tasks: Sequence[Any],
    policy: Any,
    executor: Any,
    *,
    rollouts: int = 15,  # chains per task (mucode.sh NUM_ROLLOUTS)
    turns: int = 3,  # attempts per chain (mucode.sh MAX_STEPS)
    seed: int | None = 0,
    progress: bool = True,
    **sample_kw: Any,
) -> list[RolloutTree]:
    """One tree of `rollouts` chains per task, every attempt labeled by the hidden tests (see the module docstring).

    `sample_kw` (temperature, top_p, max_new_tokens) go to every `policy.sample` call.
    """
    tasks = list(tasks)
    if not tasks:
        raise ValueError("tasks is empty")
    for i, t in enumerate(tasks):
        if not len(t.visible_tests) or not len(t.hidden_tests):
            raise ValueError(
                f"tasks[{i}] ({t.task_id!r}) needs visible tests (feedback) and hidden tests (labels)"
            )
    calls = [0]

    def sample(prompts: list, n: int) -> list[list[str]]:
        calls[0] += 1
        call_seed = None if seed is None else seed * 1000 + calls[0]  # a fresh, reproducible seed per turn
        return policy.sample(prompts, n, seed=call_seed, **sample_kw)

    bar = tqdm(total=turns, desc="µCode rollouts (turns)", disable=not progress, leave=False)
    trees = task_trees(
        tasks,
        sample,
        executor,
        g1=rollouts,
        g2=1,
        turns=turns,
        reward_tests="visible",
        extract=P.answer_extractor(tasks),
        # quoted code/feedback fit the context
        budget=P.policy_budget(policy, sample_kw.get("max_new_tokens")),
        on_turn=lambda turn, nodes: bar.update(1),
    )
    bar.close()
    label_with_oracle(trees, tasks, executor)
    return trees


def label_with_oracle(trees: Sequence[RolloutTree], tasks: Sequence[Any], executor: Any) -> None:
    """Run every sampled attempt on its task's hidden tests in ONE batch; write the labels in meta."""
    by_id = {t.task_id: t for t in tasks}
    jobs, targets = [], []
    for tree in trees:
        task = by_id[tree.task_id]
        for node in tree.nodes():
            jobs.append(task.job(node.code, "hidden"))
            targets.append(node.meta)
    run_many = executor.run_many if hasattr(executor, "run_many") else (lambda js: [executor(*j) for j in js])
    results = run_many(jobs)
    if len(results) != len(jobs):
        raise ValueError(f"executor returned {len(results)} results for {len(jobs)} jobs")
    for meta, res in zip(targets, results):
        meta["oracle"] = float(res.reward)  # hidden pass fraction
        meta["correct"] = bool(float(res.reward) >= 1.0 and getattr(res, "total", 1) > 0)


def rollout_stats(trees: Sequence[RolloutTree]) -> dict:
    """Counts for the metrics log: attempts, correct attempts, tasks with a correct attempt, pass rate by turn."""
    nodes = [n for t in trees for n in t.nodes()]
    by_turn: dict[int, list[bool]] = {}
    for n in nodes:
        by_turn.setdefault(int(n.turn), []).append(bool(n.meta.get("correct")))
    return {
        "tasks": len(trees),
        "attempts": len(nodes),
        "correct_attempts": sum(bool(n.meta.get("correct")) for n in nodes),
        "tasks_with_correct_attempt": sum(any(n.meta.get("correct") for n in t.nodes()) for t in trees),
        "hidden_pass_by_turn": {str(k): sum(v) / len(v) for k, v in sorted(by_turn.items())},
    }
