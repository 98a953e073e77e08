"""The stages of the search pipeline, one small interface each.

    parse → expand → retrieve → fuse → rerank → diversify → describe → page

| stage     | receives                                | returns                                    |
|-----------|-----------------------------------------|--------------------------------------------|
| parse     | the user's text                         | `ParsedQuery` (`query.parse_query`)        |
| expand    | the parsed query                        | a `ParsedQuery` (more terms, or the same)  |
| retrieve  | the query                               | `Found`: ranked page rows, or None (pass)  |
| fuse      | the query, one `Found` per retriever    | one `Found`                                |
| rerank    | the query and the fused `Found`         | a `Found` in a better order                |
| diversify | the reranked `Found`                    | a `Found` without crowding                 |
| describe  | the query and the page's rows           | results (`results.describe`)               |
| page      | the results and the `Found`             | `SearchResponse` (`results.page`)          |

Every stage reads the `SearchContext` (source, store, request, order, snippet length) and
may add a line to its `warnings`. A new capability is a new stage object in the pipeline's
list (`pipeline.SearchPipeline`), not an edit of the others. The default pipeline retrieves
with the embeddings (`dense.retriever.DenseRetriever`, when the query's route, the model and
the source's vectors allow) and bm25 (`lexical.LexicalRetriever`), and fuses them
(`dense.fusion.HybridFuser`), expands the query from the glossaries
(`glossary.expand.GlossaryExpander`), reranks when the caller asks (`rerank.stage.CrossRanker`)
and adds an item's further passages when `per_item` asks (`diversify.Passages`).

Retrieved rows are the page's window (`offset` applied, one row more than `limit` when there
are more), so a stage that reorders sees the page only; one that needs a deeper pool asks the
retriever for it through the context's request: a reranker's `pool` makes the pipeline run
retrieve and fuse on `SearchContext.deepened(pool)` (the first `pool` items) and cut the page
from the reranked rows (`pipeline.page_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .query import ParsedQuery
from .request import Found, SearchContext


class Expander(Protocol):
    """Add terms to a query (synonyms, a glossary's expansions), or leave it as it is."""

    async def expand(self, ctx: SearchContext, query: ParsedQuery) -> ParsedQuery: ...


class Retriever(Protocol):
    """Find the page's rows for the query; None when this retriever cannot answer it."""

    async def retrieve(self, ctx: SearchContext, query: ParsedQuery) -> Found | None: ...


class Fuser(Protocol):
    """Merge the lists of several retrievers (lexical, dense…) into one ranking."""

    async def fuse(self, ctx: SearchContext, query: ParsedQuery, found: Sequence[Found]) -> Found: ...


class Reranker(Protocol):
    """Reorder the retrieved rows by a finer relevance judgement. `pool` says how many items it
    wants retrieved from the first (None: the page); the pipeline then cuts the page after it."""

    def pool(self, ctx: SearchContext) -> int | None: ...

    async def rerank(self, ctx: SearchContext, query: ParsedQuery, found: Found) -> Found: ...


class Diversifier(Protocol):
    """Keep one item, thread or conversation from crowding the page."""

    async def diversify(self, ctx: SearchContext, found: Found) -> Found: ...
