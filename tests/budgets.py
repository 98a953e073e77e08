"""What a get result costs a host, counted as the server counts it: real cl100k tokens of the
larger of its two renderings (the compact JSON of the structured content as sent, the text)."""

from __future__ import annotations

import json
import re
from typing import Any

from knowledge_mcp.sources.text.tokens import cl100k_tokens

RAISED = re.compile(r"retrieval\.max_tokens (\d+) leaves no room for content .*; used (\d+)$")


def sent_tokens(result: Any) -> int:
    """cl100k tokens of the larger rendering of a tool result."""
    structured = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return max(cl100k_tokens(structured), cl100k_tokens(result.content[0].text))


def held_budget(structured: dict[str, Any], max_tokens: int) -> int:
    """The budget a get held: `max_tokens`, or the one its warning says it was raised to."""
    for warning in structured.get("warnings", []):
        raised = RAISED.match(warning)
        if raised and int(raised[1]) == max_tokens:
            return int(raised[2])
    return max_tokens


def within_budget(result: Any, max_tokens: int) -> dict[str, Any]:
    """The structured content of a get that kept `max_tokens` (or said it raised it), whose
    `estimated_tokens` is the real count."""
    assert not result.is_error, result.content[0].text
    got = dict(result.structured_content)
    sent = sent_tokens(result)
    assert got["tokenizer"] == "cl100k"
    assert got["estimated_tokens"] == sent
    assert sent <= held_budget(got, max_tokens), (sent, max_tokens, got["warnings"])
    return got
