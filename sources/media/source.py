"""Media: documents, web pages, PDFs, transcripts and emails, imported from files."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import Field

from ..errors import InvalidArgumentError
from ..models import GetResponse, Loc, Retrieval
from ..retrieval import Defaults
from ..source import ChunkedSource, Databases, SearchOptions
from ..storage.items import ParsedItem
from ..storage.store import Store
from ..storage.store.filters import CreatedAt, Filter, MetaIn
from .formats import transcripts
from .formats.documents import parse_html_file, parse_markdown, parse_pdf, parse_txt
from .formats.emails import parse_eml, parse_mbox
from .formats.packages import parse_docx, parse_epub
from .migrations import MIGRATIONS
from .models import Attachment, MediaResult, MediaType, TranscriptCue, TranscriptFormat, TranscriptResponse

Parser = Callable[[Path, bytes], list[ParsedItem]]

PARSERS: dict[str, Parser] = {
    ".txt": parse_txt,
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".html": parse_html_file,
    ".htm": parse_html_file,
    ".pdf": parse_pdf,
    ".srt": transcripts.parse_transcript,
    ".vtt": transcripts.parse_transcript,
    ".eml": parse_eml,
    ".mbox": parse_mbox,
    ".docx": parse_docx,
    ".epub": parse_epub,
}

_EMAIL_FIELDS = ("to", "cc", "date", "subject", "message_id", "thread_id")
_DOC_FIELDS = ("media_type", "url", "summary", "headings", "doc_type")


def media_type_filter(media_types: list[str]) -> Filter:
    return MetaIn("media_type", tuple(media_types))


def date_filter(value: str, field: str) -> Filter:
    """created_at on or after (`date_from`) / on or before (`date_to`) an ISO date or datetime."""
    allowed = "must be an ISO 8601 date (2025-06-30) or datetime (2025-06-30T12:00:00+02:00)"
    text = value.strip()
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            bound = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            if field == "date_to":
                return CreatedAt("<", (bound + dt.timedelta(days=1)).isoformat())
        else:
            bound = dt.datetime.fromisoformat(text)
            if bound.tzinfo is None:
                bound = bound.replace(tzinfo=dt.UTC)
    except ValueError:
        raise InvalidArgumentError(field, f"{allowed}; got {value!r}") from None
    return CreatedAt(">=" if field == "date_from" else "<=", bound.isoformat())


class MediaOptions(SearchOptions):
    media_types: list[MediaType] | None = Field(
        default=None, description='Only these kinds, e.g. ["email"] or ["pdf", "html"].'
    )
    date_from: str | None = Field(default=None, description="ISO date or datetime; created_at on or after.")
    date_to: str | None = Field(default=None, description="ISO date or datetime; created_at on or before.")


class MediaSource(ChunkedSource[MediaResult]):
    name = "media"
    id_field = "media_id"
    result_model = MediaResult
    migrations = MIGRATIONS
    extensions = frozenset(PARSERS)
    options_model = MediaOptions

    def search_filters(self, options: MediaOptions) -> list[Filter]:
        filters = [media_type_filter(list(options.media_types))] if options.media_types else []
        if options.date_from:
            filters.append(date_filter(options.date_from, "date_from"))
        if options.date_to:
            filters.append(date_filter(options.date_to, "date_to"))
        return filters

    def parse_file(self, path: Path, raw: bytes) -> list[ParsedItem]:
        return PARSERS[path.suffix.lower()](path, raw)

    def fields(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None) -> dict[str, Any]:
        meta = json.loads(item["meta"])
        out: dict[str, Any] = {k: meta[k] for k in _DOC_FIELDS if meta.get(k) is not None}
        if meta.get("media_type") == "email":
            out.update({k: meta.get(k) for k in _EMAIL_FIELDS})
            files = meta.get("attachments") or []
            out.update(
                from_=meta.get("from"),
                attachments=[Attachment.model_validate(file) for file in files],
                has_attachments=bool(files),
                attachment_count=len(files),
            )
        if chunk is not None:
            chunk_meta = json.loads(chunk["meta"])
            out.update({k: chunk_meta[k] for k in ("page", "start_s", "end_s") if k in chunk_meta})
        return out

    def thread_of(self, item: aiosqlite.Row) -> str | None:
        meta = json.loads(item["meta"])
        return meta.get("thread_id") if meta.get("media_type") == "email" else None

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc:
        return Loc(media_id=item["item_id"], chunk_index=chunk["chunk_index"], chunk_uuid=chunk["chunk_uuid"])

    async def get(
        self,
        db: Store,
        item_id: str,
        *,
        loc: Loc | None = None,
        query: str | None = None,
        retrieval: Retrieval | None = None,
        defaults: Defaults,
        databases: Databases | None = None,
    ) -> GetResponse[MediaResult]:
        """As every source's get; an email's `attachments` are listed in the response too."""
        if loc is not None and loc.media_id is not None and loc.media_id != item_id:
            raise InvalidArgumentError("loc.media_id", f"must match media_id {item_id!r} (or be left out)")
        return await super().get(
            db, item_id, loc=loc, query=query, retrieval=retrieval, defaults=defaults, databases=databases
        )

    async def transcript(
        self, db: Store, media_id: str, fmt: TranscriptFormat, include_timestamps: bool
    ) -> TranscriptResponse:
        item, _ = await self.load_item(db, media_id)
        meta = json.loads(item["meta"])
        if meta.get("media_type") != "transcript":
            raise InvalidArgumentError(
                "media_id",
                f"{media_id!r} is {meta.get('media_type')}, not a transcript; read it with media_get",
            )
        cues: list[dict[str, Any]] = meta.get("cues", [])
        content: str | list[TranscriptCue]
        if fmt == "json":
            content = [TranscriptCue.model_validate(c) for c in cues]
        elif fmt == "srt":
            content = transcripts.render_srt(cues)
        elif fmt == "vtt":
            content = transcripts.render_vtt(cues)
        else:
            content = transcripts.render_text(cues, include_timestamps)
        return TranscriptResponse(media_id=media_id, format=fmt, content=content)

    async def type_counts(self, db: Store) -> dict[str, Any]:
        counts = await db.counts_by("media_type")
        types = [{"media_type": value, "count": n} for value, n in counts]
        return {"media_types": types, "total": sum(t["count"] for t in types)}


source = MediaSource()
