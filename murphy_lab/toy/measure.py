"""Measuring the toy world: informative vs uninformative failures, and a small multi-turn Iter-k loop.

A failure (an attempt that does not solve its task) is *informative* when its feedback states the value of at
least one constant, i.e. quotes a failing lock test (`assert f(0) == 12`, or `... f(1) - f(0) == 6`); it is
*uninformative* otherwise: a syntax error, a crash before the tests, or visible tests that all pass while the
hidden test fails. This is the property MURPHY's retrospective credit can see and single-turn GRPO cannot.

`measure_policy` runs the project's evaluation (`murphy_lab.evaluate.evaluate`) on the test split and sorts the
failed attempts by kind; `failure_values` grows real two-turn trees and reports what each kind of failed first
attempt is worth to its refinements — the property this world is built to have (docs/toy_world.md).

    python -m murphy_lab.toy.measure murphy_lab/toy/policy --failure-values
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Sequence

from murphy_lab.executor import Executor
from murphy_lab.policy import TransformersPolicy
from murphy_lab.prompts import extract_program, refine_prompt
from murphy_lab.rollout import task_trees
from murphy_lab.toy.world import (
    A_VALUES,
    B_VALUES,
    make_tasks,
    program,
    revealed,
    revealed_in,
    revealing,
    spec_of,
)


def informative(feedback: str) -> bool:
    """True when a failure's feedback states a constant's value (see the module docstring)."""
    return bool(revealed_in(feedback))


def informative_share(items: Iterable) -> float:
    """The fraction of failures whose feedback is informative; NaN when there are no failures.

    `items` may hold RolloutTrees (every non-root node with reward < 1 is a failure), ExecutionResults or nodes
    (`.reward`/`.feedback`; reward < 1 is a failure), evaluation records (dicts with "attempts", as in
    `murphy_lab.evaluate`'s `df.attrs["records"]`) or attempt dicts ("reward", "feedback"), or plain feedback
    strings (each one a failure).
    """
    fbs = list(_failure_feedbacks(items))
    return sum(map(informative, fbs)) / len(fbs) if fbs else float("nan")


def _failure_feedbacks(items: Iterable):
    for it in items:
        if isinstance(it, str):
            yield it
        elif hasattr(it, "nodes") and hasattr(it, "root"):  # a RolloutTree
            yield from (n.feedback for n in it.nodes() if n.reward < 1.0)
        elif isinstance(it, dict) and "attempts" in it:  # an evaluation record: its visible-test attempts
            yield from _failure_feedbacks(it["attempts"])
        elif isinstance(it, dict) and "feedback" in it:
            if it.get("reward", 0.0) < 1.0:
                yield it["feedback"]
        elif hasattr(it, "feedback") and hasattr(it, "reward"):
            if it.reward < 1.0:
                yield it.feedback
        else:
            raise TypeError(
                f"informative_share expects trees, results/nodes or strings, got {type(it).__name__}"
            )


def measure_policy(
    model_dir: str,
    n_tasks: int = 200,
    runs: int = 2,
    iters: Sequence[int] = (1, 2, 3),
    seed: int = 1234,
    progress: bool = False,
) -> dict:
    """Iter-k pass@1 (%) on the toy test split, by difficulty, and the informative share of failed attempts.

    Uses `murphy_lab.evaluate.evaluate` (the project's Reflexion-style scaffold) with `TransformersPolicy`.
    Returns {"table": DataFrame, "pass@1": {k: %}, "informative_share": s (all failed attempts),
    "informative_share_turn1": s1 (failed first attempts), "failures": n, "failure_kinds": {kind: count}}
    where a failure's kind is "informative" or, for an uninformative one, its executor status (syntax, ...).
    """
    from murphy_lab.evaluate import evaluate  # imports pandas; kept out of `import murphy_lab.toy`

    tasks = make_tasks("test", n_tasks, seed=seed)
    policy = TransformersPolicy(model_dir, max_new_tokens=48)
    with Executor(timeout=2.0, workers=2) as ex:
        df = evaluate(policy, tasks, ex, iters=tuple(iters), runs=runs, seed=seed, progress=progress)
    records = df.attrs["records"]
    fails = list(_failure_feedbacks(records))
    first = [r["attempts"][0] for r in records if r["attempts"] and r["attempts"][0]["reward"] < 1.0]
    kinds: dict = {}
    for a in (a for r in records for a in r["attempts"] if a["reward"] < 1.0):
        kind = "informative" if informative(a["feedback"]) else a.get("status") or "?"
        kinds[kind] = kinds.get(kind, 0) + 1
    overall = df[df.difficulty == "all"]
    return {
        "table": df,
        "pass@1": dict(zip(overall.k, overall["pass@1"])),
        "informative_share": informative_share(fails),
        "failures": len(fails),
        "informative_share_turn1": informative_share(first),
        "failure_kinds": kinds,
    }


def failure_values(policy, n_tasks: int = 100, g1: int = 4, g2: int = 4, seed: int = 99) -> dict:
    """What a failed first attempt is worth to the next turn, by what its feedback revealed.

    Grows real two-turn trees (G1 first attempts, G2 refinements per failure, feedback and reward from the
    visible lock) on test-split tasks and groups the failed first attempts by kind: "reveals a", "reveals b",
    "uninformative", and "informative" (both reveal kinds together). For each kind: how many, the mean refinement
    success (the expected credit of one sampled chain, as GRPO-MT sees it) and the mean of max over the G2
    refinements (MaRS's credit r~(v)). The world is built so that informative failures are worth several times
    the uninformative ones (docs/toy_world.md reports the shipped policy's figures). `policy` is a checkpoint
    directory (sampled as evaluation samples: temperature 1, no top-k) or anything with `sample(prompts, n)`.
    """
    import torch

    torch.manual_seed(seed)
    tasks = make_tasks("test", n_tasks, seed=seed)
    sampler = policy if hasattr(policy, "sample") else TransformersPolicy(policy, max_new_tokens=48)
    with Executor(timeout=2.0, workers=2) as ex:
        trees = task_trees(
            tasks, sampler, ex, g1=g1, g2=g2, turns=2, reward_tests="visible", extract=extract_program
        )
    stats: dict = {}
    for task, tree in zip(tasks, trees):
        for v in tree.root.children:
            if v.reward >= 1.0:
                continue
            got = revealed(task, v.feedback)
            kind = "reveals a" if "a" in got else "reveals b" if "b" in got else "uninformative"
            rs = [c.reward for c in v.children]
            s = stats.setdefault(kind, {"n": 0, "chain": 0.0, "mars": 0.0})
            s["n"] += 1
            s["chain"] += sum(rs) / len(rs)  # E[one sampled refinement] (GRPO-MT's credit, in expectation)
            s["mars"] += max(rs)  # MaRS: r~(v) = max(r(v), max_u r~(u)) with r(v) = 0
    both = [stats[k] for k in ("reveals a", "reveals b") if k in stats]
    if both:  # every informative failure together, the figure compared with the uninformative ones
        stats["informative"] = {key: sum(s[key] for s in both) for key in ("n", "chain", "mars")}
    return {
        k: {"n": s["n"], "chain": s["chain"] / s["n"], "mars": s["mars"] / s["n"]} for k, s in stats.items()
    }


def revealing_attempt(task, rng: random.Random) -> str:
    """A failed attempt on `task` whose feedback is revealing (`world.revealing`), as the scaffold meets them: with
    A hidden, the attempt has the right B and a wrong A (the lock then states A: a turn-2 repair of a first attempt
    that copied B, or the turn-3 repair of a hard task); with A given, the right A and a wrong B (the lock states B)."""
    s = spec_of(task)
    if s.hide_a:
        return program(s.family, rng.choice([a for a in A_VALUES if a != s.a]), s.b)
    return program(s.family, s.a, rng.choice([b for b in B_VALUES if b != s.b]))


def repair_rate(policy, n_tasks: int = 200, samples: int = 4, seed: int = 77, executor=None) -> dict:
    """p(repair | revealing feedback): how often the policy's refinement solves a task after a revealing failure.

    For `n_tasks` test-split tasks: one `revealing_attempt`, its real feedback from the visible lock (checked to be
    revealing), the refinement prompt the scaffold would send, and `samples` completions at temperature 1 (as in
    evaluation); a completion repairs when its program passes the hidden test. Returns {"p": share of completions
    that repair, "n": completions, "by_mask": {mask: p}} (masks "a", "b", "ab": what the prompt hides).
    `policy` is a checkpoint directory or anything with `sample(prompts, n, seed=...)`.
    """
    rng = random.Random(f"toy-repair-{seed}")
    tasks = make_tasks("test", n_tasks, seed=seed)
    sampler = policy if hasattr(policy, "sample") else TransformersPolicy(policy, max_new_tokens=48)
    with contextlib.ExitStack() as stack:
        ex = executor or stack.enter_context(Executor(timeout=2.0, workers=2))
        attempts = [revealing_attempt(t, rng) for t in tasks]
        feedback = [r.feedback for r in ex.run_many([(a, t.visible_tests) for a, t in zip(attempts, tasks)])]
        if not all(revealing(t, fb) for t, fb in zip(tasks, feedback)):
            raise RuntimeError(
                "a revealing attempt's feedback did not reveal what it should: the lock or the "
                "executor's feedback format changed"
            )
        prompts = [refine_prompt(t.prompt, a, fb) for t, a, fb in zip(tasks, attempts, feedback)]
        outs = sampler.sample(prompts, samples, seed=seed)
        jobs = [(extract_program(c), t.hidden_tests) for t, cs in zip(tasks, outs) for c in cs]
        solved = [r.solved for r in ex.run_many(jobs)]
    masks = [spec_of(t).mask for t in tasks for _ in range(samples)]
    by_mask = {m: _mean([ok for ok, mm in zip(solved, masks) if mm == m]) for m in sorted(set(masks))}
    return {"p": _mean(solved), "n": len(solved), "by_mask": by_mask}


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(description="Measure a toy policy: Iter-k pass@1 and the informative share.")
    p.add_argument("model_dir")
    p.add_argument("--n-tasks", type=int, default=200)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--iters", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--failure-values",
        action="store_true",
        help="also grow two-turn trees and report what each kind of failed first attempt is worth",
    )
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.failure_values:
        for kind, v in sorted(failure_values(args.model_dir, n_tasks=args.n_tasks).items()):
            print(f"{kind:>13}: n={v['n']:4d}  chain={v['chain']:.3f}  MaRS={v['mars']:.3f}")
    out = measure_policy(args.model_dir, args.n_tasks, args.runs, args.iters, progress=True)
    print(out["table"].to_string(index=False))
    print(
        f"informative share of failed attempts: {out['informative_share']:.3f} ({out['failures']} failures); "
        f"of failed first attempts: {out['informative_share_turn1']:.3f}; kinds: {out['failure_kinds']}"
    )


if __name__ == "__main__":
    main()
