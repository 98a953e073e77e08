"""Reading one item (the `*_get` tools, DESIGN §6): find it, find the anchor chunk its `loc` or
query points at, and return the window of its text the retrieval mode and budget allow, with
how to go on. The window arithmetic itself is pure (`retrieval.py`); how much fits the budget
is measured on the rendered result (`fitting.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aiosqlite

from .errors import NotFoundError
from .fitting import fit, trim_meta
from .models import GetResponse, Loc, NextStep, Retrieval
from .retrieval import Budget, Defaults, Span, chunk_window, full_window, resolve_budget
from .search.lexical.sql import build_anchor_sql
from .search.query import ParsedQuery, parse_query
from .search.stemming import QueryMatcher
from .storage.db import Database
from .text.snippets import make_snippet
from .wire import render_get

ITEM_BY_ID_SQL = "SELECT * FROM {p}_items WHERE item_id = ?"
CHUNKS_OF_ITEM_SQL = "SELECT * FROM {p}_chunks WHERE item_rowid = ? ORDER BY chunk_index"

Rows = list[aiosqlite.Row]
Databases = Callable[[str], Awaitable[Database]]


class ReadableSource(Protocol):
    """What reading needs of a source: its tables, result and anchors (`ChunkedSource`)."""

    @property
    def name(self) -> str: ...

    @property
    def id_field(self) -> str: ...

    def result(self, item: aiosqlite.Row, chunk: aiosqlite.Row | None, **hit: Any) -> Any: ...

    def loc(self, item: aiosqlite.Row, chunk: aiosqlite.Row) -> Loc: ...

    def anchor_from_loc(self, loc: Loc, chunks: Rows) -> int | None: ...

    async def complete(self, results: list[Any], databases: Databases | None) -> None: ...


async def load_item(db: Database, source: ReadableSource, item_id: str) -> tuple[aiosqlite.Row, Rows]:
    """The item's row and its chunks in order; NotFoundError names the source's id field."""
    pg: Any = db if getattr(db, "item_store", "sqlite") == "postgresql" else None
    if pg is not None:  # the PostgreSQL item store (`storage/postgres/serving/items.py`)
        item = await pg.item(item_id)
    else:
        item = await db.fetchone(ITEM_BY_ID_SQL.format(p=source.name), (item_id,))
    if item is None:
        raise NotFoundError(source.id_field, item_id, f"use an id from {source.name}_search results")
    if pg is not None:
        return item, await pg.chunks_of(int(item["id"]))
    chunks = await db.fetchall(CHUNKS_OF_ITEM_SQL.format(p=source.name), (item["id"],))
    return item, chunks


async def find_anchor(
    db: Database,
    source: ReadableSource,
    item: aiosqlite.Row,
    chunks: Rows,
    loc: Loc | None,
    query: str | None,
) -> int:
    """The chunk index to read from: the one `loc` names, else the best match of `query` in
    this item, else the first."""
    if loc is not None:
        anchor = source.anchor_from_loc(loc, chunks)
        if anchor is not None:
            return anchor
    parsed = parse_query(query or "")
    if not parsed.is_empty and chunks and getattr(db, "item_store", "sqlite") == "postgresql":
        best = await db.best_chunk(parsed, int(item["id"]))  # type: ignore[attr-defined]
        found = [int(c["chunk_index"]) for c in chunks if best is not None and int(c["id"]) == best]
        return found[0] if found else most_matched(parsed, chunks)
    if not parsed.is_empty and chunks:
        row = await db.fetchone(build_anchor_sql(source.name), (parsed.match_expression(), item["id"]))
        if row is not None:
            return int(row[0])
    return 0


async def get(
    db: Database,
    source: ReadableSource,
    item_id: str,
    model: type[Any],
    *,
    loc: Loc | None,
    query: str | None,
    retrieval: Retrieval | None,
    defaults: Defaults,
    databases: Databases | None = None,
) -> GetResponse[Any]:
    """The item as `model` (the source's GetResponse): its meta and the window to read, as much
    as both renderings of the result fit `max_tokens` (`fitting.py`)."""
    warnings: list[str] = []
    budget = resolve_budget(retrieval, defaults, warnings)
    item, chunks = await load_item(db, source, item_id)
    anchor = await find_anchor(db, source, item, chunks, loc, query) if chunks else 0
    meta = source.result(item, chunks[anchor] if chunks else None, snippet="", score=1.0, rank=1)
    await source.complete([meta], databases)
    counter = budget.counter

    def build(level: int, cut: int, max_tokens: int) -> GetResponse[Any]:
        at = (loc, query, cut, max_tokens, level >= 2)
        content, truncated, step = window(source, item, chunks, anchor, budget, *at)
        shown = trim_meta(meta, level)
        if level == 0:
            shown.snippet = make_snippet(content, budget.snippet_length) if content else ""
        files = getattr(shown, "attachments", None) or []
        return model(  # type: ignore[no-any-return]
            meta=shown,
            content=content,
            attachments=[f.model_dump() for f in files],
            mode_used=budget.mode,
            estimated_tokens=max_tokens,
            tokenizer=counter.tokenizer,
            truncated=truncated,
            next=step,
            warnings=list(warnings),
        )

    upper = window_chars(source, item, chunks, anchor, budget, loc)
    return fit(build, render_text, counter, budget.max_tokens, upper)


def render_text(response: GetResponse[Any]) -> str:
    """The text rendering a get tool sends with `response` (`wire.render_get`)."""
    return render_get(response)


def most_matched(query: ParsedQuery, chunks: Rows) -> int:
    """The index of the chunk matching the most query terms (the first of equals). Pure.

    The PostgreSQL store's anchor when no chunk of the item has a scored term (bm25 picks it
    otherwise, as on SQLite)."""
    matcher = QueryMatcher(query)
    found = matcher.find_all([(str(c["body"]), str(c["title"])) for c in chunks])
    best = max(range(len(chunks)), key=lambda n: (len(set(found[n].terms)), -n))
    return int(chunks[best]["chunk_index"])


def _start(loc: Loc | None) -> int:
    return loc.approx_offset if loc is not None and loc.approx_offset is not None else 0


def window_chars(
    source: ReadableSource, item: aiosqlite.Row, chunks: Rows, anchor: int, budget: Budget, loc: Loc | None
) -> int:
    """The most characters of content the budget's mode could return, whatever the budget."""
    text: str = item["content"]
    if budget.mode == "full" or not chunks:
        return max(0, len(text) - min(_start(loc), len(text)))
    if budget.mode == "snippet":
        return min(budget.snippet_length, len(chunks[anchor]["body"]))
    spans = [Span(c["start_offset"], c["end_offset"]) for c in chunks]
    siblings = budget.mode == "chunk_with_siblings"
    w = chunk_window(text, spans, anchor, budget, siblings, max_chars=len(text))
    return w.end - w.start


def window(
    source: ReadableSource,
    item: aiosqlite.Row,
    chunks: Rows,
    anchor: int,
    budget: Budget,
    loc: Loc | None,
    query: str | None,
    max_chars: int,
    max_tokens: int,
    lean: bool = False,
) -> tuple[str, bool, NextStep | None]:
    """The text to return for the budget's mode within `max_chars`, whether it was cut, and how
    to go on (`max_tokens` is the budget `next` carries; `lean`: its loc names only the chunk)."""

    def loc_of(chunk: aiosqlite.Row) -> Loc:
        return Loc(chunk_index=chunk["chunk_index"]) if lean else source.loc(item, chunk)

    text: str = item["content"]
    more = {"mode": "full", "max_tokens": max_tokens}
    if budget.mode == "full" or not chunks:
        w = full_window(text, _start(loc), budget, max_chars)
        nxt = NextStep(loc=Loc(approx_offset=w.end), retrieval=more) if w.truncated else None
        return text[w.start : w.end], w.truncated, nxt
    if budget.mode == "snippet":
        body = chunks[anchor]["body"]
        snippet = make_snippet(body, min(budget.snippet_length, max_chars), _first_match(body, query))
        nxt = NextStep(loc=loc_of(chunks[anchor]), retrieval={"mode": "chunk"})
        return snippet, len(snippet) < len(body), nxt
    spans = [Span(c["start_offset"], c["end_offset"]) for c in chunks]
    siblings = budget.mode == "chunk_with_siblings"
    w = chunk_window(text, spans, anchor, budget, siblings, max_chars=max_chars)
    nxt = None
    if w.truncated:
        nxt = NextStep(loc=Loc(approx_offset=w.end), retrieval=more)
    elif w.last_chunk + 1 < len(chunks):
        nxt = NextStep(
            loc=loc_of(chunks[w.last_chunk + 1]),
            retrieval={"mode": budget.mode, "max_tokens": max_tokens},
        )
    return text[w.start : w.end], w.truncated, nxt


def _first_match(body: str, query: str | None) -> int | None:
    """A cheap position of the first query word in `body`, for centring a get snippet."""
    lowered = body.lower()
    positions = [lowered.find(t.words[0][:5]) for t in parse_query(query or "").terms]
    found = [p for p in positions if p >= 0]
    return min(found) if found else None
