"""The characters source: Character Card V1/V2/V3 (`.json`, `.png`)."""

from ..source import SourceEntry
from .source import CharactersSource, source

__all__ = ["CharactersSource", "entry", "source"]

entry = SourceEntry(source=source, mime_type="text/markdown", label="Character card")
