"""A search's source filters as a restriction of the PostgreSQL ranking (`bm25.Restriction`). Pure.

Each source filter (`search.request.Filter`) carries its clause in both dialects: SQLite's for the
files, `Filter.pg` for this store (on `pg_items AS i` / `pg_chunks AS c`, `%s` placeholders). Here
the PostgreSQL clauses become conditions of the ranking itself, so a filtered search ranks only
what passes and cuts its top k after the filter, as the SQLite page does: chunk filters before an
item's best chunk is picked (its `match_count` counts the chunks that pass), item filters before
the cut (the total counts the items that pass). Values stay bound parameters, renamed `f0`, `f1`…
to sit beside the ranking's own named ones; rows are the caller's by `user_id` as well as by
row-level security.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....errors import InvalidArgumentError
from ....search.request import Filter
from ..bm25 import Restriction

CHUNK_EXISTS = """EXISTS (SELECT 1 FROM pg_chunks AS c
    WHERE c.user_id = %(user)s AND c.source = %(source)s AND c.id = scored.chunk AND {where})"""
ITEM_EXISTS = """EXISTS (SELECT 1 FROM pg_items AS i
    WHERE i.user_id = %(user)s AND i.source = %(source)s AND i.id = best.item AND {where})"""


def restriction(
    filters: Sequence[Filter],
    names: Sequence[str],
    columns: tuple[str, ...] | None = None,
    chunks: Sequence[str] = (),
) -> Restriction:
    """The ranking's restriction for `filters` and the searched `columns` (and any further
    `chunks` conditions on `scored`, whose parameters the caller adds); a filter without a
    PostgreSQL form is refused, naming the option it comes from (`names`)."""
    params: dict[str, Any] = {}
    on_chunk = [_named(f, params, names) for f in filters if f.on_chunk]
    on_item = [_named(f, params, names) for f in filters if not f.on_chunk]
    chunk_sql = [*chunks, *([CHUNK_EXISTS.format(where=" AND ".join(on_chunk))] if on_chunk else [])]
    item_sql = [ITEM_EXISTS.format(where=" AND ".join(on_item))] if on_item else []
    return Restriction(" AND ".join(chunk_sql) or "TRUE", " AND ".join(item_sql) or "TRUE", params, columns)


def _named(f: Filter, params: dict[str, Any], names: Sequence[str]) -> str:
    """`f`'s PostgreSQL clause with its `%s` placeholders named (`%(f0)s`…), its values in `params`."""
    if f.pg is None:
        named = ", ".join(names) or "this filter"
        raise InvalidArgumentError(
            names[0] if names else "filters", f"{named}: not supported on the PostgreSQL item store"
        )
    pieces = f.pg.split("%s")
    if len(pieces) != len(f.params) + 1:
        raise ValueError(
            f"a filter's PostgreSQL clause binds {len(pieces) - 1} values, it has {len(f.params)}"
        )
    out = [pieces[0]]
    for value, piece in zip(f.params, pieces[1:], strict=True):
        key = f"f{len(params)}"
        params[key] = value
        out.append(f"%({key})s{piece}")
    return f"({''.join(out)})"
