"""What a person sees first of a prompt: prompts_get at its defaults returns the prompt itself,
a name hit shows what the prompt is for, and the keys of real libraries (SillyTavern's system
prompt presets `{name, content}`, `{name, prompt}` lists) are read, not dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.prompts.parsing import field_key, parse_prompt_file
from tests.conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio

PRESET = {  # the shape of a SillyTavern system prompt preset (default/content/presets/sysprompt)
    "name": "Lighthouse Narrator",
    "content": "You narrate a slow, atmospheric story set on a storm-bound lighthouse. "
    "Describe weather and sound in detail and never speak for {{user}}.",
}


@pytest.fixture
async def prompts_client(data_dir: Path, client_factory: Any, tmp_path: Path) -> Any:
    folder = tmp_path / "sysprompt"
    folder.mkdir()
    (folder / "Lighthouse Narrator.json").write_text(json.dumps(PRESET, indent=4))
    await import_into(data_dir, "prompts", folder, FIXTURES / "prompts")
    async with client_factory() as client:
        yield client


@pytest.mark.parametrize(
    "key, field",
    [
        ("content", "system_prompt"),
        ("prompt", "user_prompt"),
        ("Content", "system_prompt"),
        ("system prompt", "system_prompt"),
        ("description", "details"),
        ("contents", "contents"),
    ],
)
def test_library_keys_map_to_prompt_fields(key: str, field: str) -> None:
    assert field_key(key) == field


def test_a_sillytavern_preset_keeps_its_text_as_the_system_prompt(tmp_path: Path) -> None:
    path = tmp_path / "Lighthouse Narrator.json"
    path.write_text(json.dumps(PRESET))
    (item,) = parse_prompt_file(path, path.read_bytes())
    assert [c.field for c in item.chunks or []] == ["name", "system_prompt"]
    assert item.meta["summary"].startswith("You narrate a slow, atmospheric story")
    assert item.meta["summary_field"] == "system_prompt"


async def test_get_by_name_at_defaults_returns_the_whole_prompt(prompts_client: Any) -> None:
    got = await call(prompts_client, "prompts_get", prompt_id_or_name="code reviewer")
    assert got["mode_used"] == "full" and got["truncated"] is False and got["next"] is None
    for heading in (
        "## Name",
        "## Author",
        "## Details",
        "## System prompt",
        "## User prompt",
        "## Keywords",
    ):
        assert heading in got["content"]
    assert "Label every finding as BLOCKER, SHOULD-FIX or NIT." in got["content"]
    assert "```diff\n{{diff}}\n```" in got["content"]  # placeholders kept as written


async def test_get_by_name_of_a_preset_returns_its_system_prompt(prompts_client: Any) -> None:
    got = await call(prompts_client, "prompts_get", prompt_id_or_name="Lighthouse Narrator")
    assert "never speak for {{user}}" in got["content"]


async def test_a_name_hit_shows_what_the_prompt_is_for(prompts_client: Any) -> None:
    (hit, *_) = (await call(prompts_client, "prompts_search", query="Code Reviewer"))["results"]
    assert hit["title"] == "Code Reviewer"
    assert hit["snippet"].startswith("Reviews a diff like a senior engineer")
    assert "summary" not in hit and hit["loc"]["field"] == "details"  # the summary is in get's meta
    meta = (await call(prompts_client, "prompts_get", prompt_id_or_name=hit["uri"], loc=hit["loc"]))["meta"]
    # the prompt's summary is its details, which its snippet opens with: the wire leaves out the copy
    assert meta["snippet"].startswith("Reviews a diff like a senior engineer") and "summary" not in meta
    preset = (await call(prompts_client, "prompts_search", query="Lighthouse"))["results"][0]
    assert preset["snippet"].startswith("You narrate") and preset["loc"]["field"] == "system_prompt"


async def test_a_hit_in_a_prompt_field_still_shows_that_field(prompts_client: Any) -> None:
    (hit, *_) = (await call(prompts_client, "prompts_search", query="deserialisation"))["results"]
    assert hit["loc"]["field"] == "system_prompt" and "deserialisation" in hit["snippet"]


async def test_get_at_defaults_stays_within_max_tokens_and_says_how_to_go_on(prompts_client: Any) -> None:
    got = await call(
        prompts_client, "prompts_get", prompt_id_or_name="Code Reviewer", retrieval={"max_tokens": 200}
    )
    assert got["mode_used"] == "full" and got["estimated_tokens"] <= 200 and got["truncated"] is True
    assert got["next"]["retrieval"] == {"mode": "full", "max_tokens": 200}
    rest = await call(
        prompts_client,
        "prompts_get",
        prompt_id_or_name="Code Reviewer",
        loc=got["next"]["loc"],
        retrieval=got["next"]["retrieval"],
    )
    assert rest["content"] and rest["content"] not in got["content"]


async def test_an_explicit_snippet_mode_is_still_a_snippet(prompts_client: Any) -> None:
    got = await call(
        prompts_client, "prompts_get", prompt_id_or_name="Code Reviewer", retrieval={"mode": "snippet"}
    )
    assert got["mode_used"] == "snippet" and got["content"] == "Code Reviewer"
