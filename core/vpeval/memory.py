"""Keep freed memory in the process for reuse (glibc's malloc), instead of handing it back to the kernel.

glibc gives large blocks back to the kernel when they are freed (above its mmap threshold, and the top
of the heap beyond its trim threshold). A batched CPU forward allocates tensors of tens of MB for every
batch, so each batch then faults its pages in again and the kernel zeroes them: on the asv plugin's
packed ECAPA that was about 80 MB of page faults per call and 10-15 % of its CPU time
(benchmarks/batching.py, BENCHMARKS.md "Batched embedding"). PyTorch's CPU tuning guide replaces the
allocator (jemalloc, tcmalloc) for the same reason; raising glibc's two thresholds does it in place.

The process keeps up to its peak use mapped (its peak RSS does not change) and returns the rest above
TRIM_BYTES. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt's parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
MMAP_BYTES = 32 * 1024 * 1024  # glibc's largest allowed mmap threshold on 64-bit systems
TRIM_BYTES = 1024 * 1024 * 1024
TOP_PAD_BYTES = 64 * 1024 * 1024

_applied: bool | None = None


def reuse_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds once per process (forked workers inherit them).

    True where they are set (Linux with glibc), False elsewhere or where glibc refused a value.
    """
    global _applied
    if _applied is None:
        _applied = _set_thresholds()
    return _applied


def _set_thresholds() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = ((_M_MMAP_THRESHOLD, MMAP_BYTES), (_M_TRIM_THRESHOLD, TRIM_BYTES), (_M_TOP_PAD, TOP_PAD_BYTES))
    return all(mallopt(parameter, value) == 1 for parameter, value in settings)
