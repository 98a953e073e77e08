"""The notes source: Markdown and text notes."""

from .source import NotesSource, source

__all__ = ["NotesSource", "source"]
