"""The media source: documents, web pages, PDFs, transcripts and emails."""

from .source import MediaSource, source

__all__ = ["MediaSource", "source"]
