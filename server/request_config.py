"""Per-request `config` (DESIGN §9): a few retrieval defaults a client may set per request.

An HTTP request carries it as the `config` query parameter or the `X-Knowledge-Config`
header; a WebSocket connection as `?config=` on its URL and/or `config` in the `initialize`
params. The value is base64 (standard or URL-safe, padding optional) of a JSON object, or
(where the carrier allows it) the JSON object itself.

Pure: no I/O, never raises. Only `CONFIG_KEYS` are read; each is clamped to the bounds of the
matching `Settings` field, so a client can never ask for more than the operator allows on the
command line. Everything else — unknown keys, and above all identity or paths (`user_id`,
`data_dir`, `db_paths`) — is ignored: the user comes only from authentication. Problems become
warnings for the next tool result, never failures.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import annotated_types

from .config import Settings

CONFIG_KEYS = ("snippet_length", "max_tokens", "sibling_window", "order_by", "chars_per_token")
MAX_CONFIG_CHARS = 4096  # a handful of small numbers; anything bigger is not a config
URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")


@dataclass(frozen=True)
class RequestConfig:
    """The accepted values (a subset of `CONFIG_KEYS`) and what was wrong with the rest."""

    values: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def over(self, base: RequestConfig) -> RequestConfig:
        """This config's values over `base`'s, key by key; both sets of warnings."""
        return RequestConfig({**base.values, **self.values}, base.warnings + self.warnings)


EMPTY = RequestConfig()


def _bounds(name: str) -> tuple[int, int]:
    """The (ge, le) bounds declared on the `Settings` field `name`."""
    low = high = None
    for constraint in Settings.model_fields[name].metadata:
        if isinstance(constraint, annotated_types.Ge):
            low = constraint.ge
        elif isinstance(constraint, annotated_types.Le):
            high = constraint.le
    assert isinstance(low, int) and isinstance(high, int), name
    return low, high


BOUNDS: dict[str, tuple[int, int]] = {name: _bounds(name) for name in CONFIG_KEYS if name != "order_by"}
ORDER_BY: tuple[str, ...] = get_args(Settings.model_fields["order_by"].annotation)


def decode(raw: str, where: str) -> tuple[Any, str | None]:
    """The JSON value `raw` encodes, or (None, warning) when it is not base64 JSON."""
    text = raw.strip()
    if len(text) > MAX_CONFIG_CHARS:
        return None, f"{where}: longer than {MAX_CONFIG_CHARS} characters; ignored"
    if not text.startswith("{"):
        try:
            # An unescaped + in a query string arrives as a space; a space is never base64.
            standard = text.replace(" ", "+").translate(URLSAFE_TO_STANDARD)
            padded = standard + "=" * (-len(standard) % 4)
            text = base64.b64decode(padded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return None, f"{where}: not valid base64 (expected base64 of a JSON object); ignored"
    try:
        return json.loads(text), None
    except ValueError:
        return None, f"{where}: not valid JSON (expected a JSON object); ignored"


def parse(raw: Any, where: str = "config") -> RequestConfig:
    """A request config from its carrier's value: a base64/JSON string, or an already-parsed object."""
    if raw is None:
        return EMPTY
    data = raw
    if isinstance(raw, str):
        data, problem = decode(raw, where)
        if problem is not None:
            return RequestConfig(warnings=(problem,))
    if not isinstance(data, Mapping):
        return RequestConfig(warnings=(f"{where}: must be a JSON object; ignored",))
    return validate(data, where)


def validate(data: Mapping[str, Any], where: str = "config") -> RequestConfig:
    """Keep the known keys, clamped; ignore the rest (silently: unknown keys are not errors)."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    for name in CONFIG_KEYS:
        if name not in data or data[name] is None:
            continue
        value = data[name]
        if name == "order_by":
            if isinstance(value, str) and value in ORDER_BY:
                values[name] = value
            else:
                warnings.append(f"{where}.order_by must be one of {', '.join(ORDER_BY)}; ignored")
            continue
        number = _integer(value)
        low, high = BOUNDS[name]
        if number is None:
            warnings.append(f"{where}.{name} must be an integer {low}..{high}; ignored")
            continue
        clamped = min(max(number, low), high)
        if clamped != number:
            warnings.append(f"{where}.{name} {number} is outside {low}..{high}; used {clamped}")
        values[name] = clamped
    return RequestConfig(values, tuple(warnings))


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
