"""What kind of query this is, and which retrievers answer it. Pure: no I/O.

- `exact`: the user asks for these very characters: a "quoted phrase", a prefix*, an
  identifier (`pg_dump`, `getUserName`, `node.js`), an error code (`E1234`, `0x80070005`,
  `HTTP-404`), a file name (`report.pdf`). bm25 alone answers it; embeddings would only
  add near-misses.
- `semantic`: a question or statement in natural language (five words or more, or a question
  word or mark, none of the above): words may differ from the text that answers it.
- `mixed`: the rest (a few keywords): both retrievers, fused.

`mode` overrides the choice: `lexical`, `semantic` (embeddings alone) or `hybrid` (both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..request import SearchMode

QueryType = Literal["exact", "semantic", "mixed"]

_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are does do did can should".split()  # noqa: SIM905
)
_FILE_NAME = re.compile(r"^[\w\-]+\.[A-Za-z][A-Za-z0-9]{0,4}$")
_IDENTIFIER = re.compile(
    r"""^(?:
        \w+_\w+                          # snake_case, SCREAMING_CASE
      | [a-z]+[A-Z]\w*                   # camelCase
      | [A-Z][a-z]+[A-Z]\w*              # PascalCase with an inner capital
      | \w+(?:\.\w+)+\(?\)?               # dotted.names, calls()
      | \w+\(\)                          # call()
      | 0x[0-9A-Fa-f]+                   # hex codes
      | [A-Za-z]{1,6}-?\d{2,}            # error codes: E1234, HTTP-404, CVE2024
      | \d+[A-Za-z]+\d+\w*               # mixed digit-letter codes
    )$""",
    re.VERBOSE,
)
_WORD = re.compile(r"\S+")
SEMANTIC_WORDS = 5


@dataclass(frozen=True)
class Route:
    """Which retrievers a search runs."""

    lexical: bool
    dense: bool


def query_type(text: str) -> QueryType:
    """The query's type, from the text as the user wrote it."""
    if '"' in text:
        return "exact"
    words = _WORD.findall(text.strip())
    if not words:
        return "mixed"
    bare = [w.strip(".,;:!?()[]{}'") for w in words]
    if any(w.endswith("*") for w in words) or any(_FILE_NAME.match(w) or _IDENTIFIER.match(w) for w in bare):
        return "exact"
    question = words[0].lower() in _QUESTION_WORDS or text.rstrip().endswith("?")
    if question or len(words) >= SEMANTIC_WORDS:
        return "semantic"
    return "mixed"


def route(mode: SearchMode, kind: QueryType) -> Route:
    """The retrievers for `mode` (`auto`: by the query's type)."""
    if mode == "lexical":
        return Route(lexical=True, dense=False)
    if mode == "semantic":
        return Route(lexical=False, dense=True)
    if mode == "hybrid":
        return Route(lexical=True, dense=True)
    return Route(lexical=True, dense=kind != "exact")
