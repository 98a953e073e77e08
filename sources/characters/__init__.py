"""The characters source: Character Card V1/V2/V3 (`.json`, `.png`)."""

from .source import CharactersSource, source

__all__ = ["CharactersSource", "source"]
