"""A search's source filters as a restriction of the PostgreSQL ranking (`bm25.Restriction`). Pure.

Each filter (`storage/store/filters.py`) is compiled here into a condition on `pg_items AS i` /
`pg_chunks AS c` (`tags` and `meta` are jsonb), and the conditions become part of the ranking
itself, so a filtered search ranks only what passes and cuts its top k after the filter, as the
SQLite page does: chunk filters before an item's best chunk is picked (its `match_count` counts
the chunks that pass), item filters before the cut (the total counts the items that pass).
Values stay bound parameters, named `f0`, `f1`… to sit beside the ranking's own named ones;
rows are the caller's by `user_id` as well as by row-level security.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...store.filters import AnyOf, CreatedAt, FieldIn, Filter, MetaIn, TagIn
from ..bm25 import Restriction

CHUNK_EXISTS = """EXISTS (SELECT 1 FROM pg_chunks AS c
    WHERE c.user_id = %(user)s AND c.source = %(source)s AND c.id = scored.chunk AND {where})"""
ITEM_EXISTS = """EXISTS (SELECT 1 FROM pg_items AS i
    WHERE i.user_id = %(user)s AND i.source = %(source)s AND i.id = best.item AND {where})"""

TAGS_IN = "WHERE lower(t.value) IN ({})"


def restriction(
    filters: Sequence[Filter],
    columns: tuple[str, ...] | None = None,
    chunks: Sequence[str] = (),
) -> Restriction:
    """The ranking's restriction for `filters` and the searched `columns` (and any further
    `chunks` conditions on `scored`, whose parameters the caller adds)."""
    params: dict[str, Any] = {}
    on_chunk = [f"({clause(f, params)})" for f in filters if f.on_chunk]
    on_item = [f"({clause(f, params)})" for f in filters if not f.on_chunk]
    chunk_sql = [*chunks, *([CHUNK_EXISTS.format(where=" AND ".join(on_chunk))] if on_chunk else [])]
    item_sql = [ITEM_EXISTS.format(where=" AND ".join(on_item))] if on_item else []
    return Restriction(" AND ".join(chunk_sql) or "TRUE", " AND ".join(item_sql) or "TRUE", params, columns)


def clause(f: Filter, params: dict[str, Any]) -> str:
    """`f` as one PostgreSQL condition, its values added to `params` under new names."""
    if isinstance(f, AnyOf):
        return "(" + " OR ".join(clause(one, params) for one in f.filters) + ")"
    if isinstance(f, TagIn):
        tags = _named(f.tags, params)
        return f"EXISTS (SELECT 1 FROM jsonb_array_elements_text(i.tags) AS t(value) {TAGS_IN.format(tags)})"
    if isinstance(f, MetaIn):
        value = f"({'c' if f.on_chunk else 'i'}.meta ->> '{f.key}')"
        value = f"lower{value}" if f.lower else value
        return f"{value} IN ({_named(f.values, params)})"
    if isinstance(f, FieldIn):
        return f"c.field IN ({_named(f.fields, params)})"
    assert isinstance(f, CreatedAt)
    return f"i.created_at::timestamptz {f.op} {_named((f.bound,), params)}::timestamptz"


def _named(values: Sequence[Any], params: dict[str, Any]) -> str:
    """Placeholders for `values` (`%(f0)s`…), their values in `params`."""
    names = []
    for value in values:
        key = f"f{len(params)}"
        params[key] = value
        names.append(f"%({key})s")
    return ",".join(names)
