"""Result model of the characters source (DESIGN §5)."""

from __future__ import annotations

from pydantic import Field

from ..models import ResultItem


class CharacterResult(ResultItem):
    """A character card hit; `title` is the character's name, `tags` the card's tags."""

    creator: str | None = Field(default=None, description="Who made the card.")
    character_version: str | None = Field(default=None, description="The card's own version string.")
    nickname: str | None = Field(default=None, description="V3 nickname used in place of the name.")
    spec: str | None = Field(default=None, description="chara_card_v1, chara_card_v2 or chara_card_v3.")
