"""What the test worker hands its program server: the requests, their replies, and the program file.

Loaded by path by both (stdlib only). Every request is length-prefixed (4 bytes, little-endian) and fixed-size
binary but for the IO input that follows its header (the server's own work between forks touches pages the last
fork still shares, each one a copy: no JSON on that path). File descriptors travel with the request (SCM_RIGHTS):

    ASSERT  b"A" + CPU seconds (float64); fds: the channel, the program file
            -> no reply: the server forks a program process that loads the program and serves it on the channel
    FINISH  b"F" -> FINISHED (not length-prefixed): b"F", the program process's wait status, whether the memory
            cgroup refused memory, the server's RSS in MB
    IO      b"I" + timeout (float64) + the input; fd: the program file
            -> RAN (not length-prefixed): b"R", timed out, wait status, memory refused, RSS MB, len(stdout),
            len(stderr), then the bytes of stdout and stderr

Every status in these replies is the kernel's (a wait status, a cgroup counter) or the server's own timer: nothing
a program writes is a status. stdout is what an IO test compares; stderr is feedback only.

The program file (a memfd) is what a program process reads: the compiled prelude (a benchmark's header, trusted
text: the worker compiles it, cached), the program compiled by the worker when it is small and compiled there, and
the program's text. Compiling is C code, out of any timer's reach in the process that compiles, and its cost is
not bounded by the program's size (1.2 KB of nested ``try: return / finally:`` takes CPython 2.2 s and 500 MB,
exponential in the nesting), so the worker compiles a program of at most `WORKER_COMPILES` bytes only under its
watchdog, on the first case's clock (the watchdog ends the worker at that limit plus 0.5 s: the job is a
`timeout`); a larger program, or one the worker could not compile, is compiled by its program process after the
prelude ran, on its own clock — a prelude may take the program over first (lcb_runner's stdin wrapper compiles
the program inside a function, where a top-level ``return`` is legal). A program that does not compile there: the
program process answers the first request with ``S`` (its SyntaxError text; assert tests) or exits with
`SYNTAX_EXIT` after writing it to stderr (IO tests), before running anything of the program. The server passes the
file on unread, so nothing of one job's program is in the memory the next job's program process is forked from:

    b"M" + len (4 bytes) + marshal(prelude code or None) + len + marshal(program code or None) + the program's text
"""

from __future__ import annotations

import marshal
import struct
import traceback
import warnings

ASSERT = struct.Struct("<cd")  # b"A", CPU seconds
FINISH = b"F"
FINISHED = struct.Struct("<ci?d")  # b"F", wait status, memory refused, RSS MB
IO = struct.Struct("<cd")  # b"I", timeout; the input follows
# b"R", timed out, wait status, memory refused, RSS MB, len(stdout), len(stderr)
RAN = struct.Struct("<c?i?dII")

FILENAME = "solution.py"  # the program's name in tracebacks and feedback
PRELUDE = "<prelude>"  # a benchmark's header, run in the program's module before the program
MAX_DETAIL = 2000  # characters of an error text kept (feedback.py cuts further)
WORKER_COMPILES = 16 << 10  # programs this small are compiled by the worker, under its watchdog (above)
SYNTAX_EXIT = 0x5E  # an IO program process's exit status when its program does not compile


def compile_program(program: str, filename: str = FILENAME):
    """(code, None) or (None, the error text). Compiling executes nothing; no `__future__` flag of ours leaks in, and
    the warnings a program draws at compile time (``x is 1``) are not printed on our stderr."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(program, filename, "exec", dont_inherit=True), None
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        return None, "".join(traceback.format_exception_only(type(e), e)).strip()
    except UnicodeError as e:  # lone surrogates
        return None, f"SyntaxError: the program is not valid text ({type(e).__name__}: {e})"[:MAX_DETAIL]
    except (MemoryError, RecursionError) as e:
        return None, f"{type(e).__name__}: the program is too large or too deeply nested to compile"


def pack(prelude_code, program: str, code=None) -> bytes:
    """The program file (the worker's side): the compiled prelude, the program compiled (or None: the program
    process compiles it) and the program's text."""
    parts = [marshal.dumps(prelude_code), marshal.dumps(code)]
    head = b"".join(len(p).to_bytes(4, "little") + p for p in parts)
    return b"M" + head + program.encode("utf-8", "surrogatepass")


def unpack(data: bytes):
    """(prelude code or None, program code or None, the program's text): the program process's side, which
    compiles the program, after the prelude, when the worker did not."""
    at, parts = 1, []
    for _ in range(2):
        n = int.from_bytes(data[at : at + 4], "little")
        parts.append(marshal.loads(data[at + 4 : at + 4 + n]))
        at += 4 + n
    return parts[0], parts[1], data[at:].decode("utf-8", "surrogatepass")
