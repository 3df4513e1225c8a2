"""What a PID namespace per job would cost, against the one per program server the executor uses.

The program server is PID 1 of its own PID namespace, made once at its start (`sandbox.become_init`). A fresh
namespace per job needs one more process per job: ``unshare(CLONE_NEWPID)`` only moves the caller's future
children, and a namespace dies with its first process, so the server would fork an init per job, which
unshares and forks the program process. This measures both ways in a process shaped like a server (its warm
imports, its frozen heap), as CPU per job of this process and its children (fork, the child's exit, the reap):

    fork -> program process exits -> reap                                  (today: per job, in the server's namespace)
    fork -> init: unshare(CLONE_NEWPID), fork -> program process exits     (a namespace per job)

    sudo .venv/bin/python benchmarks/pid_namespace_cost.py --jobs 2000
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import os
import resource
import statistics

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "murphy_lab", "executor", "server.py")
CLONE_NEWPID = 0x20000000
_libc = ctypes.CDLL(None, use_errno=True)


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def shared_namespace(n: int) -> None:
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


def namespace_per_job(n: int) -> None:
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            if _libc.unshare(CLONE_NEWPID) != 0:
                os._exit(2)
            child = os.fork()
            if child == 0:
                os._exit(0)
            os.waitpid(child, 0)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("unshare(CLONE_NEWPID) refused: run as root")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("_murphy_server", SERVER)  # its warm modules and its own
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    gc.collect()
    gc.freeze()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one CPU, as a slot's server
    got = {"shared": [], "per job": []}
    for _ in range(args.repeats):
        for name, fn in (("shared", shared_namespace), ("per job", namespace_per_job)):
            c0 = cpu()
            fn(args.jobs)
            got[name].append(1000 * (cpu() - c0) / args.jobs)
    med = statistics.median
    print(
        f"{args.jobs} jobs x {args.repeats} repeats, load average {os.getloadavg()[0]:.1f}; CPU ms per job:"
    )
    for name, xs in got.items():
        print(f"  {name:8s} median {med(xs):.3f}  (range {min(xs):.3f}-{max(xs):.3f})")
    extra = sorted(b - a for a, b in zip(got["shared"], got["per job"]))
    print(
        f"  a namespace per job costs {med(extra):+.3f} CPU ms per job (paired range {extra[0]:+.3f}-{extra[-1]:+.3f})"
    )


if __name__ == "__main__":
    main()
