"""SillyTavern chat files (`.jsonl`): a metadata line, then one message per line.

The metadata line carries `user_name`, `character_name`, `create_date` and `chat_metadata`.
A message line has `name`, `is_user`, `is_system`, `send_date`, `mes`, and the alternatives
generated for it in `swipes` (`swipe_id` is the one chosen). `mes` is the chosen swipe; the
others are not indexed. `send_date` is a humanized local time ("June 1, 2025 2:24pm"), an
ISO string or epoch milliseconds, depending on the SillyTavern version; a time without a zone
is taken as UTC. The chat's title is its file name, as SillyTavern shows it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from ..text import dates
from .parsing import Conversation, Message

SEND_DATE_FORMATS = (
    "%B %d, %Y %I:%M%p",
    "%B %d, %Y %I:%M %p",
    "%b %d, %Y %I:%M%p",
    "%b %d, %Y %I:%M %p",
    "%Y-%m-%d@%Hh%Mm%Ss",
    "%Y-%m-%d @%Hh %Mm %Ss %fms",
)


def is_sillytavern(first: dict[str, Any]) -> bool:
    return bool({"character_name", "chat_metadata"} & first.keys()) or ("mes" in first and "is_user" in first)


def parse_send_date(value: Any) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        for fmt in SEND_DATE_FORMATS:
            try:
                return dates.iso(dt.datetime.strptime(text, fmt))
            except ValueError:
                continue
    return dates.parse_date(value)


def json_lines(raw: bytes) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(raw.decode("utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"line {number}: expected a JSON object")
        rows.append(row)
    return rows


def sillytavern_conversation(rows: list[dict[str, Any]], path: Path) -> Conversation:
    header = rows[0] if rows and "mes" not in rows[0] else {}
    lines = rows[1:] if header else rows
    messages = []
    for index, row in enumerate(lines):
        role = "user" if row.get("is_user") else "system" if row.get("is_system") else "assistant"
        messages.append(
            Message(
                role=role,
                text=str(row.get("mes") or ""),
                sender=str(row.get("name") or "") or None,
                timestamp=parse_send_date(row.get("send_date")),
                message_id=str(index),
            )
        )
    character = header.get("character_name") or next(
        (m.sender for m in messages if m.role == "assistant" and m.sender), None
    )
    meta: dict[str, Any] = {"format": "sillytavern"}
    if character:
        meta["character_name"] = str(character)
    if header.get("user_name"):
        meta["user_name"] = str(header["user_name"])
    return Conversation(
        key="",
        title=path.stem,
        messages=messages,
        created_at=parse_send_date(header.get("create_date")),
        meta=meta,
    )
