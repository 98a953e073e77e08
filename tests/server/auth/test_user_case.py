"""One folder is one user: user ids are case-folded wherever an identity enters,
so `Alice` and `alice` are one user on every file system, and a folder made before (`users/Alice`)
is adopted, not orphaned."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.server.auth.keys import KeyStore
from knowledge_mcp.server.context import RequestContext
from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.storage.db import user_dir, validate_user_id
from tests.conftest import FIXTURES, error, import_into
from tests.server.auth.test_auth import SECRET, cli, found, start, token
from tests.server.transports.test_http_e2e import stop


@pytest.mark.parametrize(
    ("given", "user"),
    [
        ("alice", "alice"),
        ("Alice", "alice"),
        ("ALICE@Example.ORG", "alice@example.org"),
        ("Bob.Smith_42-x", "bob.smith_42-x"),
    ],
)
def test_a_user_id_is_folded_to_one_canonical_form(given: str, user: str) -> None:
    assert validate_user_id(given) == user


@pytest.mark.parametrize(
    "given",
    [
        "\uff21lice",  # a full-width A: NFKC would make it `alice`; a look-alike is refused, not merged
        "\ufb01le",  # the "fi" ligature
        "\u212aate",  # the Kelvin sign, which casefolds to k
        "\u0130",
        "Ålice",
        "..",
        "A/B",
    ],
)
def test_an_id_that_is_not_plain_ascii_is_refused_not_merged_with_its_look_alike(given: str) -> None:
    with pytest.raises(InvalidArgumentError):
        validate_user_id(given)


def test_the_request_context_of_alice_and_of_alice_in_capitals_is_one_folder(tmp_path: Path) -> None:
    upper = RequestContext.for_user(tmp_path, "Alice")
    lower = RequestContext.for_user(tmp_path, "alice")
    assert upper == lower
    assert upper.user_id == "alice" and upper.db_paths["notes"].parent.name == "alice"


@pytest.mark.anyio
async def test_an_api_key_made_for_alice_in_capitals_belongs_to_alice(tmp_path: Path) -> None:
    store = await KeyStore.open(tmp_path)
    try:
        key = await store.create("Alice")
        assert await store.user_for(key) == "alice"
        assert [r.user_id for r in await store.list("ALICE")] == ["alice"]
    finally:
        await store.close()


async def make_legacy_folder(data_dir: Path, name: str) -> None:
    """A user folder with notes as a case-sensitive file system kept it before ids were folded
    (imported under another id and renamed: this process has not looked up `alice` yet)."""
    await import_into(data_dir, "notes", FIXTURES / "notes", user="legacy-import")
    os.rename(data_dir / "users" / "legacy-import", data_dir / "users" / name)


@pytest.mark.anyio
async def test_a_folder_made_before_ids_were_folded_is_adopted_with_its_data(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    await make_legacy_folder(data_dir, "Alice")
    async with client_factory(user="Alice") as client:
        result = await client.call_tool("notes_search", {"query": "levain"})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["count"] >= 1
    assert sorted(p.name for p in (data_dir / "users").iterdir()) == ["alice"]


@pytest.mark.anyio
async def test_two_folders_of_one_user_are_a_clear_error_not_a_silent_choice(
    client_factory: Callable[..., Any], data_dir: Path
) -> None:
    await make_legacy_folder(data_dir, "ALICE")
    shutil.copytree(data_dir / "users" / "ALICE", data_dir / "users" / "alice", dirs_exist_ok=True)
    if (data_dir / "users" / "alice").samefile(data_dir / "users" / "ALICE"):
        pytest.skip("a case-insensitive file system cannot hold both")
    with pytest.raises(InvalidArgumentError) as refused:
        user_dir(data_dir, "alice")
    assert "ALICE, alice" in str(refused.value) and "merge them into users/alice" in str(refused.value)
    async with client_factory(user="alice") as client:
        text = await error(client, "notes_search", query="levain")
    assert "several folders" in text and str(data_dir) not in text


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An HS256 server whose one user's notes were imported as `--user Alice`."""
    tmp = tmp_path_factory.mktemp("user-case")
    folder = tmp / "notes"
    folder.mkdir()
    (folder / "crystals.md").write_text(
        "# alice note\n\nAlice keeps zanzibarite crystals.\n", encoding="utf-8"
    )
    cli(tmp / "data", "import", "notes", str(folder), "--user", "Alice")
    process, url = start(tmp / "data", tmp / "server.log", {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET})
    try:
        yield url
    finally:
        stop(process)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("subject", ["alice", "Alice", "ALICE"])
async def test_a_jwt_for_alice_in_any_case_reads_the_same_data(server: str, subject: str) -> None:
    headers = {"Authorization": f"Bearer {token(subject)}"}
    assert await found(server, headers, "zanzibarite") == ["alice note"]
