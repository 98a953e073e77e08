"""The MCP client's own model as a reranker, through `sampling/createMessage`.

Used only when the client declared the sampling capability (`choice.py`) and the caller asked
(`rerank: true`). One request per search, the prompt of `prompt.py`, a short answer
(`MAX_TOKENS`), temperature 0; the stage's time budget (`rerank_timeout_s`) bounds it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import SamplingMessage, TextContent

from .backend import RerankError
from .prompt import SYSTEM, ranking_of, ranking_prompt, scores_of

POOL = 20
"""The fused ranking's best items the client's model reorders (a prompt of ~2,000 tokens)."""
MAX_TOKENS = 200


class SamplingReranker:
    """Asks the client's model (over `session`, the request's server session) for a ranking."""

    name = "client sampling"
    pool = POOL

    def __init__(self, session: Any) -> None:
        self.session = session

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        message = SamplingMessage(
            role="user", content=TextContent(type="text", text=ranking_prompt(query, passages))
        )
        with warnings.catch_warnings():  # sampling is deprecated from protocol 2026-07-28 on
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await self.session.create_message(
                [message], max_tokens=MAX_TOKENS, system_prompt=SYSTEM, temperature=0.0
            )
        content = result.content
        if not isinstance(content, TextContent):
            raise RerankError(f"the client's model answered with {content.type}, not text")
        return scores_of(ranking_of(content.text, len(passages)))
