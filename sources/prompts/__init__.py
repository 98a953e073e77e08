"""The prompts source: prompt files in JSON, YAML, TOML and Markdown."""

from ..source import SourceEntry
from .source import PromptsSource, source

__all__ = ["PromptsSource", "entry", "source"]

entry = SourceEntry(source=source, mime_type="text/markdown", label="Prompt")
