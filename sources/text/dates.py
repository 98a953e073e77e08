"""Timestamps: everything stored is ISO 8601 with a timezone."""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any


def iso(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="seconds")


OPENED: ContextVar[tuple[Path, float] | None] = ContextVar("opened", default=None)
"""The file being parsed and its modification time, from the descriptor it was read from."""


class _Opened:
    """`opened_file`'s context (a class: a generator's context costs more, once per file)."""

    def __init__(self, path: Path, mtime: float) -> None:
        self.opened = (path, mtime)
        self.token: Token[tuple[Path, float] | None] | None = None

    def __enter__(self) -> None:
        self.token = OPENED.set(self.opened)

    def __exit__(self, *_: object) -> None:
        if self.token is not None:
            OPENED.reset(self.token)


def opened_file(path: Path, mtime: float) -> AbstractContextManager[None]:
    """While parsing `path`, its mtime is the one of the file that was read (`file_mtime` does
    not look the name up again: a link swapped in meanwhile is never asked)."""
    return _Opened(path, mtime)


def file_mtime(path: Path) -> str:
    opened = OPENED.get()
    mtime = (
        opened[1] if opened is not None and (opened[0] is path or opened[0] == path) else path.stat().st_mtime
    )
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
