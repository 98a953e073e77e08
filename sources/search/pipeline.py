"""The search pipeline every source runs (`stages.py` says what each stage receives and returns).

`SearchPipeline.run` validates the paging, clamps the snippet length, parses the query, then
passes it through the stages in order. A source keeps the default pipeline unless it has a
reason not to; a new stage is a new object in one of these lists.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ..errors import InvalidArgumentError
from ..models import OrderBy, SearchResponse
from ..retrieval import Defaults
from ..storage.store import Store
from ..text.snippets import clamp_snippet_length
from .dense.fusion import HybridFuser
from .dense.query_type import query_type, route
from .dense.retriever import DenseRetriever
from .describe import results
from .diversify import Passages
from .glossary.expand import GlossaryExpander
from .lexical.retriever import LexicalRetriever
from .query import MAX_QUERY_CHARS, ParsedQuery, parse_query
from .request import Found, SearchContext, SearchedSource, SearchRequest
from .rerank.stage import CrossRanker
from .stages import (
    Diversifier,
    Expander,
    Fuser,
    Reranker,
    Retriever,
)

MAX_OFFSET = 10_000

_query_type = functools.lru_cache(maxsize=1024)(query_type)
"""`query_type`, once per query text: knowledge_search asks every source with the same query
(~12 µs each on a SciFact query), as `parse_query` is read once."""


@dataclass(frozen=True)
class SearchPipeline:
    """The stages in order; each list runs its stages one after another."""

    expanders: tuple[Expander, ...] = field(default_factory=lambda: (GlossaryExpander(),))
    retrievers: tuple[Retriever, ...] = field(default_factory=lambda: (DenseRetriever(), LexicalRetriever()))
    fuser: Fuser = field(default_factory=HybridFuser)
    rerankers: tuple[Reranker, ...] = field(default_factory=lambda: (CrossRanker(),))
    diversifier: Diversifier = field(default_factory=Passages)

    async def run(
        self,
        source: SearchedSource,
        store: Store,
        request: SearchRequest,
        defaults: Defaults,
        model: type[Any],
    ) -> SearchResponse[Any]:
        """`request` over `source`'s items in `store`, answered as `model` (its SearchResponse)."""
        if request.offset > MAX_OFFSET:
            raise InvalidArgumentError("offset", f"must be 0..{MAX_OFFSET}")
        warnings: list[str] = []
        snippet_length = clamp_snippet_length(request.snippet_length, defaults.snippet_length, warnings)
        if len(request.query) > MAX_QUERY_CHARS:  # every stage (glossary, embedding) reads this much
            request = replace(request, query=request.query[:MAX_QUERY_CHARS])
            warnings.append(f"query: only its first {MAX_QUERY_CHARS} characters were searched")
        query = parse_query(request.query)
        if query.is_empty:
            warnings.append("query has no searchable words; use letters or digits")
            return results.empty(model, warnings)
        order_by = cast(OrderBy, request.order_by or defaults.order_by)  # settings validate the default
        ctx = SearchContext(source, store, request, order_by, snippet_length, warnings)
        ctx.glossary_file = defaults.glossary_file
        ctx.query_type = _query_type(request.query)
        way = route(request.mode, ctx.query_type)
        ctx.lexical, ctx.dense = way.lexical, way.dense
        for expander in self.expanders:
            query = await expander.expand(ctx, query)
        ctx.query = query
        pools = [p for p in (r.pool(ctx) for r in self.rerankers) if p is not None]
        work = ctx.deepened(max(pools)) if pools else ctx
        fused = await self.ranked(work, query)
        for reranker in self.rerankers:
            fused = await reranker.rerank(work, query, fused)
        if work is not ctx:
            fused, ctx = page_of(fused, ctx.request), replace(work, request=ctx.request)
        fused = await self.diversifier.diversify(ctx, fused)
        return results.page(ctx, results.describe(ctx, query, fused), fused, model)

    async def ranked(self, ctx: SearchContext, query: ParsedQuery) -> Found:
        """retrieve and fuse: the fused ranking's rows for the context's window."""
        lists: list[Found] = []
        for retriever in self.retrievers:
            if isinstance(retriever, LexicalRetriever) and not ctx.lexical:
                continue  # mode semantic, answered by the embeddings
            found = await retriever.retrieve(ctx.pooled(), query)
            if found is not None:
                lists.append(found)
        return await self.fuser.fuse(ctx, query, lists)


def page_of(found: Found, request: SearchRequest) -> Found:
    """The page's window of rows ranked from the first (one more than the page when there are more)."""
    return replace(found, rows=found.rows[request.offset : request.offset + request.limit + 1])


DEFAULT_PIPELINE = SearchPipeline()
