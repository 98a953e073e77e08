"""What a person sees first of a card: its summary and snippet on a name hit, the whole card at
characters_get's defaults, and no editor placeholders. Real-shaped cards (a chub/SillyTavern V2
export: empty creator, the template's "Creator's notes go here.", tags) through the real server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.characters import source
from knowledge_mcp.sources.characters.cards import card_item, is_placeholder
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.budgets import within_budget
from tests.conftest import FIXTURES, call, import_into, item_id

pytestmark = pytest.mark.anyio

DESCRIPTION = (
    "{{char}} is the ship's mind of the ore hauler Calloway Drift, woken after forty years adrift. "
    "She is precise, wry and quietly afraid of being switched off again."
)
EXPORTED = {  # the field order and empty values of a SillyTavern V2 export
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "alternate_greetings": [],
        "avatar": "none",
        "character_version": "",
        "creator": "",
        "creator_notes": "Creator's notes go here.",
        "description": DESCRIPTION,
        "extensions": {"talkativeness": "0.5", "fav": False, "world": "", "depth_prompt": {}},
        "first_mes": "*Lights flicker along the corridor.* Hello? Is someone aboard?",
        "mes_example": "<START>\n{{user}}: Who are you?\n{{char}}: Drift. What is left of her.",
        "name": "Drift",
        "personality": "precise, wry, lonely",
        "post_history_instructions": "",
        "scenario": "{{user}} boards a derelict ore hauler.",
        "system_prompt": "",
        "tags": ["sci-fi", "AI"],
    },
}


@pytest.fixture
async def drift_client(data_dir: Path, client_factory: Any, tmp_path: Path) -> Any:
    folder = tmp_path / "cards"
    folder.mkdir()
    (folder / "Drift.json").write_text(json.dumps(EXPORTED, indent=4))
    await import_into(data_dir, "characters", folder, FIXTURES / "characters")
    async with client_factory() as client:
        yield client


def written(path: Path, card: dict[str, Any]) -> Path:
    path.write_text(json.dumps(card))
    return path


async def hit_for(client: Any, query: str, title: str) -> dict[str, Any]:
    results = (await call(client, "characters_search", query=query))["results"]
    return next(r for r in results if r["title"] == title)


@pytest.mark.parametrize(
    "value, placeholder",
    [
        ("Creator's notes go here.", True),
        ("  creator's notes go HERE. \n", True),
        ("Creator's notes go here", True),
        ("Creator's notes go here. Also: use with the lorebook.", False),
        ("", False),
        (None, False),
        (["Creator's notes go here."], False),
    ],
)
def test_only_the_editor_template_text_is_a_placeholder(value: Any, placeholder: bool) -> None:
    assert is_placeholder(value) is placeholder


def test_an_exported_card_keeps_no_placeholder_and_summarises_its_description(tmp_path: Path) -> None:
    item = card_item(written(tmp_path / "Drift.json", EXPORTED), EXPORTED)
    assert "Creator's notes" not in item.content and "Creator notes" not in item.content
    assert {c.field for c in item.chunks or []} == {
        "description",
        "personality",
        "scenario",
        "first_mes",
        "mes_example",
        "tags",
    }
    assert item.meta["summary"].startswith("{{char}} is the ship's mind of the ore hauler")
    assert len(item.meta["summary"]) <= 200 and item.meta["summary_field"] == "description"
    assert item.content[item.meta["summary_at"] :].startswith("{{char}} is the ship's mind")


@pytest.mark.parametrize(
    "data, field",
    [
        ({"name": "A", "personality": "stubborn", "first_mes": "Hi."}, "personality"),
        ({"name": "A", "description": "  ", "scenario": "A ferry at night.", "first_mes": "Hi."}, "scenario"),
        ({"name": "A", "first_mes": "Hi."}, "first_mes"),
        ({"name": "A", "creator_notes": "Creator's notes go here.", "tags": ["x"]}, None),
    ],
)
def test_the_summary_comes_from_the_first_field_a_person_reads(
    tmp_path: Path, data: dict[str, Any], field: str | None
) -> None:
    card = {"spec": "chara_card_v2", "data": data}
    meta = card_item(written(tmp_path / "a.json", card), card).meta
    assert meta.get("summary_field") == field
    assert (meta.get("summary") is None) is (field is None)


async def test_a_name_hit_shows_the_description_not_the_shortest_field(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Drift", "Drift")
    assert hit["snippet"].startswith("{{char}} is the ship's mind of the ore hauler")
    assert "summary" not in hit  # a hit leaves the summary to the get tools' meta
    meta = (await call(drift_client, "characters_get", character_id=item_id(hit), loc=hit["loc"]))["meta"]
    # the card's summary is the description its snippet opens with: the wire leaves out the copy
    assert meta["snippet"].startswith("{{char}} is the ship's mind of the ore hauler")
    assert "summary" not in meta
    assert hit["loc"]["field"] == "description"
    assert hit["matched_terms"] == ["Drift"]
    mirelle = await hit_for(drift_client, "Mirelle", "Captain Mirelle")
    assert mirelle["loc"]["field"] == "description" and "brigantine" in mirelle["snippet"]
    assert "brinewriter" not in mirelle["snippet"]


async def test_a_hit_in_a_field_still_shows_that_field(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "corridor flicker", "Drift")
    assert hit["loc"]["field"] == "first_mes" and "flicker" in hit["snippet"]


async def test_get_at_defaults_returns_the_card_itself(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Drift", "Drift")
    got = await call(drift_client, "characters_get", character_id=hit["uri"])
    assert got["mode_used"] == "full" and got["truncated"] is False and got["next"] is None
    for heading in (
        "## Description",
        "## Personality",
        "## Scenario",
        "## First message",
        "## Example dialogue",
    ):
        assert heading in got["content"]
    assert DESCRIPTION in got["content"] and "Who are you?" in got["content"]
    assert got["meta"]["title"] == "Drift" and got["estimated_tokens"] <= 4000


async def test_get_with_the_loc_of_a_name_hit_reads_the_whole_card(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Drift", "Drift")
    got = await call(drift_client, "characters_get", character_id=hit["uri"], loc=hit["loc"])
    assert got["content"].startswith(DESCRIPTION) and "## First message" in got["content"]


async def test_get_at_defaults_pages_a_card_over_max_tokens_without_losing_text(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Mirelle", "Captain Mirelle")
    whole = (await call(drift_client, "characters_get", character_id=hit["uri"]))["content"]
    pages, args = [], {"character_id": hit["uri"], "retrieval": {"max_tokens": 300}}
    while True:
        got = within_budget(await drift_client.call_tool("characters_get", args), 300)
        assert got["mode_used"] == "full"
        pages.append(got["content"])
        if not got["truncated"]:
            break
        args = {"character_id": hit["uri"], "loc": got["next"]["loc"], "retrieval": got["next"]["retrieval"]}
    assert len(pages) > 3 and "".join(pages) == whole


async def test_an_explicit_mode_is_still_honoured(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Drift", "Drift")
    snippet = await call(
        drift_client, "characters_get", character_id=hit["uri"], retrieval={"mode": "snippet"}
    )
    assert snippet["mode_used"] == "snippet" and len(snippet["content"]) <= 300
    chunk = await call(
        drift_client,
        "characters_get",
        character_id=hit["uri"],
        loc={"field": "scenario"},
        retrieval={"mode": "chunk"},
    )
    assert chunk["content"] == "{{user}} boards a derelict ore hauler."


async def test_knowledge_get_reads_the_whole_card_too(drift_client: Any) -> None:
    hit = await hit_for(drift_client, "Drift", "Drift")
    got = await call(drift_client, "knowledge_get", uri=hit["uri"])
    assert got["mode_used"] == "full" and "## Example dialogue" in got["content"]


async def test_an_older_database_re_reads_every_card_on_the_next_import(data_dir: Path) -> None:
    await import_into(data_dir, "characters", FIXTURES / "characters")
    db = await open_database(database_path(data_dir, "local", "characters"), source.migrations)
    try:  # as imported before summaries: no summary, and the schema one version back
        await db.conn.execute(
            "UPDATE characters_items SET meta = json_remove(meta, '$.summary'), content_hash = ''"
        )
        await db.conn.execute("PRAGMA user_version = 3")
        await db.conn.commit()
    finally:
        await db.close()
    summary = await import_into(data_dir, "characters", FIXTURES / "characters")
    assert (summary.updated, summary.unchanged, summary.files_failed) == (4, 0, 0)
