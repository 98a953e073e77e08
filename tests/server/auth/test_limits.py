"""Per-user, per-tool rate limits: the token bucket itself, its settings, and the real server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from knowledge_mcp.server.auth.limits import RateLimiter
from knowledge_mcp.server.config import ConfigError, load_settings
from tests.conftest import FIXTURES, call, error, import_into


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_a_burst_up_to_the_limit_then_says_how_long_to_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(3, clock=clock)
    assert [limiter.acquire("alice", "notes_search") for _ in range(3)] == [None, None, None]
    wait = limiter.acquire("alice", "notes_search")
    assert wait is not None and wait == pytest.approx(20.0)  # 3 a minute: one every 20 s
    clock.now += 20.0
    assert limiter.acquire("alice", "notes_search") is None
    assert limiter.acquire("alice", "notes_search") is not None


def test_one_users_exhausted_bucket_leaves_other_users_and_other_tools_alone() -> None:
    limiter = RateLimiter(1, clock=Clock())
    assert limiter.acquire("alice", "notes_search") is None
    assert limiter.acquire("alice", "notes_search") is not None
    assert limiter.acquire("bob", "notes_search") is None
    assert limiter.acquire("alice", "notes_get") is None


def test_overrides_replace_the_default_and_zero_means_unlimited() -> None:
    limiter = RateLimiter(1, {"notes_get": 0, "knowledge.search": 2}, clock=Clock())
    assert all(limiter.acquire("alice", "notes_get") is None for _ in range(50))
    assert limiter.limit_for("knowledge_search") == 2  # dotted and underscore names share a limit
    assert [limiter.acquire("alice", "knowledge_search") is None for _ in range(3)] == [True, True, False]
    off = RateLimiter(0)
    assert not off.enabled
    assert all(off.acquire("alice", "notes_search") is None for _ in range(500))


def test_memory_is_bounded_by_the_bucket_cache() -> None:
    limiter = RateLimiter(5, max_buckets=10, clock=Clock())
    for n in range(1000):
        limiter.acquire(f"user{n}", "notes_search")
    assert len(limiter._buckets) <= 10


def test_rate_limit_settings_come_from_the_environment_and_reject_negative_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_RATE_LIMITS", '{"knowledge_search": 60, "notes_get": 600}')
    monkeypatch.setenv("KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE", "30")
    settings = load_settings()
    assert settings.rate_limits == {"knowledge_search": 60, "notes_get": 600}
    assert settings.rate_limit_per_minute == 30
    monkeypatch.setenv("KNOWLEDGE_MCP_RATE_LIMITS", '{"knowledge_search": -1}')
    with pytest.raises(ConfigError, match=r"rate_limits\.knowledge_search"):
        load_settings()
    monkeypatch.setenv("KNOWLEDGE_MCP_RATE_LIMITS", "knowledge_search=5")
    with pytest.raises(ConfigError, match="rate_limits"):
        load_settings()
    monkeypatch.delenv("KNOWLEDGE_MCP_RATE_LIMITS")
    monkeypatch.setenv("KNOWLEDGE_MCP_RATE_LIMIT_PER_MINUTE", "-5")
    with pytest.raises(ConfigError, match="rate_limit_per_minute"):
        load_settings()


def test_rate_limits_read_from_a_limits_table_in_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nrate_limit_per_minute = 10\nrate_limits = { notes_get = 600 }\n")
    settings = load_settings(config)
    assert settings.rate_limit_per_minute == 10 and settings.rate_limits == {"notes_get": 600}


@pytest.fixture
async def notes(data_dir: Path) -> Path:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    return data_dir


@pytest.mark.anyio
async def test_a_limited_call_is_a_tool_error_naming_the_tool_the_limit_and_when_to_retry(
    notes: Path, client_factory: Any
) -> None:
    async with client_factory(rate_limit_per_minute=2) as client:
        for _ in range(2):
            assert (await call(client, "notes_search", query="bread"))["count"] >= 1
        message = await error(client, "notes_search", query="bread")
        assert "notes_search" in message and "2 calls per minute" in message
        retry = re.search(r"retry in (\d+) s", message)
        assert retry is not None and 1 <= int(retry.group(1)) <= 60
        # other tools keep their own budget, and the server keeps serving
        assert (await call(client, "knowledge_search", query="bread"))["results"]


@pytest.mark.anyio
async def test_a_per_tool_override_applies_to_that_tool_only(notes: Path, client_factory: Any) -> None:
    async with client_factory(rate_limit_per_minute=100, rate_limits={"notes_search": 1}) as client:
        await call(client, "notes_search", query="bread")
        assert "1 call per minute" in await error(client, "notes_search", query="bread")
        for _ in range(5):
            await call(client, "knowledge_search", query="bread")


@pytest.mark.anyio
async def test_zero_turns_rate_limits_off(notes: Path, client_factory: Any) -> None:
    async with client_factory(rate_limit_per_minute=0) as client:
        for _ in range(30):
            await call(client, "notes_search", query="bread", limit=1)


@pytest.mark.anyio
async def test_calls_to_unknown_tools_share_one_bucket_and_do_not_reset_real_ones(
    notes: Path, client_factory: Any
) -> None:
    async with client_factory(rate_limit_per_minute=2) as client:
        texts = [await error(client, f"no_such_tool_{n}") for n in range(3)]
        assert "unknown tool" in texts[2].lower() and "rate limit" in texts[2]
        await call(client, "notes_search", query="bread")


def test_a_group_bucket_is_shared_by_its_tools_and_leaves_other_tools_alone() -> None:
    limiter = RateLimiter(
        100, clock=Clock(), groups={"research tools": (("verify_quote", "session_cite"), 2)}
    )

    async def spend(tool: str) -> tuple[str, int, float] | None:
        return await limiter.take_group("alice", tool)

    assert anyio.run(spend, "verify_quote") is None
    assert anyio.run(spend, "session_cite") is None
    refused = anyio.run(spend, "verify_quote")
    assert refused is not None and refused[:2] == ("research tools", 2) and refused[2] == pytest.approx(30.0)
    assert anyio.run(spend, "knowledge_search") is None  # not in the group
    assert anyio.run(limiter.take_group, "bob", "session_cite") is None  # bob has his own


@pytest.mark.anyio
async def test_the_research_tools_share_one_limit_per_user(notes: Path, client_factory: Any) -> None:
    async with client_factory(research_rate_limit_per_minute=3) as client:
        uri = (await call(client, "notes_search", query="levain", limit=1))["results"][0]["uri"]
        await call(client, "verify_quote", uri=uri, quote="levain")
        await call(client, "session_cite", uris=[uri], quote="levain")
        await call(client, "verify_quote", uri=uri, quote="levain")
        message = await error(client, "session_cite", uris=[uri])
        assert "session_cite" in message and "research tools together allow 3 calls per minute" in message
        assert (await call(client, "knowledge_search", query="levain"))["results"]  # other tools go on


@pytest.mark.anyio
async def test_the_write_tools_share_one_limit_per_user(client_factory: Any) -> None:
    async with client_factory(write_rate_limit_per_minute=2, duplicate_check_ms=0) as client:
        made = await call(client, "notes_create", title="One", content="first words")
        await call(client, "notes_update", note_id=made["id"], append="more words")
        message = await error(client, "notes_create", title="Two", content="second words")
        assert "notes_create" in message and "write tools together allow 2 calls per minute" in message
        assert (await call(client, "notes_search", query="words"))["results"]


@pytest.mark.anyio
async def test_by_default_the_research_tools_are_limited_tighter_than_other_tools(
    notes: Path, client_factory: Any
) -> None:
    async with client_factory() as client:
        uri = (await call(client, "notes_search", query="levain", limit=1))["results"][0]["uri"]
        for _ in range(30):
            await call(client, "verify_quote", uri=uri, quote="levain")
        message = await error(client, "verify_quote", uri=uri, quote="levain")
    assert "research tools together allow 30 calls per minute" in message
