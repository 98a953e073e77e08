"""What flows through the search pipeline: the request, the context every stage reads, and
`Found`, the retrieved rows that pass from stage to stage.

A source builds a `SearchRequest` (its filters and FTS columns from its own options); the
pipeline (`pipeline.py`) turns it into a `SearchResponse`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from ..models import OrderBy, ScoreType
from ..storage.store import Hit, Row, Store
from ..storage.store.filters import Filter as Filter
from .query import ParsedQuery
from .rerank.backend import Reranking
from .scoring import Norm

if TYPE_CHECKING:
    from .glossary.file import Glossary
    from .lexical.term_stats import IndexStats, SharedScale

FtsColumn = Literal["title", "body"]
SearchMode = Literal["auto", "lexical", "semantic", "hybrid"]
"""How a search retrieves: `auto` picks by the query's type (`dense/query_type.py`); `lexical`
is bm25 alone, `semantic` the embeddings alone, `hybrid` both fused."""
FTS_COLUMNS: tuple[FtsColumn, ...] = get_args(FtsColumn)
ResultField = Literal["content", "headings", "summary", "reason"]
"""What a search result can add on request: the hit chunk's full text, the item's headings, its
summary, and why it matched."""
MAX_PER_ITEM = 5


@dataclass
class SearchRequest:
    query: str
    limit: int = 10
    offset: int = 0
    snippet_length: int | None = None
    order_by: OrderBy | None = None
    filters: list[Filter] = field(default_factory=list)
    columns: tuple[FtsColumn, ...] | None = None
    """Match only in these FTS columns (`("body",)`: not in titles); None matches in all."""
    mode: SearchMode = "auto"
    details: bool = True
    """False: leave each result's snippet and matched terms to `details.fill_details`, for
    callers (knowledge_search) that keep only some of the results."""
    deferred: bool = False
    """True: each result is a `describe.deferred.DeferredResult` (no details either), the source's
    result built only when the caller keeps it (knowledge_search's merge)."""
    shared: SharedScale | None = None
    """knowledge_search: the bm25 scale and norm of all the user's sources together, which the
    lexical stage waits for once it has ranked (`SharedScale`)."""
    rerank: Reranking | None = None
    """The caller asked to rerank (`rerank/stage.py`): the backend chosen, or why there is none."""
    expand: bool = True
    """Add the glossaries' synonyms to the query (`glossary/expand.py`)."""
    per_item: int = 1
    """Up to this many passages (matching chunks) of one item, each its own result (`diversify.py`)."""
    fields: frozenset[ResultField] = frozenset()
    """What each result adds to the compact default (`ResultField`)."""
    filter_names: tuple[str, ...] = ()
    """The source options the `filters` come from, for a message that names them."""
    glossaries: dict[tuple[Path | None, Path | None], Glossary] | None = None
    """knowledge_search: the glossaries its sources have read in this call, by server glossary
    file and user glossary file (`glossary.expand.glossary_of`): each file is looked at once a call,
    not once a source."""
    index_stats: IndexStats | None = None
    """knowledge_search: the source's term counts it has just read for the shared scale
    (`Store.index_stats`); the FTS5 plan takes them instead of asking the database again when
    they count every term of its query (one round trip fewer per source in the fan-out)."""


class SearchedSource(Protocol):
    """What the pipeline needs of a source: its name and bm25 column weights (the tables and
    the ranking), how to turn an item row and its hit chunk into the source's result, and the
    e-mail thread an item row belongs to (its results fold into one: `results.collapse`)."""

    @property
    def name(self) -> str: ...

    @property
    def weights(self) -> tuple[float, float]: ...

    def result(self, item: Row, chunk: Row | None, **hit: Any) -> Any: ...

    def thread_of(self, item: Row) -> str | None: ...


@dataclass
class SearchContext:
    """One search as every stage sees it. Stages add to `warnings`; nothing else changes."""

    source: SearchedSource
    store: Store
    request: SearchRequest
    order_by: OrderBy
    snippet_length: int
    warnings: list[str] = field(default_factory=list)
    query_type: str | None = None
    """exact, semantic or mixed (`dense/query_type.py`)."""
    lexical: bool = True
    """Whether bm25 retrieves (not with `mode = semantic`)."""
    dense: bool = False
    """Whether the embeddings may retrieve (the query's route); the dense stage says if they can."""
    pool: int | None = None
    """Set by a stage that fuses: every retriever returns its best `pool` items from the first
    (offset 0), and the fuser cuts the page."""
    hints: list[str] = field(default_factory=list)
    """Why a stage was skipped or failed (`provider_hint`); any makes the response `degraded`."""
    glossary_file: Path | None = None
    """The server's glossary (setting `glossary_file`), under each user's own."""
    expanded_terms: list[str] | None = None
    """What the expand stage added, as the response says it."""
    query: ParsedQuery | None = None
    """The query as expanded, for the stages after retrieval that read the store again."""

    def pooled(self) -> SearchContext:
        """The context a retriever sees: with a `pool`, the first `pool` items of the ranking
        (the warnings and hints are shared)."""
        if self.pool is None:
            return self
        return replace(self, request=replace(self.request, offset=0, limit=self.pool))

    def deepened(self, depth: int) -> SearchContext:
        """This search asked for its first `depth` items instead of the page (a reranker's pool);
        the warnings and hints are shared."""
        return replace(self, request=replace(self.request, offset=0, limit=depth))

    @property
    def depth(self) -> int:
        """How many ranked items the page reaches (`offset + limit`)."""
        return self.request.offset + self.request.limit


@dataclass(frozen=True)
class Found:
    """Retrieved page rows, best first: one item each (its columns, its best chunk's columns,
    bm25 `b`, matching chunks `n`, and the estimated `total`), one row more than the page when
    there are more; the page's offset is already applied."""

    rows: list[Hit]
    total: int | None
    """The estimated number of matching items; None: no query term matches anything."""
    terms_of: Callable[[int], list[str]] | None = None
    """The query terms a hit chunk (by rowid) matches, when the ranking knows them."""
    scores: dict[int, tuple[float, ScoreType]] | None = None
    """A fused ranking's 0..1 score and its kind per item rowid; None: the calibrated bm25."""
    norm: Norm | None = None
    """What the calibration measures a hit's bm25 against (the query's idf mass, the source's
    rarest-word idf: `scoring.Norm`); None: unknown."""
    scale: float = 1.0
    """What a hit's bm25 is multiplied by before calibration: in knowledge_search, the factor
    that puts the source on the scale of all the user's sources together (`SharedScale`)."""


NOTHING = Found([], None)
"""No query term matches anything."""
