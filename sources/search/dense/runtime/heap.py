"""Giving freed memory back to the system (`give_back`).

glibc's allocator keeps what a process freed for its next allocations: after a model session is
dropped (or built: onnxruntime's graph optimisation allocates and frees a few hundred MB) the
process would go on holding it. `malloc_trim(0)` returns the free pages. Other C libraries
(musl, macOS, Windows) have no such call or do not need it: there this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any


@functools.cache
def _trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError:
        return None


def give_back() -> bool:
    """Return the allocator's free memory to the system; False where that is not possible."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
