"""The media source: documents, web pages, PDFs, transcripts and emails."""

from ..source import SourceEntry
from .source import MediaSource, source

__all__ = ["MediaSource", "entry", "source"]

entry = SourceEntry(source=source, mime_type="text/plain", label="Media item (its text)")
