"""Email: `.eml` files (one message) and `.mbox` files (many), with the stdlib email parser.

The indexed body is the author's own text: the text/plain part (else the HTML part as text),
without quoted replies (`>` lines and the "On … wrote:" line) and without the signature
(after a `-- ` line). Attachments are listed, never indexed.
"""

from __future__ import annotations

import mailbox
import re
from email import policy
from email.errors import MissingHeaderBodySeparatorDefect
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from ...storage.items import ParsedItem
from ...text import dates
from .htmltext import html_to_text, normalize_text
from .summary import lead_text, summarize

_PARSER = BytesParser(policy=policy.default)
_MSG_ID = re.compile(r"<[^<>\s]+>")
_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|wg|sv|vs|tr)(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_WROTE = re.compile(r"\bwrote:\s*$", re.IGNORECASE)
_ON = re.compile(r"^\s*On\s", re.IGNORECASE)
_FORWARD_MARKERS = ("-----original message-----", "________________________________")
_HEADER_ERRORS = (ValueError, LookupError, TypeError, AttributeError)


class NotAnEmailError(ValueError):
    """The bytes have no email headers."""


def parse_eml(path: Path, raw: bytes) -> list[ParsedItem]:
    msg = _PARSER.parsebytes(raw)
    if not is_email(msg):
        raise NotAnEmailError("not an email: no From, Subject or Date header (missing header/body separator)")
    return [message_item(msg, path, key="")]


def parse_mbox(path: Path, raw: bytes) -> list[ParsedItem]:
    box = mailbox.mbox(path, create=False)
    try:
        messages = [_PARSER.parsebytes(box.get_bytes(key)) for key in box.iterkeys()]
    finally:
        box.close()
    items: list[ParsedItem] = []
    keys: set[str] = set()
    for index, msg in enumerate(messages):
        if not is_email(msg):
            continue
        key = header(msg, "Message-ID") or f"#{index}"
        if key in keys:
            key = f"{key}#{index}"
        keys.add(key)
        items.append(message_item(msg, path, key=key))
    if not items:
        raise NotAnEmailError("not an mbox file: no messages with email headers found")
    return items


def is_email(msg: Message) -> bool:
    """Has a From, Subject or Date header; or other headers that parsed cleanly."""
    if any(header(msg, name) for name in ("From", "Subject", "Date")):
        return True
    if any(isinstance(d, MissingHeaderBodySeparatorDefect) for d in msg.defects):
        return False
    return bool(msg.keys())


def header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
        return str(value).strip() if value is not None else ""
    except _HEADER_ERRORS:
        return ""


def addresses(msg: Message, name: str) -> list[str]:
    """Display forms (`Dana Whitfield <dana@example.org>`) of an address header."""
    try:
        value = msg.get(name)
        found = getattr(value, "addresses", None)
        if found:
            return [str(a) for a in found]
    except _HEADER_ERRORS:
        pass
    raw = header(msg, name)
    return [part.strip() for part in raw.split(",") if part.strip()]


def thread_id(msg: Message, subject: str) -> str:
    """First id of References, else In-Reply-To, else the subject without Re:/Fwd:."""
    for name in ("References", "In-Reply-To"):
        ids = _MSG_ID.findall(header(msg, name))
        if ids:
            return str(ids[0])
    own = _MSG_ID.findall(header(msg, "Message-ID"))
    normalized = " ".join(_REPLY_PREFIX.sub("", subject).split())
    return normalized or (own[0] if own else "")


def strip_replies(text: str) -> str:
    """The author's own text: no quoted lines, no "On … wrote:" line, no signature."""
    kept: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line in ("-- ", "--") or line.strip().lower() in _FORWARD_MARKERS:
            break
        if line.lstrip().startswith(">"):
            continue
        if _WROTE.search(line):
            if _ON.match(line):
                continue
            if kept and _ON.match(kept[-1]):  # "On …" wrapped onto two lines
                kept.pop()
                continue
        kept.append(line)
    return normalize_text("\n".join(kept))


def _content(part: Message) -> str:
    try:
        return str(part.get_content())  # type: ignore[attr-defined]
    except (LookupError, ValueError, AttributeError):
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""


def body_text(msg: EmailMessage) -> tuple[str, Message | None]:
    """The indexed body (plain text preferred, else HTML as text) and the part it came from."""
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return "", None
    text = _content(part)
    if part.get_content_type() == "text/html":
        text = html_to_text(text)
    return strip_replies(text), part


def attachments(part: Message, body: Message | None) -> list[dict[str, Any]]:
    """Every attached file: {filename, content_type, size_bytes}; nested messages are not opened."""
    ctype = part.get_content_type()
    if part is not body and (
        part.get_content_disposition() == "attachment" or part.get_filename() or ctype == "message/rfc822"
    ):
        if ctype == "message/rfc822" and part.is_multipart():
            size = sum(len(m.as_bytes()) for m in part.get_payload() if isinstance(m, Message))
        else:
            payload = part.get_payload(decode=True)
            size = len(payload) if isinstance(payload, bytes) else 0
        return [{"filename": part.get_filename() or "attachment", "content_type": ctype, "size_bytes": size}]
    found: list[dict[str, Any]] = []
    if part.is_multipart():
        for sub in part.get_payload():  # type: ignore[union-attr]
            if isinstance(sub, Message):
                found += attachments(sub, body)
    return found


def message_item(msg: EmailMessage, path: Path, key: str) -> ParsedItem:
    subject = header(msg, "Subject")
    body, part = body_text(msg)
    files = attachments(msg, part)
    date = dates.parse_date(header(msg, "Date"))
    stamp = date or dates.file_mtime(path)
    message_ids = _MSG_ID.findall(header(msg, "Message-ID"))
    meta: dict[str, Any] = {
        "media_type": "email",
        "from": next(iter(addresses(msg, "From")), None),
        "to": addresses(msg, "To"),
        "cc": addresses(msg, "Cc"),
        "date": date,
        "subject": subject,
        "message_id": message_ids[0] if message_ids else (header(msg, "Message-ID") or None),
        "thread_id": thread_id(msg, subject),
        "attachments": files,
        "summary": summarize(lead_text(body, {subject})),
        "file_name": path.name,
    }
    return ParsedItem(
        key=key,
        title=subject or "(no subject)",
        content=body or subject,
        created_at=stamp,
        last_modified=stamp,
        meta=meta,
    )
