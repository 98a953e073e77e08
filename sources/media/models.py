"""Result models of the media source (DESIGN §5): media, document, email and transcript fields."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import ResultItem

MediaType = Literal["email", "pdf", "html", "markdown", "txt", "transcript", "docx", "epub"]
TranscriptFormat = Literal["text", "srt", "vtt", "json"]


class Attachment(BaseModel):
    filename: str
    content_type: str
    size_bytes: int = Field(ge=0)


class MediaResult(ResultItem):
    """A media hit: a document, web page, PDF, transcript or email."""

    model_config = ConfigDict(populate_by_name=True)

    media_type: MediaType | None = None
    url: str | None = Field(default=None, description="The page's canonical URL (HTML).")
    summary: str | None = Field(default=None, description="The first sentences, at most 200 characters.")
    headings: list[str] | None = Field(default=None, description="The document's first five headings.")
    doc_type: str | None = Field(default=None, description="The file's format, e.g. pdf, html, md, srt.")
    page: int | None = Field(default=None, ge=1, description="PDF page of the hit (1-based).")
    start_s: float | None = Field(default=None, description="Transcript: start of the hit, in seconds.")
    end_s: float | None = Field(default=None, description="Transcript: end of the hit, in seconds.")
    from_: str | None = Field(default=None, alias="from", description="Sender, `Name <address>`.")
    to: list[str] | None = None
    cc: list[str] | None = None
    date: str | None = Field(default=None, description="The email's Date header, ISO 8601.")
    subject: str | None = None
    message_id: str | None = None
    has_attachments: bool | None = None
    attachment_count: int | None = None
    attachments: list[Attachment] | None = Field(default=None, description="Listed only; not searchable.")
    thread_id: str | None = Field(default=None, description="Shared by every message of a thread.")


class TranscriptCue(BaseModel):
    start_s: float = Field(description="Start, in seconds.")
    end_s: float = Field(description="End, in seconds.")
    text: str
    speaker: str | None = None


class TranscriptResponse(BaseModel):
    media_id: str
    format: TranscriptFormat
    content: str | list[TranscriptCue] = Field(
        description="text, srt and vtt: the transcript as one string; json: the list of cues."
    )
