"""Array parameters as PostgreSQL array literals, built in one join instead of element by element.

psycopg dumps a Python list element by element in Python (`types/array.py`: a regular expression
and a dumper call per element); the import's statements pass tens of thousands of elements per
transaction (chunks' texts, postings), where that dumping was a large part of the import's time
(`docs/performance.md`, "PostgreSQL"). A literal made here (`{1,2,NULL}`, `{"a","b \\"c\\""}`)
is passed as text and cast by the statement (`%s::int[]`, `%s::text[]`, `%s::jsonb[]`):
PostgreSQL parses it into the same array.
"""

from __future__ import annotations

from collections.abc import Iterable


def _quoted(value: object) -> str:
    if value is None:
        return "NULL"
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def numbers(values: Iterable[int | float | None]) -> str:
    """An array literal of numbers (None: NULL), for a `::int[]`, `::bigint[]` or `::float8[]`."""
    listed = list(values)
    if None not in listed:  # no NULL: converted in one map
        return "{" + ",".join(map(str, listed)) + "}"
    return "{" + ",".join("NULL" if v is None else str(v) for v in listed) + "}"


def texts(values: Iterable[object]) -> str:
    """An array literal of texts (each quoted and escaped; None: NULL), for `::text[]` or `::jsonb[]`."""
    listed = list(values)
    if None not in listed:
        strings = list(map(str, listed))
        plain = "".join(strings)
        if '"' not in plain and "\\" not in plain:  # nothing to escape: quoted in one join
            return '{"' + '","'.join(strings) + '"}' if strings else "{}"
    return "{" + ",".join(map(_quoted, listed)) + "}"
