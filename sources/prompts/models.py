"""Result model of the prompts source (DESIGN §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..models import ResultItem

PromptField = Literal["name", "author", "details", "system_prompt", "user_prompt", "keywords"]


class PromptResult(ResultItem):
    """A prompt hit; `title` is the prompt's name, `keywords` the same list as `tags`."""

    author: str | None = Field(default=None, description="Who wrote the prompt.")
    keywords: list[str] | None = Field(default=None, description="The prompt's keywords.")
