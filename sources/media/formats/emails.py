"""Email: `.eml` files (one message) and `.mbox` files (many), with the stdlib email parser.

The indexed body is the author's own text: the text/plain part (else the HTML part as text),
without quoted replies (`>` lines and the "On … wrote:" line) and without the signature
(after a `-- ` line). Attachments are listed, never indexed.
"""

from __future__ import annotations

import io
import re
from email import policy
from email.errors import MissingHeaderBodySeparatorDefect
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path
from typing import Any

from ...storage.damage.unreadable import why_unreadable
from ...storage.items import ParsedFile, ParsedItem, PartProblem
from ...text import dates
from .headers import addresses, header, message_id, scrub, thread_id
from .htmltext import html_to_text, normalize_text
from .summary import lead_text, summarize

_PARSER = BytesParser(policy=policy.default)
_WROTE = re.compile(r"\bwrote:\s*$", re.IGNORECASE)
_ON = re.compile(r"^\s*On\s", re.IGNORECASE)
_FORWARD_MARKERS = ("-----original message-----", "________________________________")


class NotAnEmailError(ValueError):
    """The bytes have no email headers."""


def parse_eml(path: Path, raw: bytes) -> list[ParsedItem]:
    msg = _PARSER.parsebytes(raw)
    if not is_email(msg):
        raise NotAnEmailError("not an email: no From, Subject or Date header (missing header/body separator)")
    return [message_item(msg, path, key="")]


def parse_mbox(path: Path, raw: bytes) -> ParsedFile:
    """Every message of the archive, each read on its own: a message that cannot be read is a
    failed part, the rest import; a second copy of a Message-ID is left out with a notice."""
    parsed = ParsedFile()
    seen: set[str] = set()
    found = 0
    for index, data in enumerate(_mbox_messages(raw)):
        part = f"message {index + 1}"
        try:
            msg = _PARSER.parsebytes(data)
            if not is_email(msg):  # e.g. a body line "From …" an unescaped archive split off
                parsed.notices.append(PartProblem(part, "no email headers: left out"))
                continue
            found += 1
            item = message_item(msg, path, key=f"#{index}")
        except Exception as exc:  # one bad message is reported; the rest of the archive goes on
            found += 1
            parsed.failures.append(PartProblem(part, scrub(why_unreadable(exc))))
            continue
        if item.origin and item.origin in seen:
            parsed.notices.append(PartProblem(part, f"a second copy of {item.meta['message_id']} left out"))
            continue
        seen.add(item.origin or "")
        parsed.append(item)
    if not found:
        raise NotAnEmailError("not an mbox file: no messages with email headers found")
    return parsed


def _mbox_messages(raw: bytes) -> list[bytes]:
    """The messages of an mbox archive, split as `mailbox.mbox` splits them (a line starting
    `From ` begins one; the blank line before it ends the last), from the bytes already read:
    the file is never opened again by its name."""
    starts: list[int] = []
    stops: list[int] = []
    last_was_empty = False
    at = 0
    for line in io.BytesIO(raw):
        if line.startswith(b"From "):
            if len(stops) < len(starts):
                stops.append(at - 1 if last_was_empty else at)
            starts.append(at)
            last_was_empty = False
        else:
            last_was_empty = line == b"\n"
        at += len(line)
    if len(stops) < len(starts):
        stops.append(at - 1 if last_was_empty else at)
    return [raw[_after_line(raw, start, stop) : stop] for start, stop in zip(starts, stops, strict=True)]


def _after_line(raw: bytes, start: int, stop: int) -> int:
    """Where the line at `start` (the `From ` line, left out of the message) ends."""
    end = raw.find(b"\n", start, stop)
    return stop if end < 0 else end + 1


def is_email(msg: Message) -> bool:
    """Has a From, Subject or Date header; or other headers that parsed cleanly."""
    if any(header(msg, name) for name in ("From", "Subject", "Date")):
        return True
    if any(isinstance(d, MissingHeaderBodySeparatorDefect) for d in msg.defects):
        return False
    return bool(msg.keys())


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
    return strip_replies(scrub(text)), part


def _message_size(msg: Message) -> int:
    """Bytes of an attached message; a damaged one (bytes its charset cannot hold) measured as text."""
    try:
        return len(msg.as_bytes())
    except (UnicodeError, LookupError, ValueError):
        return len(msg.as_string().encode("utf-8", "replace"))


def attachments(part: Message, body: Message | None) -> list[dict[str, Any]]:
    """Every attached file: {filename, content_type, size_bytes}; nested messages are not opened."""
    ctype = part.get_content_type()
    if part is not body and (
        part.get_content_disposition() == "attachment" or part.get_filename() or ctype == "message/rfc822"
    ):
        if ctype == "message/rfc822" and part.is_multipart():
            size = sum(_message_size(m) for m in part.get_payload() if isinstance(m, Message))
        else:
            payload = part.get_payload(decode=True)
            size = len(payload) if isinstance(payload, bytes) else 0
        name = scrub(part.get_filename() or "attachment")
        return [{"filename": name, "content_type": ctype, "size_bytes": size}]
    found: list[dict[str, Any]] = []
    if part.is_multipart():
        for sub in part.get_payload():  # type: ignore[union-attr]
            if isinstance(sub, Message):
                found += attachments(sub, body)
    return found


def message_item(msg: EmailMessage, path: Path, key: str) -> ParsedItem:
    """One message as an item. One with a Message-ID is the same item whichever file holds it
    (its `origin` is `message-id:<id>`); one without is its file's (and place in it)."""
    subject = header(msg, "Subject")
    body, part = body_text(msg)
    date = dates.parse_date(header(msg, "Date"))
    stamp = date or dates.file_mtime(path)
    own_id = message_id(msg)
    meta: dict[str, Any] = {
        "media_type": "email",
        "from": next(iter(addresses(msg, "From")), None),
        "to": addresses(msg, "To"),
        "cc": addresses(msg, "Cc"),
        "date": date,
        "subject": subject,
        "message_id": own_id,
        "thread_id": thread_id(msg, subject),
        "attachments": attachments(msg, part),
        "summary": summarize(lead_text(body, {subject})),
    }
    if own_id is None:
        meta["file_name"] = path.name
    return ParsedItem(
        key=key if own_id is None else own_id,
        title=subject or "(no subject)",
        content=body or subject,
        created_at=stamp,
        last_modified=stamp,
        meta=meta,
        origin=f"message-id:{own_id}" if own_id else None,
    )
