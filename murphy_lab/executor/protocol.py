"""What the test worker hands its program server: the server's requests, and the program file.

Loaded by path by both (stdlib only). The server's requests are length-prefixed (4 bytes, little-endian); the
two of every job are fixed-size binary, because the server's own work between forks touches pages the last fork
still shares, each one a copy (no JSON on that path); the rare IO request is JSON:

    ASSERT: b"A" + CPU seconds (float64), with two fds: the channel, the program file
            -> no reply; the server forks a program process that serves the program's names on the channel
    FINISH: b"F" -> FINISHED, not length-prefixed: b"F", the program process's wait status, whether the memory
            cgroup refused memory, the server's RSS in MB
    {"op": "io", "input": ..., "timeout": ...}, with one fd: the program file -> JSON: status, stdout

The program file (a memfd) is what a program process reads: the program's text, and its code when the worker
compiled it. The worker writes it, the program process reads it; the server in between never does. Compiling
executes nothing, so the worker may compile a program without running any of it: for a program of at most
`WORKER_COMPILES` bytes it does (a compile in a warm process costs a fraction of one in a fresh fork, whose
compiler touches pages it then has to copy), and the program process only unmarshals the code. A larger program,
or one that does not compile, is compiled by its program process: a huge program's compile never runs in the
worker, and a syntax error reads the same either way.

    b"M" + len(code) (4 bytes, little-endian) + marshal(code) + text      compiled by the worker
    b"S" + text                                                           compiled by the program process
"""

from __future__ import annotations

import marshal
import struct
import traceback

ASSERT = struct.Struct("<cd")  # b"A", CPU seconds
FINISH = b"F"
FINISHED = struct.Struct("<ci?d")  # b"F", wait status, memory refused, RSS MB

FILENAME = "solution.py"  # the program's name in tracebacks and feedback
WORKER_COMPILES = 64 * 1024  # bytes of program text the worker compiles itself
MAX_DETAIL = 2000  # characters of a program-side error text kept (feedback.py truncates further)


def compile_program(program: str):
    """(code, None) or (None, the error text). Compiling executes nothing; no `__future__` flag of ours leaks in."""
    try:
        return compile(program, FILENAME, "exec", dont_inherit=True), None
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        return None, "".join(traceback.format_exception_only(type(e), e)).strip()
    except UnicodeError as e:  # lone surrogates
        return None, f"SyntaxError: the program is not valid text ({type(e).__name__}: {e})"[:MAX_DETAIL]
    except (MemoryError, RecursionError) as e:
        return None, f"{type(e).__name__}: the program is too large or too deeply nested to compile"


def pack(program: str) -> bytes:
    """The file for `program` (the worker's side)."""
    text = program.encode("utf-8", "surrogatepass")
    if len(text) <= WORKER_COMPILES:
        code, _ = compile_program(program)
        if code is not None:
            blob = marshal.dumps(code)
            return b"M" + len(blob).to_bytes(4, "little") + blob + text
    return b"S" + text


def unpack(data: bytes):
    """(code or None, the program's text, the compile error or None) (the program process's side)."""
    if data[:1] == b"M":
        n = int.from_bytes(data[1:5], "little")
        return marshal.loads(data[5 : 5 + n]), data[5 + n :].decode("utf-8", "surrogatepass"), None
    source = data[1:].decode("utf-8", "surrogatepass")
    code, error = compile_program(source)
    return code, source, error
