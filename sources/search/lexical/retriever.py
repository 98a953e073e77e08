"""The lexical retrieve stage: the exact in-memory copy when it can answer, else FTS5.

Either way the hits carry the query's norm (`scoring.Norm`: its idf mass and the source's
rarest-word idf), which the calibration measures each hit's bm25 against; in `knowledge_search`
the norm of all the user's sources together (`SearchRequest.norm`), as their bm25 is scaled to.
"""

from __future__ import annotations

from dataclasses import replace

from ..query import ParsedQuery
from ..request import Found, SearchContext
from .fts import FtsRetriever
from .memory import MemoryRetriever


class LexicalRetriever:
    """bm25 over the source's FTS5 index, from whichever copy of it answers this query."""

    def __init__(self) -> None:
        self.memory = MemoryRetriever()
        self.fts = FtsRetriever()

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        found = await self.memory.retrieve(ctx, query)
        if found is None:
            found = await self.fts.retrieve(ctx, query)
        shared = ctx.request.norm
        return replace(found, norm=shared) if shared is not None and found.rows else found
