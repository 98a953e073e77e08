"""Giving freed memory back to the system (`give_back`, `release_large_blocks`).

glibc's allocator keeps what a process freed for its next allocations: after a model session is
dropped (or built: onnxruntime's graph optimisation allocates and frees a few hundred MB) the
process would go on holding it. `malloc_trim(0)` returns the free pages. A block of 128 KB or
more is mapped on its own and unmapped when freed, but glibc raises that threshold to the largest
such block freed (up to 32 MB): after the first model run, a run's tensors (a few MB each) come
from the heaps and stay there when freed, ~100 MB after an embedding batch and more at its peak
(`docs/performance.md`, "Memory of the server process"). `release_large_blocks` fixes the
threshold. Other C libraries (musl, macOS, Windows) have no such calls or do not need them:
there both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter (malloc.h)."""
LARGE_BLOCK = 128 * 1024
"""glibc's own starting threshold: blocks this large or larger are mapped on their own."""


@functools.cache
def _libc_call(name: str) -> Any:
    """glibc's function `name`, or None where the C library has none."""
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    try:
        return getattr(ctypes.CDLL(library), name, None)
    except OSError:
        return None


def give_back() -> bool:
    """Return the allocator's free memory to the system; False where that is not possible."""
    trim = _libc_call("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


def release_large_blocks() -> bool:
    """From now on every block of `LARGE_BLOCK` or more is given back to the system as soon as
    it is freed (glibc: the threshold is fixed instead of rising); False where that is not
    possible. Once per process is enough; calling again does no harm."""
    mallopt = _libc_call("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
