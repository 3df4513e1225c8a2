"""Freed memory back to the system between a CPU run's phases, and the process's peak resident memory.

A CPU run allocates its tensors with the C library's malloc. Decoding grows every layer's keys/values by one column
a step (a new, slightly larger tensor each time) and the loss passes allocate activations of every micro-batch's
shape; glibc keeps what they freed inside its heap, in pieces too small for the next, larger request, so the
resident memory of a long run climbs far above what it holds (the real-cpu run: 15-16 GB between steps for ~1.2 GB
of weights and optimizer state, and 24 GB, killed by the system, in its first evaluation: docs/real_model.md).
`release()` hands the pages of every free piece back (`malloc_trim(0)`, which since glibc 2.8 trims the whole heap,
not only its top); the trainer calls it after each round's rollouts, after each optimizer step and around each
held-out evaluation. It changes no number a run computes. Elsewhere (another C library, macOS, Windows) it does
nothing; a GPU's memory is the CUDA allocator's and is not touched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import resource
import sys


@functools.cache
def _trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None


def release() -> bool:
    """Return the pages of freed heap memory to the system (glibc); True when something was returned."""
    trim = _trim()
    return bool(trim(0)) if trim is not None else False


def peak_rss_gb() -> float:
    """This process's peak resident memory so far, in GB (10^9 bytes): Linux reports it in KiB, macOS in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak * (1 if sys.platform == "darwin" else 1024) / 1e9


__all__ = ["peak_rss_gb", "release"]
