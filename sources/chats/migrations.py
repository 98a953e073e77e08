"""Schema history of the chats database. Append-only once released."""

from __future__ import annotations

from ..db import Migration
from ..schema import chunked_tables_v1

MIGRATIONS = (
    Migration(1, "chats items (conversations), chunks (messages) and FTS index", chunked_tables_v1("chats")),
)
