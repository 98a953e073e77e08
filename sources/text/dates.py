"""Timestamps: everything stored is ISO 8601 with a timezone."""

from __future__ import annotations

import datetime as dt
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any


def iso(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat(timespec="seconds")


def file_mtime(path: Path) -> str:
    return iso(dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC))


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
