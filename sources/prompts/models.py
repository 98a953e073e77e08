"""Result model of the prompts source (DESIGN §5)."""

from __future__ import annotations

from pydantic import Field

from ..models import ResultItem


class PromptResult(ResultItem):
    """A prompt hit; `title` is the prompt's name, `keywords` the same list as `tags`."""

    author: str | None = Field(default=None, description="Who wrote the prompt.")
    keywords: list[str] | None = Field(default=None, description="The prompt's keywords.")
