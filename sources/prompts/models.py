"""Result model of the prompts source (DESIGN §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr

from ..models import Loc, ResultItem

PromptField = Literal["name", "author", "details", "system_prompt", "user_prompt", "keywords"]


class PromptResult(ResultItem):
    """A prompt hit; `title` is the prompt's name, `keywords` the same list as `tags`."""

    author: str | None = Field(default=None, description="Who wrote the prompt.")
    keywords: list[str] | None = Field(default=None, description="The prompt's keywords.")
    summary: str | None = Field(
        default=None, description="The start of its details (else its system or user prompt)."
    )
    _summary_loc: Loc | None = PrivateAttr(default=None)

    def lead(self, matched: bool) -> tuple[str, Loc] | None:
        """A hit on the name alone (or in the name field) shows the summary, not the name again."""
        named = self.loc is not None and self.loc.field == "name"
        if (matched and not named) or not self.summary or self._summary_loc is None:
            return None
        return self.summary, self._summary_loc
