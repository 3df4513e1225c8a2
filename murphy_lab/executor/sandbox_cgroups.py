"""A slot's CPU, memory and process bounds: cgroup v1 groups made as root and kept as open files.

Loaded by `sandbox.py` by path (stdlib only); made by the program server (`Cgroups`) before the allow-list root
hides /sys. Every program process joins the memory and pids groups; the server joins the cpu and cpuset groups, so
that every fork inherits them at no cost per job: a slot's programs share one CPU's time on the slot's CPU, however
many processes they fork.
"""

from __future__ import annotations

import os

MB = 1 << 20
CGROUP_V1 = "/sys/fs/cgroup"


class Cgroups:
    """A slot's cgroup v1 groups, named `name`, made as root before the sandbox's root hides /sys and used
    through open files: memory (`memory_mb`, counts tmpfs pages) and pids (`max_processes`, counts threads),
    which each program process joins (`procs`; the server stays outside), and cpu (a quota of one CPU) and
    cpuset (the CPUs this server may use: its slot's one when pinned), which the server joins (`join_slot`)
    so that every fork inherits them at no cost. Where the kernel refuses a group it is left out."""

    def __init__(self, name: str, memory_mb: int, max_processes: int, enabled: bool = True):
        self.name, self.tops, self.procs, self.failcnt, self.slot, self.back = name, {}, [], [], [], []
        if not enabled:
            return
        cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        settings = {
            "memory": {"memory.limit_in_bytes": memory_mb * MB, "memory.swappiness": 0},
            "pids": {"pids.max": max_processes},
            "cpu": {"cpu.cfs_quota_us": lambda top: _read(top, "cpu.cfs_period_us")},  # one CPU
            "cpuset": {"cpuset.cpus": cpus, "cpuset.mems": lambda top: _read(top, "cpuset.mems")},
        }
        for ctrl, files in settings.items():
            top = os.path.join(CGROUP_V1, ctrl)
            d = os.path.join(top, name)
            try:
                os.makedirs(d, exist_ok=True)
                self.tops[ctrl] = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                for f, v in files.items():
                    if os.path.exists(os.path.join(d, f)):
                        with open(os.path.join(d, f), "w") as fh:
                            fh.write(str(v(top) if callable(v) else v))
                procs = os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                if ctrl == "memory":
                    self.failcnt.append(
                        os.open(os.path.join(d, "memory.failcnt"), os.O_RDONLY | os.O_CLOEXEC)
                    )
            except OSError:
                continue
            (self.procs if ctrl in ("memory", "pids") else self.slot).append(procs)
        # to leave the slot's groups before removing them (the server is a member)
        self.back = [
            os.open(os.path.join(CGROUP_V1, c, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
            for c in ("cpu", "cpuset")
            if c in self.tops
        ]

    def join_slot(self) -> bool:
        """This process (and every process it forks from now on) into the cpu and cpuset groups."""
        joined = False
        for fd in self.slot:
            try:
                os.write(fd, b"0")
                joined = True
            except OSError:
                pass
        return joined

    def remove(self) -> None:
        """Leave the slot's groups and remove all of them (every program process has ended)."""
        for fd in self.back:
            try:
                os.write(fd, b"0")
            except OSError:
                pass
        for fd in self.procs + self.failcnt + self.slot + self.back:
            os.close(fd)
        for top in self.tops.values():
            try:
                os.rmdir(self.name, dir_fd=top)
            except OSError:
                pass
            os.close(top)
        self.tops, self.procs, self.failcnt, self.slot, self.back = {}, [], [], [], []


def _read(folder: str, name: str) -> str:
    with open(os.path.join(folder, name)) as f:
        return f.read().strip()
