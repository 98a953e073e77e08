"""Timestamps: everything stored is ISO 8601 with a timezone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any


def iso(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="seconds")


OPENED: ContextVar[tuple[Path, float] | None] = ContextVar("opened", default=None)
"""The file being parsed and its modification time, from the descriptor it was read from."""


@contextmanager
def opened_file(path: Path, mtime: float) -> Iterator[None]:
    """While parsing `path`, its mtime is the one of the file that was read (`file_mtime` does
    not look the name up again: a link swapped in meanwhile is never asked)."""
    token = OPENED.set((path, mtime))
    try:
        yield
    finally:
        OPENED.reset(token)


def file_mtime(path: Path) -> str:
    opened = OPENED.get()
    mtime = opened[1] if opened is not None and opened[0] == path else path.stat().st_mtime
    return iso(dt.datetime.fromtimestamp(mtime, tz=dt.UTC))


def now() -> str:
    return iso(dt.datetime.now(tz=dt.UTC))


def parse_date(value: Any) -> str | None:
    """ISO 8601 with timezone from a date, datetime, epoch number, ISO or RFC 2822 string."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, dt.date):
        return iso(dt.datetime(value.year, value.month, value.day))
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return iso(dt.datetime.fromtimestamp(seconds, tz=dt.UTC))
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    try:
        return iso(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    try:
        return iso(parsedate_to_datetime(text))
    except (TypeError, ValueError, IndexError):
        return None
