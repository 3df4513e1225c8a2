"""After each job: every process it started killed and reaped, and every file it left removed.

Loaded by `sandbox.py` by path (stdlib only; `root` is `sandbox_root`, set before this file runs). The program
server, PID 1 of its own PID namespace, ends a job with one ``kill(-1, SIGKILL)`` and reaps until it has no child
left (`end_job`; without the namespace: the program's group, then a sweep of the children left to it as child
subreaper); it removes the working directory without recursion (`remove_tree`) and empties the root's private
directories (`empty_private_dirs`), skipping one whose size and times say nothing was added since it was emptied.
"""

from __future__ import annotations

import os
import signal
import stat
import time

# the allow-list root (`sandbox_root.py`): its private directories and what they keep
root = globals()["root"]


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


def empty_dir(path: str) -> None:
    """Remove everything inside `path` (the job folder: a mount point, or the caller's directory), keeping it."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for e in entries:
        remove_tree(e.path)  # a file or a tree, without recursion


def empty_private_dirs(keep: tuple[str, ...] = ()) -> None:
    """Empty every private world-writable directory: nothing a test wrote there reaches the next one.

    A directory whose size and times are those it had when it was last emptied is skipped: each of these is a
    tmpfs, whose directory size counts its entries, and a program can only add entries (what was there is ours
    or read-only), so an unchanged directory holds nothing of the program's."""
    for d in root.PRIVATE_DIRS:
        try:
            if _snapshot(d) == _EMPTIED.get(d):
                continue
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.path in root.KEPT or e.path in keep:
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
