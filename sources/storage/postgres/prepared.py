"""Statements run from server-side prepared statements.

`PgDatabase.send` binds its statements on the client and sends them as one simple query, so
PostgreSQL parses, rewrites and plans every statement anew (psycopg's `prepare_threshold`
applies only to its own extended-protocol `execute`). For a few hot, short statements the
planning took as long as the run. A statement marked here with `prepared(sql)` is prepared once
per connection (`PREPARE`, its own round trip, the first time the connection is idle) and then
sent as `EXECUTE name(values)` in the same batch as before, after a local
`plan_cache_mode = force_generic_plan` (PostgreSQL's default kept a custom plan, re-planned on
every run, for the statistics statement). Only statements whose generic plan was measured as
good are marked so (`docs/postgresql.md`, "Prepared statements").

The generic plan of a ranking prepared with untyped parameters was slower, so a ranking of
phrases (or restricted to chunks or filters) is marked `prepared(sql, custom=True)`: planned on
every run with its values (`force_custom_plan`, the plan the statement sent as text gets), which
still saves parsing, analysing and rewriting its text.
Its parameters are declared with the types PostgreSQL gives the literals psycopg binds (`1.2`
is numeric, `3` integer, `'{1,2}'::int2[]` int2[], a quoted string or NULL unknown: typed by
where it is used), so every expression, and every score, is computed as from the text: one
prepared statement per marked statement and list of types. A ranking of words and prefixes
without filters (`bm25._generic`) is marked `prepared(sql, typed=True)`: its parameters declared
so, planned once per connection (a generic plan), faster than a custom plan; phrases' hits,
lists of chunks and filters keep a custom plan (`docs/postgresql.md`, "Session 17: the
ranking planned once").
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

GENERIC, CUSTOM = "force_generic_plan", "force_custom_plan"
PLAN_SQL = {mode: f"SELECT set_config('plan_cache_mode', '{mode}', true)" for mode in (GENERIC, CUSTOM)}
"""Sent before an EXECUTE (its result dropped): the marked statement's plan mode (a generic plan;
`custom`: planned with its values) until the transaction ends."""
PLAN_SETTINGS: dict[str, str] = {}
"""Statements that set `plan_cache_mode` for their transaction themselves (`sets_plan`): a marked
statement sent right after one that set its mode is sent without `PLAN_SQL`."""
MOST = 256
"""At most this many statements are marked (a formatted statement marks each of its forms)."""
MOST_TYPED = 1024
"""At most this many typed forms of `custom` and `typed` statements are named (then they are sent
as text)."""
_NAMES: dict[str, str] = {}
_CUSTOM: set[str] = set()
_TYPED_GENERIC: set[str] = set()
_TYPED: dict[tuple[str, tuple[str, ...]], str] = {}
_SHAPES: dict[str, tuple[str, list[str | int]]] = {}
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?([sbt%])")
_CAST = re.compile(r"::([a-z0-9_]+(?:\[\])?)$")
_INTEGER = re.compile(r" ?-?[0-9]+")
_DECIMAL = re.compile(r" ?-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?")
INT2, INT4, INT8 = 2**15, 2**31, 2**63
INTEGERS = (("int2", INT2), ("int4", INT4), ("int8", INT8))
"""psycopg's integer types by the values they hold, smallest first (`-top <= value < top`)."""


def prepared(sql: str, custom: bool = False, typed: bool = False) -> str:
    """Mark `sql` (psycopg placeholders) to be run from a prepared statement (`custom`: planned
    with its values on every run; `typed`: its parameters declared as a custom one's, planned
    once); `sql` itself."""
    if sql not in _NAMES and len(_NAMES) < MOST:
        _NAMES[sql] = "knowledge_" + hashlib.sha1(sql.encode()).hexdigest()[:16]
        if custom:
            _CUSTOM.add(_NAMES[sql])
        elif typed:
            _TYPED_GENERIC.add(_NAMES[sql])
    return sql


def sets_plan(sql: str, mode: str) -> str:
    """Note that `sql` sets `plan_cache_mode` to `mode` until its transaction ends; `sql` itself."""
    PLAN_SETTINGS[sql] = mode
    return sql


def is_typed(name: str) -> bool:
    """Whether the statement named `name` is run in typed forms (`typed_name`)."""
    return name in _CUSTOM or name in _TYPED_GENERIC


def mode_of(name: str) -> str:
    """The `plan_cache_mode` the statement named `name` (or a typed form of it) runs under."""
    return CUSTOM if name in _CUSTOM else GENERIC


def name_of(sql: str) -> str | None:
    """The prepared statement's name of a marked `sql`, else None."""
    return _NAMES.get(sql)


def typed_name(name: str, types: tuple[str, ...]) -> str | None:
    """The name of `name`'s form with parameters of `types` (None: too many forms named), planned
    as `name` is."""
    key = (name, types)
    found = _TYPED.get(key)
    if found is None and len(_TYPED) < MOST_TYPED:
        found = _TYPED[key] = f"{name}_{hashlib.sha1(','.join(types).encode()).hexdigest()[:8]}"
        if name in _CUSTOM:
            _CUSTOM.add(found)
    return found


def marked() -> dict[str, str]:
    """Each marked statement by its prepared name (a typed form's too)."""
    names = {name: sql for sql, name in _NAMES.items()}
    return names | {typed: names[name] for (name, _), typed in _TYPED.items()}


def literal_type(literal: str) -> str | None:
    """The type PostgreSQL gives `literal` (as psycopg binds a value: `adapt.Transformer.as_literal`),
    `unknown` for one typed by where it is used; None when not known here."""
    if literal in ("NULL", "true", "false"):
        return "unknown" if literal == "NULL" else "boolean"
    if literal.startswith("'"):
        cast = _CAST.search(literal)
        return "unknown" if literal.endswith("'") else cast.group(1) if cast else None
    if _INTEGER.fullmatch(literal):
        value = abs(int(literal))
        return "integer" if value < INT4 else "bigint" if value < INT8 else "numeric"
    return "numeric" if _DECIMAL.fullmatch(literal) else None


def array_literal(value: Any) -> str | None:
    """A list of ints or of finite floats as psycopg binds it (`adapt.Transformer.as_literal`:
    `'{1,2}'::int2[]`, the smallest integer type that holds the largest, `'{0.5}'::float8[]`),
    faster than psycopg's element by element (`docs/postgresql.md`, "Session 15: the ranking
    prepared"); None for any other value."""
    if type(value) is not list or not value:
        return None
    kinds = set(map(type, value))
    if kinds == {int}:
        high, low = max(value), min(value)
        key = high if low >= 0 else max(high, -low - 1)
        kind = next((k for k, top in INTEGERS if -top <= key < top), "numeric")
        return "'{" + ",".join(map(str, value)) + "}'::" + kind + "[]"
    if kinds == {float} and all(map(math.isfinite, value)):
        return "'{" + ",".join(map(repr, value)) + "}'::float8[]"
    return None


def numbered(sql: str, params: Sequence[Any] | dict[str, Any] | None) -> tuple[str, list[Any]]:
    """`sql` with psycopg's placeholders (`%s`, `%(name)s`) as PostgreSQL's `$1`, `$2`, … and
    the values in their order (a name used twice is one number); the text is worked out once
    per statement."""
    shape = _SHAPES.get(sql)
    if shape is None:
        shape = _shape(sql)
        if len(_SHAPES) < MOST + MOST_TYPED:
            _SHAPES[sql] = shape
    text, order = shape
    if isinstance(params, dict):
        return text, [params[str(key)] for key in order]
    values = list(params or ())
    return text, values[: len(order)]


def _shape(sql: str) -> tuple[str, list[str | int]]:
    order: list[str | int] = []
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

    return _PLACEHOLDER.sub(number, sql), order
