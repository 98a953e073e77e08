"""The prompts source: prompt files in JSON, YAML, TOML and Markdown."""

from .source import PromptsSource, source
from .tools import register

__all__ = ["PromptsSource", "register", "source"]
