"""A query's terms as `bm25.rank`'s ranking statement takes them (`ranking.py`): which are words,
prefixes and phrases, which score (FTS5 leaves a term in most chunks out), FTS5's idf, the bound
values of the statement, and its rows as the `Ranked` the SQLite ranking returns. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....search.lexical.memory_index import MAX_TERM_BITS, Ranked
from ....search.query import TOP, ParsedQuery, Term
from ....search.stemming import stems
from ..phrases import PhraseHits

K1 = 1.2
B = 0.75


@dataclass
class TermPlan:
    """The query's terms as the SQL reads them: plain words, prefixes, phrases (scored here)."""

    words: list[tuple[int, str]]
    prefixes: list[tuple[int, str]]
    phrases: list[tuple[int, Term]]


def idf(rows: int, chunks: int) -> float:
    """FTS5's idf of a term in `rows` of `chunks` rows."""
    value = math.log((chunks - rows + 0.5) / (rows + 0.5))
    return value if value > 0 else 1e-6


def plan(query: ParsedQuery) -> TermPlan:
    """Which terms are plain words, prefixes of one word and phrases, with their index terms."""
    out = TermPlan([], [], [])
    for n, term in enumerate(query.terms):
        if len(term.words) > 1:
            out.phrases.append((n, term))
        elif term.prefix:
            out.prefixes.append((n, stems(term.words)[0]))
        else:
            out.words.append((n, stems(term.words)[0]))
    return out


def kept(rows: list[int], chunks: int) -> set[int]:
    """The terms scored: those in at most half the chunks, else every term that matches."""
    present = {n for n, r in enumerate(rows) if r}
    return {n for n in present if rows[n] * 2 <= chunks} or present


def bit(n: int) -> int:
    return 1 << n if n < MAX_TERM_BITS else 0


def params(
    source: str,
    user_id: str,
    terms: TermPlan,
    hits: list[PhraseHits],
    kept: set[int],
    rows: list[int],
    chunks: int,
    tokens: int,
    weights: tuple[float, float],
    want: int,
) -> dict[str, Any]:
    words = [(n, w) for n, w in terms.words if n in kept]
    prefixes = [(n, p) for n, p in terms.prefixes if n in kept]
    phrase = [(n, h) for (n, _), h in zip(terms.phrases, hits, strict=True) if n in kept]
    flat = [(n, *c) for n, h in phrase for c in h.chunks]
    avgdl = tokens / chunks if chunks else 0.0
    return {
        "user": user_id,
        "source": source,
        "words": [w for _, w in words],
        "word_ns": [n for n, _ in words],
        "lows": [p for _, p in prefixes],
        "highs": [p + TOP for _, p in prefixes],
        "prefix_ns": [n for n, _ in prefixes],
        **{key: [c[i] for c in flat] for i, key in enumerate(PHRASE_COLUMNS)},
        "wt": weights[0],
        "wb": weights[1],
        "idf": [idf(r, chunks) for r in rows],
        "k1": K1,
        "k1p": K1 + 1.0,
        # k1 * (1 - b + b * dl / avgdl), as (1 - b) + (b / avgdl) * dl (no tokens: no postings)
        "one_b": 1.0 - B,
        "b_avg": B / avgdl if avgdl else 0.0,
        "bits": MAX_TERM_BITS,
        "want": max(1, want),
    }


PHRASE_COLUMNS = (
    "phrase_ns",
    "phrase_chunks",
    "phrase_items",
    "phrase_titles",
    "phrase_bodies",
    "phrase_dls",
)


def norm_rows(term: Term, rows: int, words: dict[str, int]) -> int:
    if len(term.words) > 1 and not term.prefix:
        return min(words.get(s, 0) for s in stems(term.words))
    return rows


def ranked(found: list[Any], extra: dict[int, int]) -> Ranked:
    """The rows of `RANK_SQL` as the `Ranked` the SQLite ranking returns (with the `extra` term
    bits of each chunk)."""
    items = np.array([r[0] for r in found], dtype=np.int64)
    chunks = np.array([r[1] for r in found], dtype=np.int64)
    order = np.argsort(chunks, kind="stable")
    return Ranked(
        item_rowids=items,
        chunk_rowids=chunks,
        bm25=-np.array([float(r[2]) for r in found], dtype=np.float64),
        matching_chunks=np.array([int(r[3]) for r in found], dtype=np.int64),
        total=int(found[0][5]) if found else 0,
        rowids=chunks[order],
        term_bits=np.array([float(r[4] | extra.get(r[1], 0)) for r in found], dtype=np.float64)[order],
    )
