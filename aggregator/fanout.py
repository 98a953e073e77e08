"""The fan-out of knowledge_search: every source asked at once, each within a time limit; a source
that fails or is too slow becomes an `Answer` with its failure, never the call's error. Then the
page's fields that need another source, filled for the page's results only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from loguru import logger

from knowledge_mcp.sources.errors import InvalidArgumentError, SourceUnavailableError
from knowledge_mcp.sources.models import SearchResponse
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.retrieval import Defaults
from knowledge_mcp.sources.search.lexical.term_stats import IndexStats, index_stats
from knowledge_mcp.sources.search.request import SearchRequest
from knowledge_mcp.sources.source import ChunkedSource
from knowledge_mcp.sources.storage.db import source_failure
from knowledge_mcp.sources.storage.store import Store

from .calls import AggregatorCall
from .models import KnowledgeSearchResponse


@dataclass
class Answer:
    source: str
    response: SearchResponse[Any] | None = None
    failure: str | None = None
    elapsed_ms: float = 0.0
    problem: Exception | None = field(default=None, repr=False)


class Stores:
    """Each source's store for one call, asked of the call once: the term statistics and the
    fan-out read the same store (the call checks the file under it each time it is asked)."""

    def __init__(self, call: AggregatorCall) -> None:
        self.call = call
        self._opened: dict[str, Store] = {}

    async def __call__(self, name: str) -> Store:
        store = self._opened.get(name)
        if store is None:
            store = self._opened[name] = await self.call.database(name)
        return store


async def counted(stores: Stores, name: str, request: SearchRequest) -> Store:
    """Source `name`'s store; first, with a shared scale (`SearchRequest.shared`), its counts of
    the query's terms handed to the scale and to its own search, whose FTS5 plan then need not
    read them again. A source that cannot say is left out of the scale (its search, or its
    store, then reports why); it is always heard from, so no other source waits on it for long."""
    shared = request.shared
    stats: IndexStats | None = None
    try:
        store = await stores(name)
        if shared is not None:
            try:
                stats = request.index_stats = await index_stats(store, name, shared.query, shared.names)
            except Exception:  # the fan-out boundary: the source's search reports it
                logger.debug("no term statistics from {}", name)
        return store
    finally:
        if shared is not None:
            shared.add(name, stats)


async def fan_out(
    stores: Stores,
    requests: Mapping[str, SearchRequest],
    defaults: Defaults,
    timeout_s: float,
) -> list[Answer]:
    answers = [Answer(name) for name in requests]

    async def ask(answer: Answer) -> None:
        source: ChunkedSource[Any] = SOURCES[answer.source]
        started = time.perf_counter()
        request = requests[answer.source]
        try:
            with anyio.fail_after(timeout_s):
                store = await counted(stores, answer.source, request)
                if request.shared is not None:
                    # Every source's counts first (SQLite on the loop's thread), then the searches
                    # (statements on worker threads): the counts no longer wait for the GIL
                    # behind the searches' threads (`docs/performance.md`, "Session 13").
                    await request.shared.settled()
                response = await source.search(store, request, defaults)
            answer.response = response
        except InvalidArgumentError as exc:  # the caller's to fix: a tool error, not a degraded source
            answer.problem = exc
        except TimeoutError:
            answer.failure = f"no answer within {timeout_s:g} s"
        except SourceUnavailableError as exc:  # explained already (a damaged database): no traceback
            answer.failure = str(exc)
        except Exception as exc:  # the fan-out boundary: one source failing never fails the call
            explained = source_failure(exc, answer.source)
            if explained is not None:
                logger.warning("source {} failed in knowledge_search: {}", answer.source, explained)
                answer.failure = str(explained)
            else:
                logger.exception("source {} failed in knowledge_search", answer.source)
                answer.failure = f"failed ({type(exc).__name__})"
        answer.elapsed_ms = (time.perf_counter() - started) * 1000

    async with anyio.create_task_group() as group:
        for answer in answers:
            group.start_soon(ask, answer)
    for answer in answers:
        if answer.problem is not None:
            raise answer.problem
    return answers


async def completed(stores: Stores, response: KnowledgeSearchResponse, timeout_s: float) -> None:
    """The page's fields that need another source (chats: the linked character card), filled
    after the merge for the page's results only; a source that cannot fill them leaves them
    empty and says so."""
    results = response.results
    for name in dict.fromkeys(r.source for r in results):
        try:
            with anyio.fail_after(timeout_s):
                await SOURCES[name].complete([r for r in results if r.source == name], stores)
        except Exception:  # the fan-out boundary: the page stands without the links
            logger.exception("source {} could not complete its results in knowledge_search", name)
            response.warnings.append(f"{name}: some fields of its results could not be filled")
