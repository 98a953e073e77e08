"""Identity without merging: a user id is exactly what the credential authenticated, so `Bob` and
`bob` are two users with two folders; folders named by the older rules keep their data."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.server.auth.keys import SqliteKeyStore
from knowledge_mcp.server.context import RequestContext
from tests.conftest import FIXTURES, import_into
from tests.server.auth.test_auth import SECRET, cli, found, start, token
from tests.server.transports.test_http_e2e import stop


def test_the_request_contexts_of_bob_and_bob_in_capitals_are_two_users_in_two_folders(tmp_path: Path) -> None:
    upper = RequestContext.for_user(tmp_path, "Bob")
    lower = RequestContext.for_user(tmp_path, "bob")
    assert (upper.user_id, lower.user_id) == ("Bob", "bob")
    assert upper.db_paths["notes"].parent != lower.db_paths["notes"].parent


@pytest.mark.anyio
async def test_an_api_key_made_for_bob_in_capitals_belongs_to_that_spelling_only(tmp_path: Path) -> None:
    store = await SqliteKeyStore.open(tmp_path)
    try:
        key = await store.create("Bob")
        grant = await store.grant_for(key)
        assert grant is not None and grant.user_id == "Bob"
        assert [r.user_id for r in await store.list("Bob")] == ["Bob"]
        assert await store.list("bob") == []
    finally:
        await store.close()


async def make_old_folder(data_dir: Path, name: str) -> None:
    """A user folder with notes as an older version named it (imported into another data dir and
    moved here, before this process first looks at `data_dir`)."""
    elsewhere = data_dir.parent / "elsewhere"
    await import_into(elsewhere, "notes", FIXTURES / "notes", user="import-here")
    (data_dir / "users").mkdir(parents=True)
    os.rename(elsewhere / "users" / "import-here", data_dir / "users" / name)


async def hits(client_factory: Callable[..., Any], user: str) -> int:
    async with client_factory(user=user) as client:
        result = await client.call_tool("notes_search", {"query": "levain"})
    assert not result.is_error, result.content[0].text
    return int(result.structured_content["count"])


@pytest.mark.anyio
async def test_a_folder_of_the_folding_rule_belongs_to_the_lower_case_id(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    await make_old_folder(data_dir, "alice")
    assert await hits(client_factory, "alice") >= 1
    assert await hits(client_factory, "Alice") == 0
    assert sorted(p.name for p in (data_dir / "users").iterdir()) == ["+alice", "alice"]


@pytest.mark.anyio
async def test_a_folder_named_by_a_mixed_case_id_is_renamed_and_keeps_its_data(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    await make_old_folder(data_dir, "Carol")
    assert await hits(client_factory, "Carol") >= 1
    assert sorted(p.name for p in (data_dir / "users").iterdir()) == ["+carol"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An HS256 server; `Bob` and `bob` each imported a note of their own."""
    tmp = tmp_path_factory.mktemp("user-case")
    for user, text in {"Bob": "Bob keeps zanzibarite crystals", "bob": "bob bakes quokkaberry pies"}.items():
        folder = tmp / f"notes-{user}"
        folder.mkdir()
        (folder / "note.md").write_text(f"# {user} note\n\n{text}.\n", encoding="utf-8")
        cli(tmp / "data", "import", "notes", str(folder), "--user", user)
    process, url = start(tmp / "data", tmp / "server.log", {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET})
    try:
        yield url
    finally:
        stop(process)


@pytest.mark.slow
@pytest.mark.anyio
async def test_jwt_subjects_that_differ_only_in_case_read_separate_data(server: str) -> None:
    upper = {"Authorization": f"Bearer {token('Bob')}"}
    lower = {"Authorization": f"Bearer {token('bob')}"}
    assert await found(server, upper, "zanzibarite") == ["Bob note"]
    assert await found(server, upper, "quokkaberry") == []
    assert await found(server, lower, "quokkaberry") == ["bob note"]
    assert await found(server, lower, "zanzibarite") == []
    assert await found(server, {"Authorization": f"Bearer {token('BOB')}"}, "zanzibarite quokkaberry") == []
