"""A transaction's postings and counts, kept until it commits (`writing.PgItemWriter`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..postings import blocks
from ..tokens import Indexed


@dataclass
class Batch:
    """Postings and counts of the items written and removed in a transaction, written at once
    before it commits (one statement each, not per item). Counts of removed postings are
    negative: the same upsert (by the primary key, row by row: no plan to go wrong) adds both.
    Postings go in by INSERT, not COPY: PostgreSQL refuses COPY FROM under row-level security."""

    postings: dict[str, list[blocks.TermPosting]] = field(default_factory=dict)
    """Each term's postings, in the order written (`tokens.index`)."""
    chunks_of: blocks.Chunks = field(default_factory=lambda: blocks.Chunks([], [], []))
    """The chunks the postings are of, by their place in the batch."""
    docs: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    tokens: int = 0
    gone: set[str] = field(default_factory=set)
    """Terms whose count went down: forgotten if it reached 0."""

    def clear(self) -> None:
        self.postings, self.docs, self.chunks, self.tokens, self.gone = {}, {}, 0, 0, set()
        self.chunks_of = blocks.Chunks([], [], [])

    def add(self, indexed: Indexed, ids: list[int], items: list[int]) -> None:
        """Queue the postings of chunks (rowids `ids`, of items `items`) and count them."""
        offset = len(self.chunks_of.ids)
        self.chunks_of.ids.extend(ids)
        self.chunks_of.items.extend(map(str, items))
        self.chunks_of.lengths.extend(map(str, indexed.lengths))
        postings, docs = self.postings, self.docs
        for lexeme, mine in indexed.postings.items():
            if offset:
                mine = [(place + offset, title, body, at) for place, title, body, at in mine]
            postings.setdefault(lexeme, []).extend(mine)
            docs[lexeme] = docs.get(lexeme, 0) + len(mine)
        self.chunks += len(ids)
        self.tokens += sum(indexed.lengths)
