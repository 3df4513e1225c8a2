"""What crosses between a test and its program: messages of plain data on a file descriptor.

Loaded by path (stdlib only) by the test worker and by the program processes; the one module of the format they
load, which loads its parts: `wire_format.py` (the tags, the bounds, the errors: the format's description is
there), `wire_encode.py` (values -> bytes) and `wire_decode.py` (bytes -> values, under the bounds), with
`wire_libraries.py` (numpy's and pandas' values), and `values.py` (the frozen values of ours a namedtuple or a match becomes). This module frames
messages: one message is a 4-byte length, a kind byte and one value, written whole (`send`) and read whole
(`Reader`), and it names the parts' public pieces for its readers (``wire.encode``, ``wire.Decoder``, ...).
"""

from __future__ import annotations

import builtins
import importlib.util
import os


def _sibling(name: str, **names):
    """A module of ours next to this file, loaded by path (this file is loaded by path too) with `names` set
    before it runs, and a snapshot of the builtins of its own (a program patching builtins cannot reach it)."""
    spec = importlib.util.spec_from_file_location(
        f"_murphy_{name}", os.path.join(os.path.dirname(__file__), f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = dict(vars(builtins))
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


values = _sibling("values")
wire_format = _sibling("wire_format")
wire_libraries = _sibling("wire_libraries", wire_format=wire_format)
wire_encode = _sibling("wire_encode", wire_format=wire_format, values=values, libraries=wire_libraries)
wire_decode = _sibling("wire_decode", wire_format=wire_format, values=values, libraries=wire_libraries)
NamedTupleValue, ProgramModule, MatchValue = values.NamedTupleValue, values.ProgramModule, values.MatchValue
Fault, Refused, NotPlain = wire_format.Fault, wire_format.Refused, wire_format.NotPlain
MAX_MESSAGE, MAX_ITEMS, MAX_DEPTH = wire_format.MAX_MESSAGE, wire_format.MAX_ITEMS, wire_format.MAX_DEPTH
BUILTINS, _U32, _len = wire_format.BUILTINS, wire_format.U32, len
PROTOCOLS, BINARY_OPS, MAX_CLASSES = wire_format.PROTOCOLS, wire_format.BINARY_OPS, wire_format.MAX_CLASSES
Encoder, encode, exception_fields = wire_encode.Encoder, wire_encode.encode, wire_encode.exception_fields
Decoder = wire_decode.Decoder


def send(fd: int, kind: bytes, payload: bytes) -> None:
    """One message: its length, its kind, its value (written whole, however many writes it takes)."""
    data = _U32.pack(_len(payload) + 1) + kind + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Reader:
    """Reads whole messages from a file descriptor (one read brings most messages whole)."""

    def __init__(self, fd: int):
        self.fd, self.buf = fd, bytearray()

    def _fill(self, want: int) -> None:
        while _len(self.buf) < want:
            chunk = os.read(self.fd, max(1 << 16, want - _len(self.buf)))
            if not chunk:
                raise Fault("lost", "the other side of the channel closed it")
            self.buf += chunk

    def message(self) -> tuple[bytes, bytes]:
        """(kind, the value's bytes)."""
        if _len(self.buf) < 4:
            self._fill(4)
        n = _U32.unpack_from(self.buf)[0]
        if n > MAX_MESSAGE or n == 0:
            raise Refused(f"a message of {n:,} bytes (the limit is {MAX_MESSAGE:,})")
        if _len(self.buf) < 4 + n:
            self._fill(4 + n)
        kind, payload = bytes(self.buf[4:5]), bytes(self.buf[5 : 4 + n])
        del self.buf[: 4 + n]
        return kind, payload
