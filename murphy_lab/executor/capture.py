"""What a program prints while it serves a pytest file: its sys.stdout and sys.stderr after a ``P`` request, as
pytest's capture makes them, sent to the test worker before each reply.

Loaded by the program server (`server.py`) by path, with `wire` set before it runs, for `program.py`.
"""

from __future__ import annotations

import errno
import io
import sys

wire = globals()["wire"]  # set by server.py before this file runs


class Printed:
    """The program's sys.stdout and sys.stderr after a ``P`` request, as pytest's capture makes them (UTF-8 text
    over bytes, so ``.buffer`` works); what each request printed is sent before its reply as ``P`` (out, err), at
    most `LIMIT` bytes a request (a write beyond it is an `OSError` of the program's)."""

    LIMIT = 8 << 20

    def __init__(self):
        self.streams = Capped(self), Capped(self)
        sys.stdout, sys.stderr = (
            io.TextIOWrapper(b, "utf-8", newline="", write_through=True) for b in self.streams
        )

    def send(self, fd: int) -> None:
        if any(b.tell() for b in self.streams):
            text = tuple(b.getvalue().decode("utf-8", "replace") for b in self.streams)
            for b in self.streams:
                b.seek(0)
                b.truncate()
            wire.send(fd, b"P", wire.encode(text))


class Capped(io.BytesIO):
    def __init__(self, printed: Printed):
        super().__init__()
        self.printed = printed

    def write(self, data) -> int:
        if sum(b.tell() for b in self.printed.streams) + len(data) > Printed.LIMIT:
            raise OSError(errno.EFBIG, f"more than {Printed.LIMIT:,} bytes of output in one call")
        return super().write(data)
