"""What a get result costs a host, counted as the server counts it: real cl100k tokens of the
larger of its two renderings (the compact JSON of the structured content as sent, the text)."""

from __future__ import annotations

import json
import re
from typing import Any

from knowledge_mcp.sources.text.tokens import cl100k_tokens

NO_ROOM = re.compile(r"retrieval\.max_tokens (\d+) leaves no room for content; (\d+) would return some$")
TOO_SMALL = re.compile(r"retrieval\.max_tokens: (\d+) too small; (\d+) would return some")


def sent_tokens(result: Any) -> int:
    """cl100k tokens of the larger rendering of a tool result."""
    structured = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return max(cl100k_tokens(structured), cl100k_tokens(result.content[0].text))


def needed_budget(got: dict[str, Any], max_tokens: int) -> int | None:
    """The budget a handle-only answer (or a refusal, `within_budget`) names as the smallest
    that returns content, else None."""
    if "refused" in got:
        return int(got["refused"])
    for warning in got.get("warnings", []):
        found = NO_ROOM.match(warning)
        if found and int(found[1]) == max_tokens:
            return int(found[2])
    return None


def within_budget(result: Any, max_tokens: int) -> dict[str, Any]:
    """The structured content of a get that kept `max_tokens` (a ceiling: never raised), whose
    `estimated_tokens` is the real count. An answer with no room for content is the handle alone:
    truncated, no `next`, and a warning naming a larger budget; when not even the handle fits,
    the call is refused naming that budget (returned here as `{"refused": budget}`)."""
    text = result.content[0].text
    if result.is_error:
        refused = TOO_SMALL.search(text)
        assert refused is not None and int(refused[1]) == max_tokens, text
        assert cl100k_tokens(text) <= max_tokens < int(refused[2]), text
        return {"refused": int(refused[2]), "content": None, "next": None}
    got = dict(result.structured_content)
    sent = sent_tokens(result)
    assert got["tokenizer"] == "cl100k"
    assert got["estimated_tokens"] == sent
    assert sent <= max_tokens, (sent, max_tokens, got["warnings"])
    needed = needed_budget(got, max_tokens)
    if needed is not None:
        assert needed > max_tokens and got["truncated"] is True and got["next"] is None, got
        assert not got["content"], got
    return got
