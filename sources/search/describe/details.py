"""A result's details: its snippet centred on the first match in its hit chunk, the query terms
it matched, and the fields asked for beyond the compact default (`content`, `reason`).

`describe` (`results.py`) fills them at once, or with `details = False` leaves a `Details`
record on each result: plain data (the hit chunk, the query, its matcher, the terms the ranking
knows the chunk matches), which `fill_details` turns into the details later, for callers that
keep only some results (knowledge_search merges several sources' pages first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...models import ResultItem
from ...text.reasons import match_reason
from ...text.snippets import make_snippet
from ..query import ParsedQuery
from ..stemming import Matches, QueryMatcher


@dataclass(frozen=True)
class Details:
    """What a result's details are made of."""

    chunk: Mapping[str, Any]
    """The hit chunk's row (`body`, `title`)."""
    query: ParsedQuery
    matcher: QueryMatcher
    snippet_length: int
    fields: frozenset[str]
    """The search's `fields`."""
    terms: list[str] | None = None
    """The terms the ranking knows the chunk matches (None: looked for in its text)."""


def fill_details(result: ResultItem) -> None:
    """Compute the details a search left on `result` for later (`details = False`); a result
    (or a copy of one: `model_copy` keeps the record) is filled once."""
    details, result._details = result._details, None
    if details is not None:
        describe_later(result, details)


def describe_later(result: ResultItem, details: Details) -> None:
    """`result`'s details, its chunk's matches found now (only the snippet's place when the
    ranking knows the chunk's terms)."""
    chunk = details.chunk
    if details.terms is None:
        found = details.matcher.find(chunk["body"], chunk["title"])
    else:
        found = Matches(details.matcher.first_match(chunk["body"], details.terms), details.terms)
    describe_with(result, details, found)


def describe_with(result: ResultItem, details: Details, found: Matches) -> None:
    """`result`'s details from the matches `found` in its hit chunk."""
    chunk = details.chunk
    lead = result.lead(found.first is not None)
    if lead is None:
        result.snippet = make_snippet(chunk["body"], details.snippet_length, found.first)
    else:  # the source shows its lead text (a card's description) for a hit on the name alone
        result.snippet, result.loc = make_snippet(lead[0], details.snippet_length), lead[1]
    result.matched_terms = list(dict.fromkeys(found.terms))  # an expanded query says its terms twice
    _fill(result, details, result.matched_terms)


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
