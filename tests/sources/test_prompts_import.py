"""Importing prompts: every format, one chunk per field, lists, re-import, prune, broken files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.prompts import source
from knowledge_mcp.sources.prompts.parsing import PromptFileError
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, import_into

PROMPTS = FIXTURES / "prompts"
BROKEN = FIXTURES / "broken" / "prompts"


def parse(path: Path) -> list[Any]:
    return source.parse_file(path, path.read_bytes())


def fields_of(item: Any) -> dict[str, str]:
    return {c.field: item.content[c.start : c.end] for c in item.chunks}


def write(tmp_path: Path, name: str, text: str) -> list[Any]:
    path = tmp_path / name
    path.write_text(text)
    return parse(path)


@pytest.mark.parametrize(
    "file, name, author, keywords, system_start, user_part",
    [
        (
            "code-reviewer.json",
            "Code Reviewer",
            "Jonas Eklund",
            ["code review", "pull request", "engineering", "security"],
            "You are a senior {{language}} engineer",
            "```diff\n{{diff}}\n```",
        ),
        (
            "meeting-summarizer.yaml",
            "Meeting Summarizer",
            "Priya Raman",
            ["meetings", "summarisation", "action items"],
            "You summarise meetings",
            "Attendees: {{attendees}}",
        ),
        (
            "socratic-tutor.yml",
            "Socratic Tutor",
            "Hannah Cole",
            ["education", "tutoring", "socratic method", "homework"],
            "You are a patient tutor",
            "I'm stuck on this: {{question}}",
        ),
        (
            "sql-explainer.toml",
            "SQL Explainer",
            "Marcus Oyelaran",
            ["sql", "databases", "query plans", "performance"],
            "You are a database engineer",
            "about {{row_count}} rows",
        ),
        (
            "email-polisher.md",
            "Email Polisher",
            "Dana Whitfield",
            ["email", "writing", "tone", "editing"],
            "You are an editor who makes work emails",
            "Recipient: {{recipient}}",
        ),
    ],
)
def test_every_format_imports_with_the_right_fields(
    file: str, name: str, author: str, keywords: list[str], system_start: str, user_part: str
) -> None:
    (item,) = parse(PROMPTS / file)
    assert (item.key, item.title, item.tags, item.meta["author"]) == ("", name, keywords, author)
    fields = fields_of(item)
    assert list(fields) == ["name", "author", "details", "system_prompt", "user_prompt", "keywords"]
    assert fields["name"] == name and fields["author"] == author
    assert fields["system_prompt"].startswith(system_start)
    assert user_part in fields["user_prompt"]
    assert fields["keywords"] == ", ".join(keywords)
    assert fields["details"] and "## " not in fields["details"]


def test_markdown_body_before_the_first_section_is_details() -> None:
    (item,) = parse(PROMPTS / "email-polisher.md")
    fields = fields_of(item)
    assert fields["details"].startswith("Rewrites a rough draft into a clear, friendly email")
    assert fields["details"].endswith("putting off.")
    assert fields["system_prompt"].endswith("with a subject line.")
    assert fields["user_prompt"].startswith("Tone: {{tone}}") and fields["user_prompt"].endswith("{{draft}}")
    assert item.meta["format"] == "markdown"


def test_markdown_sections_ignore_headings_in_code_and_keep_other_sections(tmp_path: Path) -> None:
    text = (
        "# Changelog Writer\n\nTurns commits into notes.\n\n## System prompt\n\nWrite like this:\n\n"
        "```markdown\n## Added\n- thing\n```\n\n## Examples\n\nv1.2: added zebras.\n\n"
        "## user prompt\n\n{{commits}}\n"
    )
    (item,) = write(tmp_path, "changelog.md", text)
    fields = fields_of(item)
    assert item.title == "Changelog Writer"  # no front matter: the `# ` heading names it
    assert "## Added\n- thing" in fields["system_prompt"]
    assert fields["user_prompt"] == "{{commits}}"
    assert fields["details"] == "Turns commits into notes.\n\n## Examples\nv1.2: added zebras."


def test_a_list_of_prompts_is_one_item_each_keyed_by_name(tmp_path: Path) -> None:
    items = write(
        tmp_path,
        "pack.yaml",
        "- name: Haiku Maker\n  system_prompt: Write a haiku.\n  keywords: poetry, short\n"
        "- name: Limerick Maker\n  user_prompt: A limerick about {{topic}}\n",
    )
    assert [(i.key, i.title) for i in items] == [
        ("haiku maker", "Haiku Maker"),
        ("limerick maker", "Limerick Maker"),
    ]
    assert items[0].tags == ["poetry", "short"]


def test_duplicate_names_in_a_list_are_keyed_by_index(tmp_path: Path) -> None:
    items = write(
        tmp_path, "twins.json", '[{"name": "Twin", "details": "a"}, {"name": "twin", "details": "b"}]'
    )
    assert [i.key for i in items] == ["0", "1"]


def test_toml_prompts_array_and_a_nameless_prompt_named_after_the_file(tmp_path: Path) -> None:
    items = write(
        tmp_path,
        "set.toml",
        '[[prompts]]\nname = "Translator"\nsystem_prompt = "Translate to {{lang}}."\n\n'
        '[[prompts]]\nuser_prompt = "Summarise {{text}}"\ntags = ["summary"]\n',
    )
    assert [i.title for i in items] == ["Translator", "set #2"]
    assert items[1].tags == ["summary"]
    (single,) = write(tmp_path, "bare.json", '{"systemPrompt": "Be terse."}')
    assert single.title == "bare" and fields_of(single)["system_prompt"] == "Be terse."


def test_own_dates_are_used_when_present(tmp_path: Path) -> None:
    (item,) = write(
        tmp_path,
        "dated.yaml",
        "name: Dated\ndetails: x\ncreated: 2024-02-03\nupdated: 2024-05-06T07:08:09Z\n",
    )
    assert item.created_at == "2024-02-03T00:00:00+00:00"
    assert item.last_modified == "2024-05-06T07:08:09+00:00"


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("bad.json", '{"name": "x",', "not valid JSON"),
        ("bad.toml", 'name = "x', "not valid TOML"),
        ("scalar.yaml", "just a string", "expected a prompt object"),
        ("mixed.json", '[{"name": "ok"}, 3]', "prompt 2 of the list is not an object"),
        ("nested.json", '{"name": "x", "system_prompt": {"a": 1}}', "system_prompt"),
        ("nameless.md", "---\nauthor: me\n---\nJust some words.\n", "no name"),
    ],
)
def test_files_that_are_not_prompts_raise_clear_errors(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    with pytest.raises(PromptFileError, match=message):
        write(tmp_path, name, text)


def test_broken_fixtures_raise_clear_errors() -> None:
    with pytest.raises(PromptFileError, match="not valid YAML"):
        parse(BROKEN / "invalid.yaml")
    with pytest.raises(PromptFileError, match="no name"):
        parse(BROKEN / "missing-name.json")


@pytest.mark.anyio
async def test_reimport_of_the_fixture_folder_changes_nothing(data_dir: Path) -> None:
    first = await import_into(data_dir, "prompts", PROMPTS)
    assert (first.added, first.files_failed) == (5, 0)
    second = await import_into(data_dir, "prompts", PROMPTS)
    assert (second.added, second.updated, second.unchanged) == (0, 0, 5)


@pytest.mark.anyio
async def test_broken_files_are_reported_and_the_rest_import(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(PROMPTS, folder)
    shutil.copytree(BROKEN, folder / "broken")
    summary = await import_into(data_dir, "prompts", folder)
    assert summary.added == 5 and summary.files_failed == 2 and summary.exit_code == 2
    reasons = {Path(f["path"]).name: f["reason"] for f in summary.failures}
    assert "not valid YAML" in reasons["invalid.yaml"]
    assert "no name" in reasons["missing-name.json"]


async def _titles(data_dir: Path) -> set[str]:
    db = await open_database(database_path(data_dir, "local", "prompts"), source.migrations)
    try:
        return {r["title"] for r in await db.fetchall("SELECT title FROM prompts_items")}
    finally:
        await db.close()


@pytest.mark.anyio
async def test_prune_removes_the_prompts_of_a_deleted_file(data_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    shutil.copytree(PROMPTS, folder)
    await import_into(data_dir, "prompts", folder)
    (folder / "sql-explainer.toml").unlink()
    summary = await import_into(data_dir, "prompts", folder, prune=True)
    assert summary.pruned == 1
    assert "SQL Explainer" not in await _titles(data_dir) and len(await _titles(data_dir)) == 4


@pytest.mark.anyio
async def test_a_prompt_removed_from_a_list_file_is_dropped_and_an_edit_bumps_the_version(
    data_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "pack.yaml"
    path.write_text("- name: Alpha\n  details: first\n- name: Beta\n  details: second\n")
    await import_into(data_dir, "prompts", path)
    path.write_text("- name: Alpha\n  details: first, edited\n")
    summary = await import_into(data_dir, "prompts", path)
    assert summary.updated == 1
    assert await _titles(data_dir) == {"Alpha"}
    db = await open_database(database_path(data_dir, "local", "prompts"), source.migrations)
    try:
        row = await db.fetchone("SELECT version FROM prompts_items")
    finally:
        await db.close()
    assert row is not None and row["version"] == 2


def test_an_unsupported_file_type_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PromptFileError, match=r"unsupported file type '\.txt'"):
        write(tmp_path, "notes.txt", "name: x")
