"""The lexical retrieve stage: the exact in-memory copy when it can answer, else FTS5.

Either way the hits carry the query's norm (`scoring.Norm`: its idf mass and the source's
rarest-word idf), which the calibration measures each hit's bm25 against.
"""

from __future__ import annotations

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
        return found if found is not None else await self.fts.retrieve(ctx, query)
