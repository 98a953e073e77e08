"""A short extractive summary: the first sentences of a text, at most 200 characters."""

from __future__ import annotations

import re

MAX_SUMMARY = 200
LOOK_AHEAD = 50  # a summary reads at most LOOK_AHEAD × limit characters (a 10 MB text: its start)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_WS = re.compile(r"\s+")


def summarize(text: str, limit: int = MAX_SUMMARY) -> str:
    """Whole leading sentences that fit in `limit`; else the first words and an ellipsis."""
    flat = _WS.sub(" ", text[: limit * LOOK_AHEAD]).strip()
    if len(flat) <= limit:
        return flat
    out = ""
    for sentence in _SENTENCE_END.split(flat):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > limit:
            break
        out = candidate
    if out:
        return out
    cut = flat.rfind(" ", 0, limit - 1)
    return flat[: cut if cut > limit // 2 else limit - 1].rstrip(" ,;:") + "…"


_MARKUP = re.compile(r"^\s{0,3}(#{1,6}\s+|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)|[*`]{1,3}")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def lead_text(text: str, skip: set[str] | frozenset[str] = frozenset()) -> str:
    """The prose at the start of a document: no headings, bylines or list markup."""
    kept = []
    for line in text[: MAX_SUMMARY * LOOK_AHEAD].split("\n"):
        plain = _MARKUP.sub("", _LINK.sub(r"\1", line[: MAX_SUMMARY * 4])).strip()
        if not plain or plain in skip or line.lstrip().startswith("#"):
            continue
        if len(plain) < 60 and not plain.endswith((".", "!", "?")):
            continue
        kept.append(plain)
        if sum(map(len, kept)) > MAX_SUMMARY * 2:
            break
    return " ".join(kept) or text[: MAX_SUMMARY * LOOK_AHEAD]
