"""Transcripts: SubRip (`.srt`) and WebVTT (`.vtt`) cues, and their regeneration.

The indexed text is the cue text only (one cue a line): no timestamps, no NOTE/STYLE/REGION
blocks, no markup; a WebVTT voice tag `<v Ewan>` becomes the cue's `speaker`. The cues are
kept (start/end in seconds) so `media_transcript` can render text, SRT, WebVTT or JSON, and
chunks group consecutive cues.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from ...storage.items import ChunkSpan, ParsedItem
from ...text import dates
from ...text.decoding import decode_text
from .summary import summarize

CHUNK_CHARS = 2000  # about 500 tokens
OVERLAP_CHARS = 300  # about 15 %

_TIMING = re.compile(
    r"^\s*((?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})\s*-->\s*((?:\d+:)?\d{1,2}:\d{2}[.,]\d{1,3})(?:\s+.*)?$"
)
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]+)>")
_TAG = re.compile(r"</?[A-Za-z][^>]*>|<\d[\d:.]*>")
_BLOCK_SPLIT = re.compile(r"\n[ \t]*\n")
_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")


def seconds(stamp: str) -> float:
    parts = stamp.replace(",", ".").split(":")
    total = 0.0
    for part in parts:
        total = total * 60 + float(part)
    return round(total, 3)


def clean_cue(lines: list[str]) -> tuple[str, str | None]:
    """Plain cue text without markup, and the speaker named by a voice tag."""
    raw = " ".join(line.strip() for line in lines if line.strip())
    voice = _VOICE.search(raw)
    text = html.unescape(_TAG.sub("", raw))
    return " ".join(text.split()), (voice.group(1).strip() if voice else None)


def parse_cues(text: str) -> tuple[list[dict[str, Any]], str]:
    """The cues of an SRT or WebVTT text, and the WebVTT header's title (if any)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    blocks = _BLOCK_SPLIT.split(text.strip())
    title = ""
    if blocks and blocks[0].startswith("WEBVTT"):
        title = blocks[0].split("\n", 1)[0][len("WEBVTT") :].strip(" \t-:")
        blocks = blocks[1:]
    cues: list[dict[str, Any]] = []
    for block in blocks:
        lines = block.split("\n")
        if lines[0].split(" ", 1)[0] in _SKIPPED_BLOCKS:
            continue
        timing = [(i, m) for i, m in enumerate(map(_TIMING.match, lines[:3])) if m]
        if not timing:
            continue
        at, m = timing[0]
        cue_text, speaker = clean_cue(lines[at + 1 :])
        if cue_text:
            cue: dict[str, Any] = {
                "start_s": seconds(m.group(1)),
                "end_s": seconds(m.group(2)),
                "text": cue_text,
            }
            if speaker:
                cue["speaker"] = speaker
            cues.append(cue)
    return cues, title


def group_cues(offsets: list[tuple[int, int]], cues: list[dict[str, Any]]) -> list[ChunkSpan]:
    """Chunks of consecutive cues of about CHUNK_CHARS, overlapping by about OVERLAP_CHARS."""
    spans: list[ChunkSpan] = []
    first = 0
    while first < len(cues):
        last = first
        while last + 1 < len(cues) and offsets[last + 1][1] - offsets[first][0] <= CHUNK_CHARS:
            last += 1
        meta = {
            "start_s": cues[first]["start_s"],
            "end_s": cues[last]["end_s"],
            "first_cue": first,
            "last_cue": last,
        }
        spans.append(ChunkSpan(offsets[first][0], offsets[last][1], meta=meta))
        if last + 1 >= len(cues):
            break
        nxt = last + 1
        while nxt - 1 > first and offsets[last][1] - offsets[nxt - 1][0] <= OVERLAP_CHARS:
            nxt -= 1
        first = nxt
    return spans


def parse_transcript(path: Path, raw: bytes) -> list[ParsedItem]:
    cues, header_title = parse_cues(decode_text(raw))
    if not cues:
        raise ValueError(f"no cues found: not a valid {path.suffix.lstrip('.').upper()} transcript")
    offsets: list[tuple[int, int]] = []
    pos = 0
    for cue in cues:
        offsets.append((pos, pos + len(cue["text"])))
        pos += len(cue["text"]) + 1
    content = "\n".join(cue["text"] for cue in cues)
    mtime = dates.file_mtime(path)
    meta = {
        "media_type": "transcript",
        "doc_type": path.suffix.lower().lstrip("."),
        "summary": summarize(content),
        "duration_s": cues[-1]["end_s"],
        "speakers": sorted({c["speaker"] for c in cues if "speaker" in c}),
        "cues": cues,
        "file_name": path.name,
    }
    return [
        ParsedItem(
            key="",
            title=header_title or path.stem,
            content=content,
            created_at=mtime,
            last_modified=mtime,
            meta=meta,
            chunks=group_cues(offsets, cues),
        )
    ]


# -- rendering for media_transcript ------------------------------------------------------


def clock(value: float, separator: str = ".", millis: bool = True) -> str:
    """hh:mm:ss.mmm (WebVTT), hh:mm:ss,mmm (SRT with separator ","), or hh:mm:ss."""
    total_ms = round(value * 1000)
    h, rest = divmod(total_ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    if not millis:
        return f"{h:02d}:{m:02d}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}{separator}{ms:03d}"


def _spoken(cue: dict[str, Any]) -> str:
    return f"{cue['speaker']}: {cue['text']}" if cue.get("speaker") else str(cue["text"])


def render_text(cues: list[dict[str, Any]], include_timestamps: bool) -> str:
    if include_timestamps:
        return "\n".join(f"[{clock(c['start_s'], millis=False)}] {_spoken(c)}" for c in cues)
    return "\n".join(_spoken(c) for c in cues)


def render_srt(cues: list[dict[str, Any]]) -> str:
    blocks = [
        f"{i}\n{clock(c['start_s'], ',')} --> {clock(c['end_s'], ',')}\n{_spoken(c)}"
        for i, c in enumerate(cues, start=1)
    ]
    return "\n\n".join(blocks) + "\n"


def render_vtt(cues: list[dict[str, Any]]) -> str:
    blocks = ["WEBVTT"]
    for c in cues:
        voice = f"<v {c['speaker']}>" if c.get("speaker") else ""
        text = html.escape(c["text"], quote=False)
        blocks.append(f"{clock(c['start_s'])} --> {clock(c['end_s'])}\n{voice}{text}")
    return "\n\n".join(blocks) + "\n"
