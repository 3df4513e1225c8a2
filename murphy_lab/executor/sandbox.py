"""The sandbox: the namespaces and the uid each process enters, once per process and once per program process.

Loaded by path (stdlib only) by the program server (`server.py`) and the test worker (`worker.py`). This module
decides what each process enters and in which order; its parts, loaded from here, hold one mechanism each:
`sandbox_root.py` (the allow-list root), `sandbox_seccomp.py` (the syscall filter), `sandbox_cgroups.py` (a
slot's CPU, memory and process bounds) and `sandbox_cleanup.py` (after each job: processes ended, files removed);
their public names are named here too (``sandbox.root_plan``, ``sandbox.Cgroups``, ``sandbox.end_job``, ...).

Once per process (`isolate`), as root directly, as a normal user through a user namespace where the kernel
allows it: fresh network (no network), IPC and mount namespaces, and the allow-list root (`root_plan`,
`enter_root`): whatever is not on the list (the repository, datasets anywhere on the machine, caches,
/etc/shadow) does not exist in there. The program server is also PID 1 of its own PID namespace
(`become_init`): programs see only their own processes, and after each job one ``kill(-1, SIGKILL)`` ends
everything the job started. The test worker gets the same root, read-only, no PID namespace (it starts no
processes), then its own private uid, `no_new_privs` and the syscall filter (`confine_worker`).

Once per program process (`ProgramSandbox.enter`, prepared once per server): a fresh IPC namespace (SysV/POSIX
shared memory dies with the test), a new session, parent-death signal, only its own files open, a private
empty working directory, its own environment, rlimits (address space, CPU, file size, files, processes, no core
dumps), the memory and pids groups where the kernel offers them, and, as root, a private uid with no groups;
`no_new_privs` and the seccomp filter (`install_syscall_filter`: no new user namespaces, no kernel keyrings, no
32-bit syscall entry) come with the fork.
"""

from __future__ import annotations

import _thread
import builtins
import ctypes
import importlib.util
import os
import resource
import signal
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x40000000, 0x08000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
M_ARENA_MAX = -8
MB = 1 << 20
THREAD_STACK = 16 * MB  # per thread (RLIMIT_STACK would give every thread 64 MB of address space)
_libc = ctypes.CDLL(None, use_errno=True)

# The whole environment a program sees (tests add HOME/TMPDIR).
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def call(fn, *args) -> None:
    if fn(*args) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def _sibling(name: str, **names):
    """A part of the sandbox next to this file, loaded by path with `names` set before it runs and a snapshot of
    the builtins of its own."""
    spec = importlib.util.spec_from_file_location(
        f"_murphy_{name}", os.path.join(os.path.dirname(__file__), f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = dict(vars(builtins))
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


root = _sibling("sandbox_root", libc=_libc, call=call)  # the allow-list root
seccomp = _sibling("sandbox_seccomp", libc=_libc, call=call)  # the syscall filter
cgroups = _sibling("sandbox_cgroups")  # a slot's CPU, memory and process bounds
cleanup = _sibling("sandbox_cleanup", root=root)  # after each job
root_plan, enter_root, SYSCALL_FILTER, install_syscall_filter = (
    root.root_plan,
    root.enter_root,
    seccomp.SYSCALL_FILTER,
    seccomp.install_syscall_filter,
)
share_tree, attach_tree, idmapping = root.share_tree, root.attach_tree, root.idmapping
Cgroups, end_job, remove_tree, empty_private_dirs, empty_dir = (
    cgroups.Cgroups,
    cleanup.end_job,
    cleanup.remove_tree,
    cleanup.empty_private_dirs,
    cleanup.empty_dir,
)
JOB_TREE: int | None = None  # the test worker's job folder, as a detached mount for its server (`isolate`)
WORKER_UID = -1  # the uid the test worker runs as (its private one as root), chosen in `isolate`


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
    global WORKER_UID
    # the job folder's owner, from the start
    WORKER_UID = private_uid("worker") if uid == 0 and not server else uid
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
                enter_root(root_plan(role, cfg.get("job_dir"), WORKER_UID), cfg["tmp_mb"])
                active["root"] = active["private_tmp"] = True
            except OSError as e:
                warnings.append(
                    f"no allow-list root ({e}); programs can read the machine's files and write its shared "
                    "directories"
                )
        if active["root"] and not server and cfg.get("job_dir"):
            global JOB_TREE
            # the job folder, for the program server to mount too (before this worker gives up its rights)
            try:
                JOB_TREE = share_tree(cfg["job_dir"])
            except OSError:
                JOB_TREE = None
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
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
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
        uid = WORKER_UID
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
    set by `enter`: the rlimits. The server also puts the program process's files at fds below `first_free`
    and sets the environment (`CHILD_ENV`, ``HOME`` and ``TMPDIR`` = `workdir`, the job folder the test worker
    shares) before it forks.
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


def limit_worker_memory(cfg: dict, statm: int) -> None:
    """The test worker's address-space limit: what it holds now, plus what a test's data may take (the program's
    own limit and 256 MB; a test's MemoryError is its verdict `memory`, and the worker is replaced); no core dumps."""
    now = int(os.pread(statm, 256, 0).split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = now + (cfg["memory_mb"] + 256) * MB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit + 64 * MB))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def rss_mb(statm: int) -> float:
    """Resident memory now (not the peak), in MB, from an open ``/proc/<pid>/statm``; 0 if it cannot be read."""
    try:
        return int(os.pread(statm, 256, 0).split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB
    except (OSError, ValueError, IndexError):
        return 0.0
