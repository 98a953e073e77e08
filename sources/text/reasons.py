"""Why a search result matched, in a few words (`fields: ["reason"]`). Pure.

"title and body match 'levain'", "body matches 'blood pressure' (for 'bp')", "tag match 'sourdough'",
"semantic match": what matched where, said once per place, the terms quoted as the query has
them. A glossary synonym names the term it stands for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MAX_TERMS_SAID = 3


def _quoted(terms: Sequence[str], synonym_of: Mapping[str, str]) -> str:
    said = []
    for term in terms[:MAX_TERMS_SAID]:
        origin = synonym_of.get(term)
        said.append(f"'{term}' (for '{origin}')" if origin else f"'{term}'")
    more = len(terms) - MAX_TERMS_SAID
    return ", ".join(said) + (f" +{more}" if more > 0 else "")


def match_reason(
    title: Sequence[str],
    body: Sequence[str],
    tags: Sequence[str] = (),
    *,
    semantic: bool = False,
    synonym_of: Mapping[str, str] | None = None,
) -> str:
    """The reason for a hit whose `title` and `body` matched these query terms (in query order),
    whose tags equal `tags` of them, and which the embeddings found (`semantic`)."""
    synonyms = synonym_of or {}
    both = [t for t in title if t in body]
    only_title = [t for t in title if t not in body]
    only_body = [t for t in body if t not in title]
    parts = []
    if both:
        parts.append(f"title and body match {_quoted(both, synonyms)}")
    if only_title:
        parts.append(f"title matches {_quoted(only_title, synonyms)}")
    if only_body:
        parts.append(f"body matches {_quoted(only_body, synonyms)}")
    if tags:
        parts.append(f"tag match {_quoted(tags, synonyms)}")
    if semantic:
        parts.append("semantic match" if not parts else "and semantic match")
    return "; ".join(parts).replace("; and semantic", " and semantic") or "query match"
