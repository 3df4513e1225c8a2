"""The pool and its test workers: one message is a 4-byte little-endian length and JSON (the pool's jobs, a
worker's replies). Imported by `pool.py`; loaded by path by `worker.py` (stdlib only)."""

from __future__ import annotations

import json
import os
import struct

HEAD = struct.Struct("<I")


def encode(obj) -> bytes:
    """One message: its length, then its JSON (text a program produced may hold lone surrogates: kept)."""
    data = json.dumps(obj).encode("utf-8", "surrogatepass")
    return HEAD.pack(len(data)) + data


def send(stream, obj) -> None:
    stream.write(encode(obj))
    stream.flush()


def read_exact(fd: int, n: int) -> bytes:
    """Exactly n bytes from fd (unbuffered), b"" at EOF."""
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return b""
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv(fd: int) -> dict | None:
    """The next message from fd (blocking), None at EOF."""
    head = read_exact(fd, 4)
    if not head:
        return None
    (n,) = HEAD.unpack(head)
    return json.loads(read_exact(fd, n))


def take(buf: bytearray) -> dict | None:
    """The first whole message in `buf`, removed from it; None while it is incomplete."""
    if len(buf) < 4:
        return None
    (n,) = HEAD.unpack_from(buf)
    if len(buf) < 4 + n:
        return None
    msg = json.loads(bytes(buf[4 : 4 + n]))
    del buf[: 4 + n]
    return msg
