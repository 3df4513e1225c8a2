"""What a KodCode-style job costs on the pytest path, beside a HumanEval job, in the same run.

Three figures per repeat, each CPU milliseconds per job (this process plus every process it started: the workers,
their servers and program processes; so they do not depend on what else the machine runs) and jobs/s:

- humaneval: our `Executor` on the 164 HumanEval canonical solutions (the assert path; `executor_throughput.py`);
- kodcode: our `Executor` on N KodCode-style pytest files with their correct programs (`kodcode_style.py`: the
  files the pytest differential draws), each file collected once outside the timed region (a training run
  collects its tasks once, at load), then each (program, suite) one job run by pytest in the test worker;
- real pytest: the same files and programs run by real pytest in one plain process (``pytest.main`` per file).

    .venv/bin/python benchmarks/pytest_cost.py --files 200 --repeats 3 --workers 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import executor_throughput as T  # noqa: E402 - this folder's benchmarks (not a package)
import kodcode_style  # noqa: E402

from murphy_lab.executor import Executor  # noqa: E402
from murphy_lab.tasks.convert import pytest_file_suites  # noqa: E402


def kodcode_jobs(n: int) -> tuple[list[dict], list]:
    """(the cases with their correct programs, our jobs), the files collected once."""
    cases = [dict(c, **kodcode_style.render(dict(c, bugs=[]))) for c in kodcode_style.files(n)]
    with Executor(workers=2) as ex:
        suites = pytest_file_suites([c["test"] for c in cases], ex)
    kept = [(c, s[0]) for c, s in zip(cases, suites) if not isinstance(s, ValueError)]
    return [c for c, _ in kept], [(c["program"], s) for c, s in kept]


def bench_real_pytest(cases: list[dict]) -> float:
    """CPU ms per file of real pytest in one plain process (a child of this one)."""
    c0 = T._own_cpu()
    kodcode_style.real_pytest(cases)
    return 1000 * (T._own_cpu() - c0) / len(cases)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args()
    he = T.jobs_for(T.load_humaneval())
    cases, jobs = kodcode_jobs(args.files)
    ids = sum(len(s) for _, s in jobs)
    print(
        f"{len(he)} HumanEval jobs; {len(jobs)} KodCode-style jobs ({ids} test ids); load {os.getloadavg()[0]:.1f}"
    )
    rows = {"humaneval": [], "kodcode": [], "real pytest": []}
    for r in range(args.repeats):
        he_rate, he_pass, he_cpu = T.bench_ours(he, args.workers, args.timeout)
        kc_rate, kc_pass, kc_cpu = T.bench_ours(jobs, args.workers, args.timeout)
        t0 = time.perf_counter()
        real_cpu = bench_real_pytest(cases)
        real_rate = len(cases) / (time.perf_counter() - t0)
        rows["humaneval"].append((he_rate, he_cpu))
        rows["kodcode"].append((kc_rate, kc_cpu))
        rows["real pytest"].append((real_rate, real_cpu))
        print(
            f"repeat {r + 1}: humaneval {he_rate:6.1f} jobs/s {he_cpu:5.2f} CPU ms ({he_pass}/{len(he)}) | kodcode "
            f"{kc_rate:6.1f} jobs/s {kc_cpu:5.2f} CPU ms ({kc_pass}/{len(jobs)} solved) | real pytest "
            f"{real_rate:6.1f} files/s {real_cpu:5.2f} CPU ms",
            flush=True,
        )
    med = statistics.median
    print(
        f"load after: {os.getloadavg()[0]:.1f}; medians over {args.repeats} repeats, workers={args.workers}:"
    )
    for name, got in rows.items():
        print(
            f"  {name:12s} {med(r for r, _ in got):7.1f} per s  {med(c for _, c in got):6.2f} CPU ms per job"
        )
    ratio = sorted(k[1] / h[1] for k, h in zip(rows["kodcode"], rows["humaneval"]))
    print(
        f"  kodcode / humaneval CPU per job (paired): median {med(ratio):.2f}x, range {ratio[0]:.2f}-{ratio[-1]:.2f}x"
    )


if __name__ == "__main__":
    main()
