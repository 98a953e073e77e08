"""A result described later: what knowledge_search's merge reads of a hit, the rest built when
the merge keeps it.

knowledge_search fetches `offset + limit + 1` hits of every source and keeps `limit` of them.
Building each source's result (its pydantic model, its type-aware fields parsed from the item's
JSON, its `loc`) for every fetched hit was about a quarter of the call's loop time
(`docs/performance.md`, "Session 13: only the page is described"). With
`SearchRequest.deferred`, `results.describe` hands over a `DeferredResult` per hit instead: the
fields the merge sorts, pages and collapses on (uri, score, last_modified, the content key, the
e-mail thread), and the item and chunk rows the source's result is made from, by `build` — the
same call `describe` would have made, with the score and rank the merge settled on.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...models import ResultItem
from ...storage.store import Row

if TYPE_CHECKING:
    from ..request import SearchedSource


class DeferredResult:
    """A hit of `source` (item `row`, hit `chunk`) whose result is built only if it is kept."""

    __slots__ = (
        "_chunk",
        "_hit",
        "_row",
        "_source",
        "duplicates",
        "last_modified",
        "private",
        "rank",
        "score",
        "source",
        "thread_hits",
        "thread_id",
        "uri",
    )

    def __init__(self, source: SearchedSource, row: Row, chunk: Row, hit: Mapping[str, Any]) -> None:
        self._source, self._row, self._chunk = source, row, chunk
        self._hit = dict(hit)
        self.source: str = source.name
        self.uri: str = f"{source.name}://{row['item_id']}"
        self.score: float = float(self._hit.pop("score"))
        self.rank: int = int(self._hit.pop("rank"))
        self.last_modified: str = row["last_modified"]
        self.thread_id: str | None = source.thread_of(row)
        self.duplicates: list[str] | None = None
        self.thread_hits: int | None = None
        self.private: dict[str, Any] = {
            "_details": None,
            "_content_key": None,
            "_keep": frozenset(),
            "_passage": False,
        }
        """The result's private attributes as `ResultItem.private` holds them."""

    @property
    def title(self) -> str:
        return str(self._row["title"])

    @property
    def match_count(self) -> int:
        return int(self._hit.get("match_count", 1))

    def model_copy(self, update: Mapping[str, Any] | None = None) -> DeferredResult:
        """A copy with `update`'s attributes (as `ResultItem.model_copy`: shallow, not checked)."""
        out = copy.copy(self)
        out.private = dict(self.private)
        for name, value in (update or {}).items():
            setattr(out, name, value)
        return out

    def build(self) -> ResultItem:
        """The source's result for this hit, as `describe` makes it, with the merge's score, rank,
        duplicates and thread count, and the details left for `details.fill_details`."""
        result: ResultItem = self._source.result(
            self._row,
            self._chunk,
            score=self.score,
            rank=self.rank,
            duplicates=self.duplicates,
            thread_hits=self.thread_hits,
            **self._hit,
        )
        result.private.update(self.private)
        return result
