"""The aggregator's result shapes: a page merged from every source's results (DESIGN §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from knowledge_mcp.sources.characters.models import CharacterResult
from knowledge_mcp.sources.chats.models import ChatResult
from knowledge_mcp.sources.media.models import MediaResult
from knowledge_mcp.sources.models import NoteResult, SearchResponse
from knowledge_mcp.sources.prompts.models import PromptResult

AnyResult = NoteResult | MediaResult | ChatResult | CharacterResult | PromptResult
"""A hit of any source; it keeps its source's type-aware fields (`source` says which)."""


class SeenApplied(BaseModel):
    """What the session did to this page: seen items hidden, or down-ranked (score halved)."""

    mode: Literal["hide", "downrank"]
    count: int = Field(description="How many seen items were hidden or down-ranked here.")
    uris: list[str] = Field(description="Which (at most 20).")


class KnowledgeSearchResponse(SearchResponse[AnyResult]):  # type: ignore[type-var]
    """Results of several sources merged on their calibrated score."""

    results: list[AnyResult] = Field(  # type: ignore[assignment]
        description="Hits of every source asked, best first; each keeps its source's fields."
    )
    seen_applied: SeenApplied | None = None
