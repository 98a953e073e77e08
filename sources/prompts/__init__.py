"""The prompts source: prompt files in JSON, YAML, TOML and Markdown."""

from .source import PromptsSource, source

__all__ = ["PromptsSource", "source"]
