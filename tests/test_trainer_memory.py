"""trainer/memory.py: freed heap memory goes back to the system (glibc), and the peak is read in GB."""

import sys

import pytest

from murphy_lab.trainer import memory


def rss_gb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 / 1e9 for line in f if line.startswith(field))


@pytest.mark.skipif(memory._trim() is None, reason="glibc's malloc_trim only")
def test_release_returns_the_pages_of_freed_pieces_inside_the_heap():
    """The pattern of a long CPU run: many heap pieces (each under glibc's mmap threshold), every other one freed:
    the freed ones sit between live ones, so the heap cannot shrink from its top and the memory stays resident."""
    blocks = [bytearray(100_000) for _ in range(4000)]  # ~400 MB in 100 kB pieces
    for b in blocks:
        b[::4096] = b"\x01" * len(b[::4096])  # touch every page
    del blocks[::2]  # ~200 MB freed, interleaved with live pieces
    before = rss_gb()
    assert memory.release() is True
    after = rss_gb()
    assert before - after > 0.1, (before, after)  # most of the 200 MB back
    assert all(b[0] == 1 for b in blocks)  # what was live is untouched


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_peak_rss_is_the_kernels_high_water_mark_in_gb():
    assert abs(memory.peak_rss_gb() - rss_gb("VmHWM")) < 0.05
