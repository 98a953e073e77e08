"""A search page's wire form: pydantic leaves out of each hit's dump what every hit drops (`rank`,
the detail fields the search did not keep, the `id` and `source` its uri says), and the rest is
compacted as before: the page is the one each hit dumped whole, then compacted, makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.aggregator.models import KnowledgeSearchResponse
from knowledge_mcp.sources.models import ResultItem
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.storage.db import database_path, open_database
from knowledge_mcp.sources.storage.store.sqlite import SqliteStore
from knowledge_mcp.sources.wire import DETAIL_FIELDS, brief, compact_item, dump, rounded, score_digits

from ..conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

KEEPS = (frozenset(), frozenset({"summary", "created_at", "headings"}), frozenset(DETAIL_FIELDS))


async def fixture_results(data_dir: Path) -> list[ResultItem]:
    """A result for every chunk of every source's fixtures, scores and ranks varied."""
    results: list[ResultItem] = []
    for name, source in sorted(SOURCES.items()):
        await import_into(data_dir, name, FIXTURES / name)
        db = await open_database(database_path(data_dir, "local", name), source.migrations)
        try:
            store = SqliteStore(db, name)
            for item in await store.items():
                for chunk in await store.chunks_of(int(item["id"])):
                    n = len(results)
                    hit = {"score": 1 / (n + 2), "rank": n + 1, "match_count": 1 + n % 3}
                    results.append(source.result(item, chunk, snippet=f"snippet {n}" if n % 4 else "", **hit))
        finally:
            await db.close()
    return results


def whole_then_compacted(page: KnowledgeSearchResponse) -> dict[str, Any]:
    """The page's wire form as `dump` made it before: every hit dumped whole, then compacted."""
    data = page.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
    data.setdefault("next_offset", None)
    data.setdefault("top_score", None)
    digits = score_digits(hit["score"] for hit in data["results"])
    keeps = [r.private["_keep"] for r in page.results]
    data["results"] = [
        brief(compact_item(h, k, digits), k) for h, k in zip(data["results"], keeps, strict=True)
    ]
    kinds = {hit.get("score_type", "fts") for hit in data["results"]}
    if len(kinds) == 1:
        for hit in data["results"]:
            hit.pop("score_type", None)
        if (kind := kinds.pop()) != "fts":
            data["score_type"] = kind
    if isinstance(data.get("top_score"), float):
        data["top_score"] = rounded(data["top_score"], digits)
    return data


def page_of(results: list[ResultItem]) -> KnowledgeSearchResponse:
    return KnowledgeSearchResponse(
        results=results,
        count=len(results),
        has_more=True,
        next_offset=len(results),
        total_estimated=10 * len(results),
        top_score=max(r.score for r in results),
    )


async def test_a_page_of_every_source_s_hits_is_the_one_each_hit_compacted_whole_makes(
    tmp_path: Path,
) -> None:
    results = await fixture_results(tmp_path / "data")
    assert {r.source for r in results} == set(SOURCES) and len(results) > 40
    for n, result in enumerate(results):  # some of every field: reason, content, duplicates, threads
        if n % 5 == 0:
            result.reason, result.content = "title match", f"content {n}"
        if n % 7 == 0:
            result.duplicates, result.thread_hits, result.score_type = [f"notes://copy{n}"], 2, "hybrid"
    for keep in KEEPS:
        for result in results:
            result.private["_keep"] = keep
        for page in (page_of(results), page_of([r for r in results if r.score_type == "fts"])):
            assert json.dumps(dump(page)) == json.dumps(whole_then_compacted(page))
    # hits that keep different fields, or a uri that is not `<source>://<id>`: each hit dumped whole
    results[3].private["_keep"] = frozenset({"summary"})
    assert json.dumps(dump(page_of(results))) == json.dumps(whole_then_compacted(page_of(results)))
    results[3].private["_keep"] = results[4].private["_keep"]
    results[5].uri = "notes://elsewhere"
    wire = dump(page_of(results))
    assert json.dumps(wire) == json.dumps(whole_then_compacted(page_of(results)))
    assert wire["results"][5]["id"] == results[5].id and "rank" not in wire["results"][5]
