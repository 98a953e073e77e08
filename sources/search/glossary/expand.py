"""The expand stage: add a glossary's synonyms to a query.

A glossary term matches where its words occur in a row in the query text (longest first, each
word in one match). Each match adds at most `PER_TERM` synonyms, as terms of their own. The
user's terms are said twice in the expanded query (`ParsedQuery.boost`): bm25 sums over the
query's terms, so a user's word weighs twice a synonym, and the scores divide the boost out again
(`results.py`), so a hit on the user's words scores as it would unexpanded. With no glossary, or
nothing in it matching, the query passes unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..query import MAX_TERMS, ParsedQuery, Term, words_of
from ..request import SearchContext
from .file import GLOSSARY_FILE, MAX_WORDS, Glossary, Key, combined, read_glossary

PER_TERM = 2
"""Synonyms added per matched glossary term."""
BOOST = 2


def expand_query(query: ParsedQuery, text: str, entries: Mapping[Key, tuple[str, ...]]) -> ParsedQuery:
    """`query` (parsed from `text`) with the synonyms of the glossary terms found in `text`. Pure."""
    if not entries or query.is_empty or query.boost != 1:
        return query
    have = {t.words for t in query.terms}
    added: list[Term] = []
    room = MAX_TERMS - BOOST * len(query.terms)
    labels = {t.words: t.text for t in query.terms}
    for key in _matches(words_of(text), entries):
        origin = labels.get(key, " ".join(key))
        for synonym in entries[key][:PER_TERM]:
            words = tuple(words_of(synonym))
            if words and words not in have and len(added) < room:
                have.add(words)
                added.append(Term(words, label=synonym, synonym_of=origin))
    if not added:
        return query
    return ParsedQuery(query.terms * BOOST + tuple(added), boost=BOOST)


def _matches(words: list[str], entries: Mapping[Key, tuple[str, ...]]) -> list[Key]:
    """The glossary keys found in `words`, left to right, the longest at each place."""
    found: list[Key] = []
    at = 0
    while at < len(words):
        for size in range(min(MAX_WORDS, len(words) - at), 0, -1):
            key = tuple(words[at : at + size])
            if key in entries:
                if key not in found:
                    found.append(key)
                at += size
                break
        else:
            at += 1
    return found


def described(query: ParsedQuery) -> list[str]:
    """The response's `expanded_terms`: each expanded term and what it added ("bp → blood
    pressure, hypertension")."""
    return [f"{term} → {', '.join(synonyms)}" for term, synonyms in query.expansions.items()]


def glossary_of(ctx: SearchContext) -> Glossary:
    """The server's glossary (`ctx.glossary_file`) under the searching user's own, which sits
    beside their databases; read once for all the sources of a call that shares
    `SearchRequest.glossaries` (knowledge_search), else once per search."""
    user_file = _user_glossary_file(Path(ctx.store.path))
    key = (ctx.glossary_file, user_file)
    read = ctx.request.glossaries
    if read is not None and key in read:
        return read[key]
    server = read_glossary(ctx.glossary_file, "the server glossary") if ctx.glossary_file else None
    user = read_glossary(user_file) if user_file is not None else Glossary()
    glossary = combined(server, user) if server is not None else user
    if read is not None:
        read[key] = glossary
    return glossary


def _user_glossary_file(db_path: Path) -> Path | None:
    if db_path.suffix != ".db":  # an in-memory or temporary database: no user folder
        return None
    return db_path.parent / GLOSSARY_FILE


class GlossaryExpander:
    """expand: the glossaries' synonyms, unless the request says `expand = False`."""

    async def expand(self, ctx: SearchContext, query: ParsedQuery) -> ParsedQuery:
        ctx.query = query
        if not ctx.request.expand:
            return query
        glossary = glossary_of(ctx)
        if glossary.problem:
            ctx.warnings.append(glossary.problem)
        expanded = expand_query(query, ctx.request.query, glossary.entries)
        if expanded is not query:
            ctx.expanded_terms = described(expanded)
            ctx.query = expanded
        return expanded
