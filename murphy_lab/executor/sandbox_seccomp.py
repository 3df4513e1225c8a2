"""The syscall filter: a classic-BPF seccomp program every program process and test worker runs under.

Loaded by `sandbox.py` by path (stdlib only). `install_syscall_filter` installs `SYSCALL_FILTER` (after
`no_new_privs`; never removable, inherited by every fork): no new user namespaces (in one a process holds every
capability), no kernel keyrings (a keyring is per uid or per session: a key would reach the next job and outlive
the executor), and no syscall through the 32-bit (``int 0x80``) or x32 entries, whose numbers the x86_64 rules do
not name. The filter is written as data with labels (`SYSCALL_FILTER`) and assembled by `assemble`.
"""

from __future__ import annotations

import ctypes
import os

_libc, call = globals()["libc"], globals()["call"]  # set by sandbox.py before this file runs (its libc)
CLONE_NEWUSER = 0x10000000


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# seccomp's view of a syscall (struct seccomp_data) and the x86_64 numbers the filter names
_NR, _ARCH, _ARG0 = 0, 4, 16
AUDIT_ARCH_X86_64, X32_SYSCALL_BIT = 0xC000003E, 0x40000000
NR = {"clone": 56, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "clone3": 435}
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
EPERM, ENOSYS = 1, 38
_OPS = {
    "ld": 0x20,
    "jeq": 0x15,
    "jge": 0x35,
    "jset": 0x45,
    "ret": 0x06,
}  # BPF_LD|W|ABS, BPF_JMP|..|K, BPF_RET|K

SYSCALL_FILTER = [  # (op, k, jump if true, jump if false): a label, or None for the next instruction
    ("ld", _ARCH, None, None),
    ("jeq", AUDIT_ARCH_X86_64, None, "enosys"),  # 32-bit entry (int 0x80): another table of numbers, refused
    ("ld", _NR, None, None),
    ("jge", X32_SYSCALL_BIT, "enosys", None),  # the x32 ABI's numbers, refused
    (
        "jeq",
        NR["clone3"],
        "enosys",
        None,
    ),  # its flags sit in memory the filter cannot read: libc falls back to clone
    (
        "jeq",
        NR["add_key"],
        "eperm",
        None,
    ),  # kernel keyrings outlive a job and are shared by a uid: none at all
    ("jeq", NR["request_key"], "eperm", None),
    ("jeq", NR["keyctl"], "eperm", None),
    ("jeq", NR["unshare"], "flags", None),
    ("jeq", NR["clone"], "flags", "allow"),
    "flags",
    ("ld", _ARG0, None, None),  # the low 32 bits of the flags
    (
        "jset",
        CLONE_NEWUSER,
        "eperm",
        "allow",
    ),  # no new user namespace (in one a process holds every capability)
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
    filters = (ctypes.c_uint64 * len(prog))(
        *(code | (jt << 16) | (jf << 24) | (k << 32) for code, jt, jf, k in prog)
    )
    fprog = _SockFprog(len(prog), ctypes.cast(filters, ctypes.c_void_p))
    return _libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
