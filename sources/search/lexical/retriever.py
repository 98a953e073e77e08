"""The lexical retrieve stage: bm25 from the store (`Store.lexical`; SQLite: the exact in-memory
copy of FTS5 when it can answer, else FTS5; PostgreSQL: bm25 from the postings).

Either way the hits carry the query's norm (`scoring.Norm`: its idf mass and the source's
rarest-word idf), which the calibration measures each hit's bm25 against; in `knowledge_search`
the norm of all the user's sources together and the factor their bm25 is scaled by
(`SearchRequest.shared`), waited for once the source has ranked.
"""

from __future__ import annotations

from dataclasses import replace

from ..query import ParsedQuery
from ..request import Found, SearchContext


class LexicalRetriever:
    """bm25 over the source's chunks, ranked by the store."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        found = await ctx.store.lexical(ctx, query)
        if ctx.request.shared is None or not found.rows:
            return found
        # Ranked: now wait for the other sources' counts (they were read while this ranked).
        shared = await ctx.request.shared.of(ctx.source.name)
        if shared is None:
            return found
        scale, norm = shared
        return replace(found, norm=norm, scale=scale)
