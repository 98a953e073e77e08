"""The write tools through the real server over stdio: the local user writes into the folder
their notes were imported from (by the real CLI), and the next search finds the note."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from knowledge_mcp.sources.text.frontmatter import split_front_matter
from tests.conftest import FIXTURES, ROOT, cli_import, serve_args

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TEXT = "Quokkas on Rottnest Island are most active at dawn; bring water and keep a respectful distance."


async def test_create_then_the_same_text_again_then_a_stale_update_over_stdio(tmp_path: Path) -> None:
    vault, data_dir = Path(shutil.copytree(FIXTURES / "notes", tmp_path / "vault")), tmp_path / "data"
    cli_import("notes", vault, data_dir)
    params = StdioServerParameters(command=sys.executable, args=serve_args(data_dir), cwd=ROOT)
    with anyio.fail_after(90):
        async with Client(params) as client:
            first = await client.call_tool(
                "notes_create", {"title": "Rottnest", "content": TEXT, "tags": ["travel"]}
            )
            found = await client.call_tool("notes_search", {"query": "quokkas rottnest dawn"})
            again = await client.call_tool("notes_create", {"title": "Rottnest trip", "content": TEXT})
            note = first.structured_content
            moved = await client.call_tool("notes_update", {"note_id": note["uri"], "append": "Ferry at 8."})
            stale = await client.call_tool(
                "notes_update", {"note_id": note["uri"], "content": "lost", "expected_version": 1}
            )
            after = await client.call_tool(
                "notes_get", {"note_id": note["uri"], "retrieval": {"mode": "full"}}
            )
    assert not first.is_error, first.content[0].text
    path = vault / note["path"]
    front, body = split_front_matter(path.read_text(encoding="utf-8"))
    assert note["path"] == "Rottnest.md" and front["title"] == "Rottnest" and front["tags"] == ["travel"]
    assert found.structured_content["results"][0]["uri"] == note["uri"]
    assert again.structured_content["recommendation"] == "review_first"
    assert again.structured_content["duplicates"][0]["uri"] == note["uri"]
    assert moved.structured_content["version"] == 2
    assert stale.is_error and "version 2, not 1" in stale.content[0].text
    assert body.rstrip().endswith("Ferry at 8.") and "lost" not in path.read_text(encoding="utf-8")
    assert after.structured_content["meta"]["version"] == 2
