"""The sandbox: namespaces once per process server, limits once per program process, non-recursive cleanup.

Loaded by path (stdlib only) by the program server (`server.py`) and the test worker (`worker.py`).

Once per process (`isolate`): child subreaper (orphans and `setsid` daemons come back to us and are swept),
fresh network namespace (no network), IPC namespace, and a mount namespace in which every world-writable
directory (/tmp, /var/tmp, /dev/shm, /run/lock, ...) is a private tmpfs and every hidden path (the repository,
../shared, dataset caches, benchmark data shipped in installed packages) is covered by an empty tmpfs. As root
directly; as a normal user through a user namespace where the kernel allows it. Where the kernel offers cgroup
v1, the server makes a memory group (counts tmpfs pages) and a pids group (counts threads) that each program
process joins.

Once per program process (`ProgramSandbox.enter`, prepared once per server): a fresh IPC namespace (SysV/POSIX
shared memory dies with the test), a new session, parent-death signal, only its own files open, a private
empty working directory, its own environment, rlimits (address space, CPU, file size, files, processes, no core
dumps), the cgroup (memory incl. tmpfs, pids incl. threads) where the kernel offers one, and, as root, a private
uid with no groups; `no_new_privs` and a seccomp filter (`install_syscall_filter`: no new user namespaces, no
kernel keyrings, no 32-bit syscall entry) come with the fork.
"""

from __future__ import annotations

import _thread
import ctypes
import os
import resource
import signal
import stat
import struct
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x40000000, 0x08000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 1 << 12, 1 << 14, 1 << 18
MS_RDONLY, MS_REMOUNT = 1, 32
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
PRIVATE_DIRS: list[
    str
] = []  # world-writable directories covered by a private tmpfs (emptied after each test)
KEPT: set[str] = set()  # entries of those directories that hold the bound-back Python installation


def call(fn, *args) -> None:
    if fn(*args) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def not_dumpable() -> None:
    """No ptrace and no /proc/<pid>/mem for processes of the same uid (the test side keeps its memory)."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


# --- once per process -------------------------------------------------------------------------------------------
def isolate(cfg: dict, hide: bool) -> tuple[dict, list[str]]:
    """Subreaper, network/IPC/mount namespaces, private world-writable dirs, hidden paths (when `hide`)."""
    active = {"subreaper": False, "network": False, "private_tmp": False, "user": False, "hidden": False}
    warnings = []
    try:
        call(_libc.prctl, PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        active["subreaper"] = True
    except OSError as e:
        warnings.append(f"cannot become a child subreaper ({e}); daemonized grandchildren may survive a test")
    uid, gid = os.geteuid(), os.getegid()
    if cfg["isolate"]:
        try:
            if uid != 0:
                own_user_namespace(uid, gid)
            call(_libc.unshare, CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC)
            active["network"] = True
        except OSError as e:
            warnings.append(f"no network/IPC namespace ({e}); programs can reach the network")
        if active["network"]:
            try:
                call(_libc.mount, b"none", b"/", None, MS_REC | MS_PRIVATE, None)
                for d in world_writable():
                    cover(d, f"size={cfg['tmp_mb']}m,mode=1777".encode())
                    PRIVATE_DIRS.append(d)
                active["private_tmp"] = True
                if hide:
                    for d in cfg.get("hidden", []):
                        if os.path.isdir(d):
                            cover(d, b"size=1m,mode=755")
                    active["hidden"] = True
            except OSError as e:
                warnings.append(
                    f"no private /tmp or hidden paths ({e}); programs may read and write shared files"
                )
    drop = cfg["drop_user"]
    if drop is None:
        drop = uid == 0
    if drop and uid != 0:
        warnings.append("not root: cannot switch tests to a private uid; programs run as the calling user")
        drop = False
    active["user"] = drop
    if drop:
        hidden = expose_python() if active["private_tmp"] else closed_ancestors()
        if hidden:
            warnings.append(
                f"{', '.join(hidden)} not readable by other users: programs may fail to import modules "
                "(install Python where other users can read it, or allow mount namespaces)"
            )
    return active, warnings


def own_user_namespace(uid: int, gid: int) -> None:
    """A user namespace in which we are ourselves (and hold the capabilities the other namespaces need). A
    separate step: the other namespaces come in one ``unshare`` after it, all or none. The id maps are files of
    our own /proc entry, which only a dumpable process may write."""
    call(_libc.unshare, CLONE_NEWUSER)
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    finally:
        not_dumpable()


def world_writable() -> list[str]:
    """Directories anyone may write (mode o+w), two levels below / (not /proc, /sys): each gets a private tmpfs."""
    found = []
    for top in ("/", "/run", "/var", "/dev", "/var/lib"):
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for e in entries:
            if e.path in ("/proc", "/sys") or not e.is_dir(follow_symlinks=False):
                continue
            try:
                if e.stat(follow_symlinks=False).st_mode & stat.S_IWOTH:
                    found.append(e.path)
            except OSError:
                pass
    return sorted(set(found))


def outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(p.startswith(q + "/") for q in paths)]


def cover(d: str, opts: bytes) -> None:
    """Cover `d` with an empty tmpfs, binding back (read-only) the parts of the Python installation under it."""
    keep = outermost([p for p in needed_paths() if p.startswith(d + "/")])
    held = [(p, os.open(p, os.O_RDONLY | os.O_DIRECTORY)) for p in keep]
    try:
        call(_libc.mount, b"tmpfs", d.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts)
        for p, fd in held:
            os.makedirs(p, mode=0o755, exist_ok=True)
            call(_libc.mount, f"/proc/self/fd/{fd}".encode(), p.encode(), None, MS_BIND | MS_REC, None)
            call(_libc.mount, None, p.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)
            KEPT.add(os.path.join(d, os.path.relpath(p, d).split(os.sep)[0]))
    finally:
        for _, fd in held:
            os.close(fd)


def needed_paths() -> list[str]:
    """The Python installation a program needs to read: prefixes and every directory on sys.path."""
    paths = {sys.prefix, sys.base_prefix, *(p for p in sys.path if p and os.path.isdir(p))}
    return sorted(os.path.realpath(p) for p in paths)


def closed_ancestors() -> list[str]:
    """Directories on the way to the installation that other users cannot enter (e.g. /root, mode 700)."""
    closed = set()
    for p in needed_paths():
        parts = p.strip("/").split("/")
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


def expose_python() -> list[str]:
    """Let the private uid read the installation under a closed directory such as /root (bind aside and back)."""
    failed = []
    for closed in closed_ancestors():
        inside = outermost([p for p in needed_paths() if p == closed or p.startswith(closed + "/")])
        try:
            staged = []
            for k, p in enumerate(inside):
                aside = f"/tmp/.murphy-python/{k}"
                os.makedirs(aside, exist_ok=True)
                call(_libc.mount, p.encode(), aside.encode(), None, MS_BIND | MS_REC, None)
                staged.append((aside, p))
            call(_libc.mount, b"tmpfs", closed.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=755")
            for aside, p in staged:
                os.makedirs(p, mode=0o755, exist_ok=True)
                call(_libc.mount, aside.encode(), p.encode(), None, MS_BIND | MS_REC, None)
            os.chmod("/tmp/.murphy-python", 0o700)
            KEPT.add("/tmp/.murphy-python")
        except OSError:
            failed.append(closed)
    return failed


def make_cgroup(name: str, memory_mb: int, max_processes: int) -> list[str]:
    """cgroup v1 memory (counts tmpfs pages) and pids (counts threads) groups for the program processes."""
    made = []
    for ctrl, files in (
        ("memory", {"memory.limit_in_bytes": memory_mb * MB, "memory.swappiness": 0}),
        ("pids", {"pids.max": max_processes}),
    ):
        d = os.path.join(CGROUP_V1, ctrl, name)
        try:
            os.makedirs(d, exist_ok=True)
            for f, v in files.items():
                if os.path.exists(os.path.join(d, f)):
                    with open(os.path.join(d, f), "w") as fh:
                        fh.write(str(v))
            made.append(d)
        except OSError:
            pass
    return made


def remove_cgroups(dirs: list[str]) -> None:
    for d in dirs:
        try:
            os.rmdir(d)
        except OSError:
            pass


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
    set by `enter`: the rlimits. The server also puts the program process's files at fds below
    `first_free`, makes `workdir` (owned by `uid`) and sets the environment (`CHILD_ENV`, ``HOME`` and ``TMPDIR``
    = `workdir`) before it forks.
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


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads and the process itself (it may have left the group)."""
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


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
