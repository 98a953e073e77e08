"""A search's filters (`storage/store/filters.py`) as SQLite clauses on the page's item (`i.`) and chunk
(`c.`) rows, with their bound values in order. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...storage.store.filters import AnyOf, CreatedAt, FieldIn, Filter, MetaIn, TagIn


def clause(f: Filter) -> tuple[str, list[Any]]:
    """`f` as one SQLite condition and its values."""
    if isinstance(f, AnyOf):
        parts = [clause(one) for one in f.filters]
        return "(" + " OR ".join(sql for sql, _ in parts) + ")", [v for _, values in parts for v in values]
    if isinstance(f, TagIn):
        sql = f"EXISTS (SELECT 1 FROM json_each(i.tags) AS t WHERE lower(t.value) IN ({_marks(f.tags)}))"
        return sql, list(f.tags)
    if isinstance(f, MetaIn):
        value = f"json_extract({'c' if f.on_chunk else 'i'}.meta, '$.{f.key}')"
        value = f"lower({value})" if f.lower else value
        return f"{value} IN ({_marks(f.values)})", list(f.values)
    if isinstance(f, FieldIn):
        return f"c.field IN ({_marks(f.fields)})", list(f.fields)
    assert isinstance(f, CreatedAt)
    return f"julianday(i.created_at) {f.op} julianday(?)", [f.bound]


def clauses(filters: Sequence[Filter]) -> tuple[list[str], list[Any]]:
    """Each filter's condition, and all their values in order."""
    out: list[str] = []
    values: list[Any] = []
    for f in filters:
        sql, params = clause(f)
        out.append(sql)
        values += params
    return out, values


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))
