"""A search's source filters as data; each store compiles them into its own SQL. Pure.

A source turns its search options into these predicates (`ChunkedSource.search_scope`); the
SQLite store compiles them for its tables (`lexical/filters.py`), the PostgreSQL store for its
own (`storage/postgres/store/filters.py`). A filter holds on the item or on the chunk
(`on_chunk`): chunk filters apply before an item's best chunk is picked, item filters before
the page is cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

META_KEY = re.compile(r"^[a-z_][a-z0-9_]*$")
Comparison = Literal["<", "<=", ">="]


def meta_key(key: str) -> str:
    """`key` when it is a plain name (it is written into SQL as a JSON path); else ValueError."""
    if not META_KEY.match(key):
        raise ValueError(f"not a meta key: {key!r}")
    return key


@dataclass(frozen=True)
class TagIn:
    """Items carrying any of `tags` (compared lower-cased)."""

    tags: tuple[str, ...]
    on_chunk: ClassVar[bool] = False


@dataclass(frozen=True)
class MetaIn:
    """Rows whose meta `key` is one of `values` (`lower`: the stored value lower-cased first),
    in the item's meta or, `on_chunk`, the chunk's."""

    key: str
    values: tuple[str, ...]
    lower: bool = False
    on_chunk: bool = False

    def __post_init__(self) -> None:
        meta_key(self.key)


@dataclass(frozen=True)
class FieldIn:
    """Chunks of any of these fields (a prompt's `name`, `details`…)."""

    fields: tuple[str, ...]
    on_chunk: ClassVar[bool] = True


@dataclass(frozen=True)
class CreatedAt:
    """Items whose `created_at` compares so (`op`) with the instant `bound` (ISO 8601)."""

    op: Comparison
    bound: str
    on_chunk: ClassVar[bool] = False


@dataclass(frozen=True)
class AnyOf:
    """Rows passing any of `filters` (all on the item, or all on the chunk)."""

    filters: tuple[TagIn | MetaIn | FieldIn | CreatedAt, ...]

    def __post_init__(self) -> None:
        if not self.filters or len({f.on_chunk for f in self.filters}) != 1:
            raise ValueError("AnyOf needs filters all on the item or all on the chunk")

    @property
    def on_chunk(self) -> bool:
        return self.filters[0].on_chunk


Filter = TagIn | MetaIn | FieldIn | CreatedAt | AnyOf
