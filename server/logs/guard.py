"""What an exception leaves in the log: where it was raised, never a value.

loguru's `diagnose` prints every frame's local variables under a traceback: a note's text, a
title, a query. An exception's own message can carry them too (an OSError names the path, which
holds a note's title; pydantic quotes the input; the SDK's wrappers repeat a resource's uri). So
before any sink sees a record, `scrub` replaces its exception by a trace made only of code
locations: each frame's file (shortened to its package path), line and function, then the
exception's type (with an OSError's errno), and the same for each cause. An operator still sees
where it failed and what kind of failure it was; the values stay out.

`guard_logs()` installs `scrub` as loguru's patcher (every record, every sink, the tests' sinks
too); the command line does it in `configure_logging`, `build_server` for embedded servers.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from loguru import logger

MAX_FRAMES = 12  # the innermost frames: where it failed, not the event loop that called it
MAX_CAUSES = 4
_CODE_ROOTS = sorted(
    {str(Path(p).resolve()) for p in sys.path if p} | {str(Path(__file__).resolve().parents[1])},
    key=len,
    reverse=True,
)  # where code is imported from, longest first: a frame's file is shown relative to its root


def _where(filename: str) -> str:
    """A frame's file as a code path (`mcp/server/runner.py`, `server/app.py`), never a data path."""
    for root in _CODE_ROOTS:
        if filename.startswith(root + "/") or filename.startswith(root + "\\"):
            return filename[len(root) + 1 :].replace("\\", "/")
    return "/".join(filename.replace("\\", "/").rsplit("/", 3)[-3:])


def _kind(value: BaseException) -> str:
    name = type(value).__qualname__
    module = type(value).__module__
    qualified = name if module in ("builtins", "__main__") else f"{module}.{name}"
    errno = getattr(value, "errno", None) if isinstance(value, OSError) else None
    return f"{qualified} (errno {errno})" if isinstance(errno, int) else qualified


def _frames(tb: TracebackType | None) -> list[str]:
    frames = traceback.extract_tb(tb)[-MAX_FRAMES:]
    return [f"  at {_where(f.filename)}:{f.lineno} in {f.name}" for f in frames]


def content_free_trace(value: BaseException | None, tb: TracebackType | None = None) -> str:
    """`value`'s trace without values: frames as file:line in function, then its type; its
    causes (`raise … from`, or raised while handling) likewise, innermost cause first."""
    if value is None:
        return ""
    chain: list[BaseException] = []
    current: BaseException | None = value
    while current is not None and len(chain) < MAX_CAUSES and current not in chain:
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    blocks = []
    for position, exc in enumerate(reversed(chain)):
        trace = tb if exc is value and tb is not None else exc.__traceback__
        heading = "raised" if position == 0 else "then raised"
        blocks.append("\n".join([f"{heading} {_kind(exc)} (message withheld)", *_frames(trace)]))
    return "\n".join(blocks)


def scrub(record: Any) -> None:
    """loguru patcher: a record's exception becomes its content-free trace, after the message."""
    exception = record["exception"]
    if exception is None:
        return
    record["exception"] = None
    trace = content_free_trace(exception.value, exception.traceback)
    if trace:
        record["message"] = f"{record['message']}\n{trace}"


def guard_logs() -> None:
    """Make every loguru record content-free (idempotent: the patcher is set, not added)."""
    logger.configure(patcher=scrub)
