"""The media source: documents, web pages, PDFs, transcripts and emails."""

from .source import MediaSource, source
from .tools import register

__all__ = ["MediaSource", "register", "source"]
