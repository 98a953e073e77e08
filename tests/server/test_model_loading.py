"""A warm first call: the server loads the embedding model in the background as it starts. A
search made right after `initialize`, while the model still loads, answers at once, lexically,
and says so; once the model is loaded the same search is hybrid. The load is held on a real
synchronisation point (`hold_loading`), never on a timing guess."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from loguru import logger
from mcp import Client

from knowledge_mcp.server.app import Services, build_server
from knowledge_mcp.server.backend.warm import WARM_QUERY
from knowledge_mcp.server.config import Settings, load_settings
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.search.dense import embedder as models
from knowledge_mcp.sources.storage.db import database_path
from tests.conftest import call, score_types
from tests.server.test_semantic_e2e import embedded_vault  # noqa: F401  (the fixture: the notes with vectors)

pytestmark = pytest.mark.anyio
QUESTION = "which novels did I enjoy last summer?"
LOAD_S = 300.0
"""A generous bound for loading the model on a busy machine (a hang guard, not a timing assertion)."""


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def test_a_search_while_the_model_loads_answers_lexically_and_is_hybrid_once_loaded(
    embedded_vault: Path,  # noqa: F811
) -> None:
    gate = models.hold_loading()
    mcp, host = build_server(Settings(data_dir=embedded_vault, embed_in_background=False))
    try:
        host.start_background()
        with anyio.fail_after(LOAD_S):  # initialize and the search must not wait for the model
            async with Client(mcp) as client:
                assert models.loading()
                early = await call(client, "knowledge_search", query=QUESTION, limit=3, seen="show")
                assert early["results"], early
                assert set(score_types(early)) == {"fts"}
                assert early["degraded"] is True
                assert models.LOADING_HINT in early["provider_hint"]
                gate.set()
                assert await anyio.to_thread.run_sync(models.wait_loaded, LOAD_S)
                assert not models.loading()
                late = await call(client, "knowledge_search", query=QUESTION, limit=3, seen="show")
    finally:
        gate.set()
        await host.close()
    assert set(score_types(late)) == {"hybrid"}
    assert "degraded" not in late and "provider_hint" not in late


async def test_a_lexical_query_is_answered_while_the_model_loads_without_a_hint(
    embedded_vault: Path,  # noqa: F811
) -> None:
    gate = models.hold_loading()
    mcp, host = build_server(Settings(data_dir=embedded_vault, embed_in_background=False))
    try:
        host.start_background()
        async with Client(mcp) as client:
            page = await call(client, "notes_search", query='"sourdough"', limit=3)
            assert models.loading()
    finally:
        gate.set()
        await host.close()
    assert page["results"] and set(score_types(page)) == {"fts"}
    assert "provider_hint" not in page


async def test_with_background_loading_off_the_server_loads_the_model_at_the_first_search(
    embedded_vault: Path,  # noqa: F811
) -> None:
    models.reset()
    mcp, host = build_server(
        Settings(data_dir=embedded_vault, embed_in_background=False, load_model_in_background=False)
    )
    try:
        host.start_background()
        assert not models.loading()
        async with Client(mcp) as client:
            page = await call(client, "knowledge_search", query=QUESTION, limit=3, seen="show")
    finally:
        await host.close()
    assert set(score_types(page)) == {"hybrid"}


def test_the_environment_turns_background_loading_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().load_model_in_background is True
    monkeypatch.setenv("KNOWLEDGE_MCP_LOAD_MODEL_IN_BACKGROUND", "false")
    assert load_settings().load_model_in_background is False


async def test_once_the_model_is_loaded_the_local_users_sources_are_searched_once(
    embedded_vault: Path,  # noqa: F811
) -> None:
    assert models.embedder() is not None  # loaded: the server warms its user's sources at once
    mcp, host = build_server(Settings(data_dir=embedded_vault, embed_in_background=False))
    try:
        host.start_background()
        await anyio.sleep(0)  # the loader's callback runs on the loop's next turn
        warm = host.warm_start
        assert warm is not None and warm.task is not None
        await warm.task
        async with Client(mcp) as client:
            page = await call(client, "knowledge_search", query=QUESTION, limit=3, seen="show")
    finally:
        await host.close()
    assert "notes" in warm.warmed
    assert warm.warmed == [name for name in SOURCES if database_path(embedded_vault, "local", name).exists()]
    assert set(score_types(page)) == {"hybrid"}


def test_an_authenticated_server_warms_no_one_up(tmp_path: Path) -> None:
    _, host = build_server(Settings(data_dir=tmp_path), authenticate=True)
    assert host.warm_start is None


async def test_the_warm_up_calls_the_search_tool_once_and_leaves_the_session_and_logs_untouched(
    embedded_vault: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"  # a copy: no session of the other tests' searches in it
    shutil.copytree(embedded_vault, data_dir, ignore=shutil.ignore_patterns("sessions.db*"))
    assert models.embedder() is not None
    mcp, host = build_server(Settings(data_dir=data_dir, embed_in_background=False))
    try:
        logged = await warmed_up_logging(host)
        async with Client(mcp) as client:
            session = await call(client, "session_info")
    finally:
        await host.close()
    assert host.warm_start is not None and host.warm_start.tool_warmed
    assert session["seen"] == [] and session["recent_queries"] == []
    assert session.get("name") is None and not session.get("citations")
    assert not [line for line in logged if "request " in line or WARM_QUERY in line]


async def test_the_warm_up_makes_no_database_for_a_user_who_has_none(tmp_path: Path) -> None:
    assert models.embedder() is not None
    _, host = build_server(Settings(data_dir=tmp_path, embed_in_background=False))
    try:
        await warmed_up_logging(host)
    finally:
        await host.close()
    assert host.warm_start is not None and not host.warm_start.tool_warmed
    assert host.warm_start.warmed == []
    assert not list(tmp_path.rglob("*.db"))


async def warmed_up_logging(host: Services) -> list[str]:
    """Start `host`'s background work and wait for its warm-up; what was logged meanwhile."""
    logged: list[str] = []
    sink = logger.add(logged.append, level="DEBUG", format="{level} {message}")
    try:
        host.start_background()
        await anyio.sleep(0)
        assert host.warm_start is not None and host.warm_start.task is not None
        with anyio.fail_after(LOAD_S):
            await host.warm_start.task
    finally:
        logger.remove(sink)
    return logged
