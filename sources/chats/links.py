"""The link from a SillyTavern chat to the character card it was played with.

Cards live in the same user's characters store (an item's title is its card's name). The
link is resolved when a tool runs, by name, case-insensitively, so importing the cards before
or after the chats makes no difference. Without a characters source or its tables, there is
simply no link.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..errors import KnowledgeError
from ..source import Databases
from ..storage.store import Store


class CharacterLinks:
    """Card ids by name and names by card id, from the characters database when there is one."""

    def __init__(self, db: Store | None) -> None:
        self.db = db
        self._ids: dict[str, str | None] = {}

    async def id_for(self, name: str) -> str | None:
        key = name.lower()
        if key not in self._ids:
            row = await self._card(name, by_title=True)
            self._ids[key] = str(row["item_id"]) if row else None
        return self._ids[key]

    async def name_of(self, character_id: str) -> str | None:
        row = await self._card(character_id, by_title=False)
        return str(row["title"]) if row else None

    async def _card(self, value: str, *, by_title: bool) -> Any:
        if self.db is None:
            return None
        try:
            return await (self.db.item_by_title(value) if by_title else self.db.item(value))
        except sqlite3.OperationalError:  # the characters tables are not there
            return None


async def open_links(databases: Databases | None) -> CharacterLinks:
    """The caller's character cards; an empty link table when the characters source is absent."""
    db = None
    if databases is not None:
        try:
            db = await databases("characters")
        except (KeyError, KnowledgeError, sqlite3.Error):  # KeyError: no characters source registered
            db = None
    return CharacterLinks(db)
