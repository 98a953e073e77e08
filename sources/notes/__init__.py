"""The notes source: Markdown and text notes."""

from ..source import SourceEntry
from .source import NotesSource, source

__all__ = ["NotesSource", "entry", "source"]

entry = SourceEntry(source=source, mime_type="text/markdown", label="Note")
