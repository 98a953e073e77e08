"""Result model of the characters source (DESIGN §5)."""

from __future__ import annotations

from pydantic import Field, PrivateAttr

from ..models import Loc, ResultItem


class CharacterResult(ResultItem):
    """A character card hit; `title` is the character's name, `tags` the card's tags."""

    creator: str | None = Field(default=None, description="Who made the card.")
    character_version: str | None = Field(default=None, description="The card's own version string.")
    nickname: str | None = Field(default=None, description="V3 nickname used in place of the name.")
    spec: str | None = Field(default=None, description="chara_card_v1, chara_card_v2 or chara_card_v3.")
    summary: str | None = Field(
        default=None,
        description="The start of the description (else personality, scenario or first message).",
    )
    _summary_loc: Loc | None = PrivateAttr(default=None)

    def lead(self, matched: bool) -> tuple[str, Loc] | None:
        """A hit on the name alone shows the summary, not the text of its shortest field."""
        if matched or not self.summary or self._summary_loc is None:
            return None
        return self.summary, self._summary_loc
