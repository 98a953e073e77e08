"""The notes source: Markdown and text notes."""

from .source import NotesSource, source
from .tools import register

__all__ = ["NotesSource", "register", "source"]
