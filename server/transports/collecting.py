"""The cyclic garbage collector while the process does its one job (serving, importing).

A search page or an import batch allocates thousands of objects that reference counting frees;
at Python's default threshold (700 allocations) the collector walks the youngest generation
several times inside each such call, and each full collection walks everything the start-up
loaded (modules, classes, pydantic models), which lives until the process ends
(docs/performance.md).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_OBJECTS = 10_000
"""Allocations between two collections of the youngest generation (Python's default: 700)."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """What exists now frozen out of the collector's walks, and the youngest generation collected
    every `YOUNG_OBJECTS` allocations; the threshold and the freeze undone on leaving."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
