"""Turn plain user text into a safe FTS5 MATCH expression.

Pure: no I/O. The rules: every term is quoted (so FTS5 operators, column filters and
punctuation in user text are only ever words), a "quoted phrase" stays a phrase, a trailing
`*` stays a prefix query, and the terms are OR-ed so bm25 ranks documents by how many and how
rare the matched terms are. Very common English function words are dropped unless the query
has nothing else (they add cost and no ranking signal).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

MAX_QUERY_CHARS = 2000
TOP = "\U0010ffff"
"""Above every character: a prefix's index terms (lexemes) are the range [prefix, prefix + TOP)."""
MAX_TERMS = 64

# Tokens as FTS5's unicode61 tokenizer sees them: runs of letters, digits and marks.
_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)
_PART_RE = re.compile(r'"([^"]*)"|(\S+)')

# A word list reads best as text.
STOP_WORDS = frozenset(
    """a an and are as at be but by for from has have in into is it its of on or that the
    their then there these they this to was were which will with what when where who how
    do does did not no can could would should may might than those been being""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Term:
    """One searchable unit: a single word, a phrase of several words, or a prefix."""

    words: tuple[str, ...]
    prefix: bool = False
    label: str = field(default="", compare=False)
    synonym_of: str = field(default="", compare=False)
    """For a term a glossary added (`glossary/`): the query term it stands for."""

    @property
    def text(self) -> str:
        """The term as the user wrote it (without quotes)."""
        return self.label or " ".join(self.words) + ("*" if self.prefix else "")

    def fts(self) -> str:
        quoted = '"' + " ".join(self.words) + '"'
        return quoted + " *" if self.prefix else quoted


@dataclass(frozen=True)
class ParsedQuery:
    terms: tuple[Term, ...]
    boost: int = 1
    """How many times `terms` repeats the user's own terms before any synonyms: an expanded
    query says its terms twice, so they weigh twice their synonyms in bm25's sum."""

    @property
    def is_empty(self) -> bool:
        return not self.terms

    @property
    def own_terms(self) -> tuple[Term, ...]:
        """The user's terms (once), without the synonyms a glossary added."""
        own = [t for t in self.terms if not t.synonym_of]
        return tuple(own[: len(own) // self.boost])

    @property
    def expansions(self) -> dict[str, list[str]]:
        """Each expanded term and the synonyms added for it, in order."""
        added: dict[str, list[str]] = {}
        for term in self.terms:
            if term.synonym_of:
                added.setdefault(term.synonym_of, []).append(term.text)
        return added

    def match_expression(self) -> str:
        """The FTS5 MATCH string; empty when nothing searchable is left."""
        return " OR ".join(term.fts() for term in self.terms)

    @property
    def term_texts(self) -> list[str]:
        return [term.text for term in self.terms]


def words_of(text: str) -> list[str]:
    """Lowercased words as the unicode61 tokenizer splits them."""
    text = unicodedata.normalize("NFKC", text)
    return [w.lower() for w in _TOKEN_RE.findall(text)]


@functools.lru_cache(maxsize=1024)
def parse_query(text: str) -> ParsedQuery:
    """Parse user text into terms; never raises on any input. Cached: knowledge_search parses
    the same text once per source, and the result is immutable."""
    text = (text or "")[:MAX_QUERY_CHARS]
    # An unbalanced quote closes at the end of the text.
    if text.count('"') % 2:
        text += '"'
    terms: list[Term] = []
    seen: set[Term] = set()
    for match in _PART_RE.finditer(text):
        phrase, bare = match.group(1), match.group(2)
        candidates: list[Term] = []
        if phrase is not None:
            words = words_of(phrase)
            if words:
                candidates.append(Term(tuple(words), label=phrase.strip()))
        else:
            # A word with inner punctuation (pg_dump, e-mail, node.js) is one phrase, as the
            # tokenizer splits it the same way in the indexed text.
            words = words_of(bare)
            if words:
                label = bare.strip(".,;:!?()[]{}'") if not bare.endswith("*") else bare
                candidates.append(Term(tuple(words), prefix=bare.endswith("*"), label=label))
        for term in candidates:
            if term not in seen:
                seen.add(term)
                terms.append(term)
    content = [t for t in terms if len(t.words) > 1 or t.prefix or t.words[0] not in STOP_WORDS]
    chosen = content or terms
    return ParsedQuery(tuple(chosen[:MAX_TERMS]))
