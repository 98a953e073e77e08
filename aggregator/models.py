"""The aggregator's result shapes: a page merged from every source's results (DESIGN §5)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SerializeAsAny

from knowledge_mcp.sources.models import ResultItem, SearchResponse

AnyResult = SerializeAsAny[ResultItem]
"""A hit of any registered source, as its source made it: its own result model, whose
type-aware fields it keeps on the wire (`source` says which). No list of sources here."""


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
