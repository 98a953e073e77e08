"""A result's details: its snippet centred on the first match in its hit chunk, the query terms
it matched, and the fields asked for beyond the compact default (`content`, `reason`).

`describe` (`results.py`) fills them at once, or with `details = False` leaves a `Details`
record on each result: plain data (the hit chunk, the query, its matcher, the terms the ranking
knows the chunk matches), which `fill_details` turns into the details later, for callers that
keep only some results (knowledge_search merges several sources' pages first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...models import ResultItem
from ...text.reasons import match_reason
from ...text.snippets import make_snippet
from ..query import ParsedQuery
from ..stemming import Matches, QueryMatcher


@dataclass(slots=True)
class Details:
    """What a result's details are made of (not changed once made: a plain record, one per
    fetched hit of knowledge_search, so not frozen, whose checks cost more than the rest)."""

    chunk: Mapping[str, Any]
    """The hit chunk's row (`body`, `title`)."""
    query: ParsedQuery
    matcher: QueryMatcher
    snippet_length: int
    fields: frozenset[str]
    """The search's `fields`."""
    terms: list[str] | None = None
    """The terms the ranking knows the chunk matches (None: looked for in its text)."""
    collapsed: bool = False
    """The chunk's text is its own whitespace collapse (found when its duplicate key was made):
    its snippet is cut without looking through it again (`make_snippet`'s `collapsed`)."""


def fill_details(results: Iterable[ResultItem]) -> None:
    """Compute the details a search left on `results` for later (`details = False`); a result
    (or a copy of one: `model_copy` keeps the record) is filled once."""
    later = []
    for result in results:
        private = result.private
        details, private["_details"] = private["_details"], None
        if details is not None:
            later.append((result, details))
    describe_later(later)


def describe_later(later: Sequence[tuple[ResultItem, Details]]) -> None:
    """Each result's details, its chunk's matches found now (only the snippet's place when the
    ranking knows the chunk's terms), each query matcher's texts looked through at once."""
    by_matcher: dict[int, list[tuple[ResultItem, Details]]] = {}
    for pair in later:
        by_matcher.setdefault(id(pair[1].matcher), []).append(pair)
    for pairs in by_matcher.values():
        matcher = pairs[0][1].matcher
        known = [(r, d) for r, d in pairs if d.terms is not None]
        firsts = matcher.first_matches([(d.chunk["body"], d.terms) for _, d in known])
        for (result, details), first in zip(known, firsts, strict=True):
            describe_with(result, details, Matches(first, details.terms or []))
        unknown = [(r, d) for r, d in pairs if d.terms is None]
        found = matcher.find_all([(d.chunk["body"], d.chunk["title"]) for _, d in unknown])
        for (result, details), matches in zip(unknown, found, strict=True):
            describe_with(result, details, matches)


def describe_with(result: ResultItem, details: Details, found: Matches) -> None:
    """`result`'s details from the matches `found` in its hit chunk."""
    chunk = details.chunk
    lead = result.lead(found.first is not None)
    if lead is None:
        result.snippet = make_snippet(chunk["body"], details.snippet_length, found.first, details.collapsed)
    else:  # the source shows its lead text (a card's description) for a hit on the name alone
        result.snippet, result.loc = make_snippet(lead[0], details.snippet_length), lead[1]
    # an expanded query says its terms twice
    result.matched_terms = matched = list(dict.fromkeys(found.terms))
    if details.fields:
        _fill(result, details, matched)


def _fill(result: ResultItem, details: Details, matched: list[str]) -> None:
    """The fields asked for beyond the compact default: the hit chunk's text, and the reason."""
    chunk, fields, matcher, query = details.chunk, details.fields, details.matcher, details.query
    if "content" in fields:
        result.content = str(chunk["body"])
    if "reason" in fields:
        in_title = set(matcher.find(str(chunk["title"] or result.title)).terms) if matched else set()
        in_body = set(matcher.find(str(chunk["body"])).terms) if matched else set()
        tags = {t.lower() for t in result.tags}
        result.reason = match_reason(
            [t for t in matched if t in in_title],
            [t for t in matched if t in in_body],
            [t.text for t in query.own_terms if t.text.lower() in tags],
            semantic=result.score_type == "dense" or (result.score_type == "hybrid" and not matched),
            synonym_of={t.text: t.synonym_of for t in query.terms if t.synonym_of},
        )
