"""Freed memory given back to the system: with `release_large_blocks`, blocks of a megabyte freed
after glibc raised its mapping threshold leave the process at once (each case in a fresh process,
since the setting is process-wide)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's allocator on Linux"
)

RETAINED_MB = """
import sys
import numpy as np
from knowledge_mcp.sources.search.dense.runtime.heap import release_large_blocks

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

if sys.argv[1] == "release":
    assert release_large_blocks()
big = np.ones(16 << 17)  # 16 MB, mapped on its own; freeing it raises glibc's threshold past it
del big
before = rss_mb()
kept, blocks = [], []
for _ in range(40):  # 40 blocks of 1 MB (a model run's tensors), each followed by a small one kept
    blocks.append(np.ones(1 << 17))
    kept.append(np.ones(64))
del blocks
print(rss_mb() - before)
"""


def retained_mb(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", RETAINED_MB, mode], capture_output=True, text=True, check=True, timeout=60
    )
    return float(done.stdout)


def test_freed_large_blocks_leave_the_process_once_released() -> None:
    assert retained_mb("release") < 5


def test_without_the_release_the_same_blocks_stay_in_the_process() -> None:
    # What the release changes: glibc keeps the freed megabytes in its heap.
    assert retained_mb("default") > 20
