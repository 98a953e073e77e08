"""Build the search SQL of a chunked source from a declarative spec. Pure: no I/O.

One function builds, the caller runs. Identifiers come only from the source's own name;
every value is a bound parameter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...models import OrderBy
from ..request import FTS_COLUMNS, Filter, FtsColumn
from .filters import clauses

_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")

_RESULT_ITEM_COLUMNS = (
    "id item_id origin source_path title content_hash created_at last_modified version tags meta imported_at"
)
ITEM_COLUMNS = ", ".join(f"i.{c}" for c in _RESULT_ITEM_COLUMNS.split())
"""The item columns a result reads: all but `content` (a whole document, for a result that
shows a snippet of one chunk)."""


@dataclass(frozen=True)
class SearchSpec:
    table: str
    match: str
    limit: int
    offset: int
    order_by: OrderBy = "relevance"
    weights: tuple[float, float] = (2.0, 1.0)
    filters: tuple[Filter, ...] = field(default_factory=tuple)
    columns: tuple[FtsColumn, ...] | None = None
    candidates: str | None = None
    """Score only rows matching this expression too (see `plan.py`); None: every match."""
    cap: int | None = None
    """Only the most recently indexed `cap` candidates (or matches, without `candidates`)."""
    flat_score: float | None = None
    """Give every row this bm25 value instead of computing it (a sample of a very common term:
    bm25 would count all of its rows first), so the newest items come first."""


def ident(name: str) -> str:
    if not _IDENT.match(name):
        raise ValueError(f"not a safe SQL identifier: {name!r}")
    return name


def column_match(expression: str, columns: tuple[FtsColumn, ...] | None) -> str:
    """`expression` matched only in these FTS columns (`{title body} : (expr)`); None: in all.

    bm25 then counts only the hits in those columns, so they alone rank the chunks.
    """
    if columns is None:
        return expression
    unknown = [c for c in columns if c not in FTS_COLUMNS]
    if not columns or unknown:
        raise ValueError(f"columns must be some of {FTS_COLUMNS}, got {columns!r}")
    return f"{{{' '.join(dict.fromkeys(columns))}}} : ({expression})"


def build_search_sql(spec: SearchSpec) -> tuple[str, list[Any]]:
    """One page of items ranked by their best chunk, with the total number of matching items.

    Fetches `limit + 1` rows so the caller knows whether another page exists.
    """
    p = ident(spec.table)
    chunk_where, chunk_params = _chunk_filters(spec)
    best = f"""m AS MATERIALIZED (
    SELECT rowid AS chunk_rowid, {_score(p, spec)} AS b
    FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ?{_candidates(p, spec)}
), best AS (
    SELECT c.item_rowid AS item_rowid, m.chunk_rowid AS chunk_rowid, MIN(m.b) AS b, COUNT(*) AS n
    FROM m JOIN {p}_chunks AS c ON c.id = m.chunk_rowid
    WHERE {" AND ".join(chunk_where or ["1"])}
    GROUP BY c.item_rowid
)"""
    params: list[Any] = [] if spec.flat_score is None else [spec.flat_score]
    params.append(column_match(spec.match, spec.columns))
    if spec.candidates is not None:
        params.append(column_match(spec.candidates, spec.columns))
    if spec.cap is not None:
        params.append(spec.cap)
    return _page_sql(p, spec, best), params + chunk_params + _page_params(spec)


def build_sample_sql(spec: SearchSpec, limit: int, before: int | None = None) -> tuple[str, list[Any]]:
    """The newest `limit` chunks matching `spec.match` (chunk filters applied; older than rowid
    `before` when given), each with its item, newest first: an unranked sample read in batches
    until it has the items it wants (`plan.py`)."""
    p = ident(spec.table)
    where = [f"{p}_chunks_fts MATCH ?"]
    params: list[Any] = [column_match(spec.match, spec.columns)]
    if before is not None:
        where.append(f"{p}_chunks_fts.rowid < ?")
        params.append(before)
    chunk_where, chunk_params = _chunk_filters(spec)
    sql = (
        f"SELECT {p}_chunks_fts.rowid, c.item_rowid FROM {p}_chunks_fts JOIN {p}_chunks AS c "
        f"ON c.id = {p}_chunks_fts.rowid WHERE {' AND '.join(where + chunk_where)} "
        f"ORDER BY {p}_chunks_fts.rowid DESC LIMIT ?"
    )
    return sql, [*params, *chunk_params, limit]


RankedRow = tuple[int, int, float, int]
"""An item ranked elsewhere (`memory_index`): item rowid, best chunk rowid, bm25, matching chunks."""
VALUES_ROWS = 500
"""Up to this many ranked items are bound as a VALUES list (no parsing); more, as one JSON
array (SQLite binds at most 32,766 values)."""


def build_ranked_sql(spec: SearchSpec, ranked: list[RankedRow]) -> tuple[str, list[Any]]:
    """`build_search_sql` for items already ranked elsewhere. Chunk filters, columns and
    `match` do not apply (the ranking did that); item filters, order and paging do."""
    p = ident(spec.table)
    params: list[Any]
    if len(ranked) <= VALUES_ROWS:
        rows = ", ".join(["(?, ?, ?, ?)"] * len(ranked)) or "(NULL, NULL, NULL, NULL)"
        best = f"""best AS (
    SELECT column1 AS item_rowid, column2 AS chunk_rowid, column3 AS b, column4 AS n
    FROM (VALUES {rows}) WHERE column1 IS NOT NULL
)"""
        params = [value for row in ranked for value in row]
    else:
        best = """best AS (
    SELECT json_extract(value, '$[0]') AS item_rowid, json_extract(value, '$[1]') AS chunk_rowid,
        json_extract(value, '$[2]') AS b, json_extract(value, '$[3]') AS n
    FROM json_each(?)
)"""
        params = [json.dumps(ranked)]  # floats round-trip exactly
    return _page_sql(p, spec, best), params + _page_params(spec)


def _page_sql(p: str, spec: SearchSpec, best: str) -> str:
    """The page of the `best` CTE's items (item_rowid, chunk_rowid, b, n): each row is the item's
    columns, the hit's (ending with `total`), then the hit chunk's columns (`store.sqlite.hits`)."""
    item_where = clauses([f for f in spec.filters if not f.on_chunk])[0] or ["1"]
    order = (
        "b ASC, i.last_modified DESC, i.id ASC"
        if spec.order_by == "relevance"
        else "i.last_modified DESC, b ASC, i.id ASC"
    )
    order = order.replace("i.last_modified", "modified").replace("i.id", "item_rowid")
    return f"""
WITH {best}, page AS (
    SELECT best.*, i.last_modified AS modified, COUNT(*) OVER () AS total
    FROM best JOIN {p}_items AS i{_page_index(p, spec)} ON i.id = best.item_rowid
    WHERE {" AND ".join(item_where)}
    ORDER BY {order}
    LIMIT ? OFFSET ?
)
SELECT {ITEM_COLUMNS}, page.chunk_rowid AS chunk_rowid, page.b AS b, page.n AS n, page.total AS total, c.*
FROM page JOIN {p}_items AS i ON i.id = page.item_rowid JOIN {p}_chunks AS c ON c.id = page.chunk_rowid
ORDER BY {order}"""


def _chunk_filters(spec: SearchSpec) -> tuple[list[str], list[Any]]:
    """The chunk filters' WHERE clauses (on `c.`) and their bound values, in order."""
    return clauses([f for f in spec.filters if f.on_chunk])


def _page_params(spec: SearchSpec) -> list[Any]:
    params = clauses([f for f in spec.filters if not f.on_chunk])[1]
    return [*params, spec.limit + 1, spec.offset]


def _page_index(p: str, spec: SearchSpec) -> str:
    """Without item filters, the page needs only `last_modified`: read it from the covering
    index (migration 2) rather than the row, past its `content`."""
    if any(not f.on_chunk for f in spec.filters):
        return ""
    return f" INDEXED BY {p}_items_page"


def _score(p: str, spec: SearchSpec) -> str:
    if spec.flat_score is not None:
        return "?"
    return f"bm25({p}_chunks_fts, {float(spec.weights[0])}, {float(spec.weights[1])})"


def _candidates(p: str, spec: SearchSpec) -> str:
    """The candidate restriction. `+rowid` keeps it out of FTS5's own plan: pushed down as a
    rowid lookup, FTS5 would restart the whole query (and bm25's term counts) per candidate."""
    limit = " ORDER BY rowid DESC LIMIT ?" if spec.cap is not None else ""
    if spec.candidates is None:
        return limit
    return f"\n      AND +rowid IN (SELECT rowid FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ?{limit})"


def build_term_scores_sql(
    table: str, weights: tuple[float, float], terms: list[str]
) -> tuple[str, list[Any]]:
    """Each FTS term expression's rows and their bm25 for that term alone: `(n, rowid, bm25)`."""
    p = ident(table)
    score = f"bm25({p}_chunks_fts, {float(weights[0])}, {float(weights[1])})"
    one = f"SELECT {{n}}, rowid, {score} FROM {p}_chunks_fts WHERE {p}_chunks_fts MATCH ?"
    return " UNION ALL ".join(one.format(n=n) for n in range(len(terms))), list(terms)


def build_anchor_sql(table: str) -> str:
    """The best-matching chunk of one item, for a get with a query but no loc."""
    p = ident(table)
    return (
        f"SELECT c.id FROM {p}_chunks_fts JOIN {p}_chunks AS c ON c.id = {p}_chunks_fts.rowid "
        f"WHERE {p}_chunks_fts MATCH ? AND c.item_rowid = ? ORDER BY bm25({p}_chunks_fts) LIMIT 1"
    )


def build_passages_sql(
    table: str, weights: tuple[float, float], items: int, leads: int, chunk_filters: list[str]
) -> str:
    """The next best chunks of `items` item rowids matching the query, past their `leads` chunks,
    at most a bound number per item; each row shaped as a page row (`_page_sql`:
    item columns, the hit's chunk_rowid, b, n, total, then the chunk's). Pure."""
    p = ident(table)
    marks = ", ".join("?" * items)
    lead_marks = ", ".join("?" * leads)
    where = " AND ".join([f"c.item_rowid IN ({marks})", f"c.id NOT IN ({lead_marks})", *chunk_filters])
    score = f"bm25({p}_chunks_fts, {float(weights[0])}, {float(weights[1])})"
    return f"""
WITH m AS MATERIALIZED (
    SELECT c.id AS chunk_rowid, c.item_rowid AS item_rowid, {score} AS b
    FROM {p}_chunks_fts JOIN {p}_chunks AS c ON c.id = {p}_chunks_fts.rowid
    WHERE {p}_chunks_fts MATCH ? AND {where}
), ranked AS (
    SELECT m.*, ROW_NUMBER() OVER (PARTITION BY item_rowid ORDER BY b, chunk_rowid) AS k FROM m
)
SELECT {ITEM_COLUMNS}, ranked.chunk_rowid AS chunk_rowid, ranked.b AS b, NULL AS n, NULL AS total, c.*
FROM ranked JOIN {p}_items AS i ON i.id = ranked.item_rowid JOIN {p}_chunks AS c ON c.id = ranked.chunk_rowid
WHERE ranked.k <= ?
ORDER BY ranked.item_rowid, ranked.k"""
