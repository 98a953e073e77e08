"""knowledge_search's shared bm25 scale, put together while the sources search: a source waits
for the others' counts only once it asks for its scale, gets the scale all of them together
give whatever order they counted in, and one that could not count is left out."""

from __future__ import annotations

import anyio
import pytest

from knowledge_mcp.sources.search.lexical.term_stats import IndexStats, SharedScale, SharedStats
from knowledge_mcp.sources.search.query import parse_query

pytestmark = pytest.mark.anyio

QUERY = parse_query("ship captain")
COUNTS = {
    "notes": IndexStats(900, 400, {'"ship"': 40, '"captain"': 3}),
    "media": IndexStats(300, 100, {'"ship"': 2, '"captain"': 0}),
    "prompts": IndexStats(12, 5, {'"ship"': 6, '"captain"': 6}),
}


def expected(name: str, counted: list[str]) -> tuple[float, object]:
    shared = SharedStats.of([COUNTS[n] for n in counted])
    return shared.scale(COUNTS[name], QUERY.terms), shared.norm(QUERY.terms)


async def test_each_source_gets_the_scale_of_all_sources_together_whatever_order_they_count_in() -> None:
    for order in (["notes", "media", "prompts"], ["prompts", "notes", "media"]):
        shared = SharedScale(COUNTS, QUERY)
        for name in order:
            shared.add(name, COUNTS[name])
        for name in COUNTS:
            assert await shared.of(name) == expected(name, list(COUNTS))


async def test_a_source_waits_for_the_others_counts_only_when_it_asks_for_its_scale() -> None:
    shared = SharedScale(COUNTS, QUERY)
    got: dict[str, object] = {}

    async def scale_of(name: str) -> None:
        got[name] = await shared.of(name)

    async with anyio.create_task_group() as group:
        shared.add("notes", COUNTS["notes"])
        group.start_soon(scale_of, "notes")
        await anyio.wait_all_tasks_blocked()
        assert got == {}  # media and prompts have not counted yet
        shared.add("media", COUNTS["media"])
        await anyio.wait_all_tasks_blocked()
        assert got == {}
        shared.add("prompts", COUNTS["prompts"])
    assert got == {"notes": expected("notes", list(COUNTS))}


async def test_a_source_that_could_not_count_is_left_out_and_keeps_its_own_scale() -> None:
    shared = SharedScale(COUNTS, QUERY)
    shared.add("notes", COUNTS["notes"])
    shared.add("media", None)
    shared.add("prompts", COUNTS["prompts"])
    assert await shared.of("media") is None
    assert await shared.of("notes") == expected("notes", ["notes", "prompts"])
