"""Who may change the knowledge base: the scopes credentials carry.

Credentials are read-only unless they carry the `write` scope: an API key created with
`knowledge-mcp keys create --scope write`, a JWT whose `scope` claim (space-separated, RFC 8693)
or `scp` list names `write`. The local stdio user may write; over HTTP or WebSocket only a
verified credential with the write scope may (a server started with `--no-auth` serves
read-only); `read_only = true` stops writes for everyone. The decision itself is
`refusal.write_refusal` (it reads the MCP SDK's authenticated user; these names do not).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

WRITE = "write"
SCOPES = ("read", WRITE)


def claim_scopes(claims: dict[str, Any]) -> list[str]:
    """The scopes a JWT grants: its `scope` string (separated by U+0020 only, RFC 6749 §3.3) or
    list, and its `scp` list. `"read\u00a0write"` is one (unknown) scope, not `write`."""
    found: list[str] = []
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found += split_scopes(value)
        elif isinstance(value, list):
            found += [v for v in value if isinstance(v, str)]
    return list(dict.fromkeys(found))


def stored_scopes(text: str | None) -> list[str]:
    """An API key's scopes as the key store keeps them (space-separated)."""
    return split_scopes(text or "")


def split_scopes(text: str) -> list[str]:
    """Scope tokens separated by U+0020 alone: `str.split()` would also split on U+00A0, U+2003
    and every other Unicode space, turning `"read\u00a0write"` into a write grant."""
    return [token for token in text.split(" ") if token]


def scope_text(scopes: Iterable[str]) -> str:
    return " ".join(dict.fromkeys(s for s in scopes if s))
