"""Statements run from server-side prepared statements with a generic plan.

`PgDatabase.send` binds its statements on the client and sends them as one simple query, so
PostgreSQL parses, rewrites and plans every statement anew (psycopg's `prepare_threshold`
applies only to its own extended-protocol `execute`). For a few hot, short statements the
planning took as long as the run. A statement marked here with `prepared(sql)` is prepared once
per connection (`PREPARE`, its own round trip, the first time the connection is idle) and then
sent as `EXECUTE name(values)` in the same batch as before, after a local
`plan_cache_mode = force_generic_plan` (PostgreSQL's default kept a custom plan, re-planned on
every run, for the statistics statement). Only statements whose generic plan was measured as
good are marked (`docs/postgresql.md`, "Prepared statements"): a ranking is not, its generic plan
was slower and its worst case 10x.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

GENERIC_SQL = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
"""Sent before each EXECUTE (its result dropped): a generic plan until the transaction ends."""
MOST = 256
"""At most this many statements are marked (a formatted statement marks each of its forms)."""
_NAMES: dict[str, str] = {}
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?([sbt%])")


def prepared(sql: str) -> str:
    """Mark `sql` (psycopg placeholders) to be run from a prepared statement; `sql` itself."""
    if sql not in _NAMES and len(_NAMES) < MOST:
        _NAMES[sql] = "knowledge_" + hashlib.sha1(sql.encode()).hexdigest()[:16]
    return sql


def name_of(sql: str) -> str | None:
    """The prepared statement's name of a marked `sql`, else None."""
    return _NAMES.get(sql)


def marked() -> dict[str, str]:
    """Each marked statement by its prepared name."""
    return {name: sql for sql, name in _NAMES.items()}


def numbered(sql: str, params: Sequence[Any] | dict[str, Any] | None) -> tuple[str, list[Any]]:
    """`sql` with psycopg's placeholders (`%s`, `%(name)s`) as PostgreSQL's `$1`, `$2`, … and
    the values in their order (a name used twice is one number)."""
    order: list[Any] = []
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        if match.group(2) == "%":
            return "%"
        key = match.group(1)
        if key is None:
            order.append(len(order))
            return f"${len(order)}"
        if key not in numbers:
            order.append(key)
            numbers[key] = len(order)
        return f"${numbers[key]}"

    text = _PLACEHOLDER.sub(number, sql)
    if isinstance(params, dict):
        return text, [params[key] for key in order]
    values = list(params or ())
    return text, values[: len(order)]
