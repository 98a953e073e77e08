"""Email headers as text: 8-bit bytes, RFC 2047 encoded words and RFC 6532 UTF-8 all decoded.

The stdlib parser keeps a header's 8-bit bytes as surrogate escapes: `str()` of the header shows
UTF-8 ones right but turns any other charset into U+FFFD, and an address's display name keeps
the surrogates. So a header is read raw, its 8-bit bytes decoded (UTF-8, else the charset the
message declares, else Windows-1252), and only then parsed by the header registry.
"""

from __future__ import annotations

import re
from email import policy
from email.message import Message

_MSG_ID = re.compile(r"<[^<>\s]+>")
_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|wg|sv|vs|tr)(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_HEADER_ERRORS = (ValueError, LookupError, TypeError, AttributeError, IndexError)


def decode_8bit(value: str, charset: str | None = None) -> str:
    """A raw header value with its surrogate-escaped 8-bit bytes decoded, and no surrogates left."""
    if not _SURROGATES.search(value):
        return value
    data = value.encode("utf-8", "surrogateescape")
    for codec in ["utf-8"] + ([charset] if charset else []):
        try:
            return data.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
    mostly_utf8 = data.decode("utf-8", "replace")
    if mostly_utf8.count("\ufffd") * 4 <= sum(ch > "\x7f" for ch in mostly_utf8):
        return mostly_utf8  # UTF-8 with a stray byte
    return data.decode("cp1252", "replace")


def scrub(text: str) -> str:
    """Text with any lone surrogate replaced (what SQLite and UTF-8 cannot store)."""
    return _SURROGATES.sub("\ufffd", text) if _SURROGATES.search(text) else text


def declared_charset(msg: Message) -> str | None:
    """The charset the message declares (its own, else its first text part's), for 8-bit headers."""
    for part in msg.walk():
        charset = part.get_content_charset()
        if charset:
            return charset
    return None


def raw_header(msg: Message, name: str) -> str | None:
    """The first `name` header as raw text with its 8-bit bytes decoded; None when absent."""
    wanted = name.lower()
    for key, value in msg.raw_items():  # type: ignore[attr-defined]
        if key.lower() == wanted and isinstance(value, str):
            return decode_8bit(value, declared_charset(msg))
    return None


def _parsed(msg: Message, name: str) -> object | None:
    value = raw_header(msg, name)
    if value is None:
        return None
    try:
        parsed: object = policy.default.header_factory(name, value)  # type: ignore[no-untyped-call]
        return parsed
    except _HEADER_ERRORS:
        return value


def header(msg: Message, name: str) -> str:
    """A header's decoded text ("" when absent or unreadable), encoded words decoded."""
    try:
        value = _parsed(msg, name)
    except _HEADER_ERRORS:
        return ""
    return scrub(" ".join(str(value).split())) if value is not None else ""


def addresses(msg: Message, name: str) -> list[str]:
    """Display forms (`Dana Whitfield <dana@example.org>`) of an address header."""
    try:
        found = getattr(_parsed(msg, name), "addresses", None)
        if found:
            return [scrub(str(a)) for a in found]
    except _HEADER_ERRORS:
        pass
    return [part.strip() for part in header(msg, name).split(",") if part.strip()]


def message_ids(msg: Message, name: str) -> list[str]:
    """The `<id>`s a Message-ID, In-Reply-To or References header names, in order."""
    return [str(found) for found in _MSG_ID.findall(header(msg, name))]


def message_id(msg: Message) -> str | None:
    """The message's own id: its first `<id>`, else the header's text; None when it has none."""
    own = message_ids(msg, "Message-ID")
    return own[0] if own else (header(msg, "Message-ID") or None)


def normalized_subject(subject: str) -> str:
    """The subject without Re:/Fwd:/AW: prefixes and with collapsed whitespace."""
    return " ".join(_REPLY_PREFIX.sub("", subject).split())


def thread_id(msg: Message, subject: str) -> str:
    """The thread's root: the first id of References, else In-Reply-To, else the message's own
    Message-ID; the normalized subject only when the message names no id at all."""
    for name in ("References", "In-Reply-To", "Message-ID"):
        ids = message_ids(msg, name)
        if ids:
            return ids[0]
    return normalized_subject(subject)
