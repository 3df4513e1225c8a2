"""The reused test process: job after job from its test worker, each run by `harness.run_cases`.

Loaded by the test worker (`worker.py`) by path, like `harness.py`; runs only in the test process the worker
forks (which never runs program code). Each job comes over the process's own socket: the channel to that job's
program process and the verdict pipe as file descriptors, then the test text as JSON and its code, compiled
by the worker, as `marshal` data (both trusted: neither process ever runs program code).
"""

from __future__ import annotations

import json
import marshal
import os
import resource
import socket
import struct
import sys

harness = None  # set by the worker that loads this file


def serve_tests(ctl) -> None:
    """The reused test process: for each job from the worker (its channel and verdict pipe as fds, then the
    test text), run its cases (`run_cases`) with a CPU limit of its own, close both, forget the program."""
    while True:
        try:
            head, fds, _, _ = socket.recv_fds(ctl, 8, 2)
        except OSError:
            return
        if len(head) < 8 or len(fds) != 2:
            return
        n_text, n_code = struct.unpack("<II", head)
        data = bytearray()
        while len(data) < n_text + n_code:
            chunk = ctl.recv(min(n_text + n_code - len(data), 1 << 20))
            if not chunk:
                return
            data += chunk
        job = json.loads(bytes(data[:n_text]).decode("utf-8", "surrogatepass"))
        setup_code, codes = marshal.loads(data[n_text:])  # compiled by the worker (never by program code)
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(used.ru_utime + used.ru_stime + job["cpu"]) + 2
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        chan, fd = fds
        try:
            harness.run_cases(chan, fd, setup_code, job["setup"], list(zip(codes, job["cases"])))
        finally:
            os.close(chan)
            os.close(fd)
            sys.modules.pop(harness.PROGRAM_MODULE, None)
