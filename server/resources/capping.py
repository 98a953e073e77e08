"""An item's text within the `resource_max_chars` cap, and the marker saying how to read on. Pure.

A host attaches a resource whole, so `resources/read` returns at most `max_chars` characters of
the item's text, cut at a paragraph, line or word boundary near the cap, then one marker line:
how much was shown, and the `knowledge_get` (and the source's own get, if it has one) call that
reads on from the cut in `full` mode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# A boundary this close to the cap is preferred to cutting mid-word at the cap itself.
BOUNDARY_WINDOW = 0.2
CONTINUE_MAX_TOKENS = 4000


@dataclass(frozen=True)
class Capped:
    text: str
    cut: int | None
    """Where the rest begins (a character offset into the item's text); None: nothing was cut."""


def cap(text: str, max_chars: int) -> Capped:
    """`text` whole when it fits, else its head up to the last paragraph break, line break or
    space within the last fifth before `max_chars` (else exactly `max_chars`)."""
    if len(text) <= max_chars:
        return Capped(text, None)
    floor = int(max_chars * (1 - BOUNDARY_WINDOW))
    head = text[:max_chars]
    for boundary in ("\n\n", "\n", " "):
        at = head.rfind(boundary, floor)
        if at > 0:
            end = at + len(boundary)
            return Capped(text[:at].rstrip(), end)
    return Capped(head, max_chars)


def marker(
    *,
    shown: int,
    total: int,
    uri: str,
    get_tool: str | None,
    id_field: str,
    item_id: str,
    loc: dict[str, Any],
    knowledge_get: str = "knowledge_get",
) -> str:
    """The line after a cut text: what was shown and the call that reads on from the cut."""
    where = json.dumps(loc, separators=(", ", ": "))
    how = json.dumps({"mode": "full", "max_tokens": CONTINUE_MAX_TOKENS}, separators=(", ", ": "))
    own = f' or {get_tool}({id_field}="{item_id}", loc={where}, retrieval={how})' if get_tool else ""
    return (
        f"\n\n[truncated: {shown:,} of {total:,} characters shown. Read on with "
        f'{knowledge_get}(uri="{uri}", loc={where}, retrieval={how}){own}]'
    )
