"""Bubblewrap for the sandbox's kernel layer, evaluated: the same allow-list root built by ``bwrap``, what it shows a
program, and what it costs to start one program that way, against a fork of the program server.

The executor's root is `sandbox_root.root_plan` (a list of binds, tmpfs, links, generated files and a /proc),
entered in the server with `enter_root` once per slot. This script turns the same plan into ``bwrap`` arguments
(``--ro-bind``, ``--dev-bind``, ``--size``/``--tmpfs``, ``--symlink``, ``--ro-bind-data``, ``--proc``,
``--remount-ro``; ``--unshare-all --die-with-parent --new-session``), runs a probe in it (what the root holds, which
processes it sees, network, writes), and times three ways of starting a program, CPU of this process and its
children per start, and wall time:

    fork -> exit -> reap                 a program process of the fork server (the executor: one per job)
    python -I -c pass                    a fresh interpreter, no sandbox
    bwrap <the plan> python -I -c pass   a fresh interpreter in bubblewrap's namespaces and root

    .venv/bin/python benchmarks/bubblewrap_cost.py --runs 40       # needs bwrap on PATH (Debian: bubblewrap)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SANDBOX = os.path.join(HERE, "..", "murphy_lab", "executor", "sandbox.py")
PROBE = """
import os, socket
print("root:", " ".join(sorted(os.listdir("/"))))
print("processes seen:", " ".join(sorted(p for p in os.listdir("/proc") if p.isdigit())))
print("pid 1 cmdline readable:", os.path.exists("/proc/1/cmdline") and bool(open("/proc/1/cmdline", "rb").read()))
for path in ("/work", "/etc/shadow", "/root", "/sys"):
    print(path, "exists" if os.path.exists(path) else "absent")
try:
    socket.create_connection(("1.1.1.1", 80), timeout=1); print("network: up")
except OSError as e:
    print("network: down", os.strerror(e.errno))
for d in ("/usr", "/tmp", "/"):
    try:
        open(os.path.join(d, "probe-write"), "w").close(); print(d, "writable")
    except OSError as e:
        print(d, "not writable:", os.strerror(e.errno))
"""


def load_sandbox():
    spec = importlib.util.spec_from_file_location("_murphy_sandbox", SANDBOX)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bwrap_args(plan: list, tmp_mb: int, keep_open: list) -> list[str]:
    """``bwrap`` arguments that build `plan` (`sandbox_root.root_plan`); generated files go through pipes."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
    for path, kind, text in plan:
        if kind == "ro":
            args += ["--ro-bind", path, path]
        elif kind == "dev":
            args += ["--dev-bind", path, path]
        elif kind == "tmp":
            args += ["--perms", "1777", "--size", str(tmp_mb << 20), "--tmpfs", path]
        elif kind == "cover":
            args += ["--tmpfs", path, "--remount-ro", path]
        elif kind == "link":
            args += ["--symlink", text, path]
        elif kind == "file":
            r, w = os.pipe()
            os.write(w, text.encode())
            os.close(w)
            keep_open.append(r)
            args += ["--ro-bind-data", str(r), path]
        elif kind == "proc":
            args += ["--proc", path]  # bwrap mounts /proc without options: no hidepid
    return args + ["--remount-ro", "/"]


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def timed(start, runs: int) -> tuple[float, float]:
    """(median wall ms, CPU ms per start) of `runs` calls of `start`."""
    walls, c0 = [], cpu()
    for _ in range(runs):
        t0 = time.perf_counter()
        start()
        walls.append(1000 * (time.perf_counter() - t0))
    return statistics.median(walls), 1000 * (cpu() - c0) / runs


def fork_exit_reap() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--tmp-mb", type=int, default=256)
    args = ap.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("no bwrap on PATH (Debian: apt-get install bubblewrap)")
    version = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
    plan = load_sandbox().root_plan("server")
    print(f"{version}; the plan: {len(plan)} entries; uid {os.geteuid()}; load {os.getloadavg()[0]:.1f}")

    def in_bwrap(code: str) -> subprocess.CompletedProcess:
        fds: list[int] = []
        cmd = bwrap_args(plan, args.tmp_mb, fds) + [sys.executable, "-I", "-c", code]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, pass_fds=fds)
        finally:
            for fd in fds:
                os.close(fd)

    probe = in_bwrap(PROBE)
    print(f"probe in bwrap (exit {probe.returncode}):\n{probe.stdout}{probe.stderr[-2000:]}")

    def run(cmd: list) -> None:
        subprocess.run(cmd, check=True)

    def bwrapped(cmd: list) -> None:
        fds: list[int] = []
        try:
            subprocess.run(bwrap_args(plan, args.tmp_mb, fds) + cmd, check=True, pass_fds=fds)
        finally:
            for fd in fds:
                os.close(fd)

    # CPU is counted for processes their parents reaped: bwrap's program is reaped by bwrap's own PID 1 in the new
    # namespace, so the bwrap rows' CPU leaves the program out; compare them by wall time
    python = [sys.executable, "-I", "-c", "pass"]
    for name, start, runs in (
        ("fork -> exit -> reap (the fork server's)", fork_exit_reap, args.runs * 10),
        ("/bin/true", lambda: run(["/bin/true"]), args.runs),
        ("bwrap <the plan> /bin/true", lambda: bwrapped(["/bin/true"]), args.runs),
        ("python -I -c pass", lambda: run(python), args.runs),
        ("bwrap <the plan> python -I -c pass", lambda: bwrapped(python), args.runs),
    ):
        wall, cpu_ms = timed(start, runs)
        print(f"{name:45s} median {wall:7.2f} ms wall, {cpu_ms:6.2f} ms CPU per start ({runs} runs)")


if __name__ == "__main__":
    main()
