"""The user's prompt library as MCP prompts: listed per caller with `{{var}}` arguments, rendered
by prompts/get, and a missing argument or unknown name is -32602 in a plain sentence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.conftest import FIXTURES, import_into

pytestmark = pytest.mark.anyio

# The front matter shape of Markdown prompt files that declare their variables (as rho-agent's
# prompt files do): required ones, and ones with a default.
JOB_PROMPT = """---
name: Failed job triage
description: Investigate a failed batch job
variables:
  cluster: { required: true }
  job_id: { default: "unknown" }
---

## System prompt

You are debugging a failed job on {{ cluster }}.

## User prompt

Investigate job {{ job_id }} on {{cluster}}.
"""


@pytest.fixture
async def prompts(data_dir: Path) -> Path:
    await import_into(data_dir, "prompts", FIXTURES / "prompts")
    return data_dir


async def test_prompts_list_shows_the_imported_prompts_with_their_placeholder_arguments(
    client_factory: Any, prompts: Path
) -> None:
    async with client_factory() as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(listed) == {
        "code-reviewer",
        "email-polisher",
        "meeting-summarizer",
        "socratic-tutor",
        "sql-explainer",
    }
    polisher = listed["email-polisher"]
    assert polisher.title == "Email Polisher"
    assert polisher.description and polisher.description.startswith("Rewrites a rough draft")
    assert [(a.name, a.required) for a in polisher.arguments or []] == [
        ("tone", True),
        ("recipient", True),
        ("draft", True),
    ]


async def test_prompts_get_renders_the_system_and_user_prompt_with_the_arguments(
    client_factory: Any, prompts: Path
) -> None:
    args = {"tone": "warm", "recipient": "Priya (landlord)", "draft": "hi, the boiler broke again"}
    async with client_factory() as client:
        got = await client.get_prompt("email-polisher", args)
    texts = [m.content.text for m in got.messages]  # type: ignore[union-attr]
    assert [m.role for m in got.messages] == ["user", "user"]
    assert texts[0].startswith("You are an editor who makes work emails shorter")
    assert texts[1] == "Tone: warm\nRecipient: Priya (landlord)\n\nDraft:\nhi, the boiler broke again"
    assert got.description and "rough draft" in got.description


async def test_a_missing_required_argument_is_invalid_params_naming_it(
    client_factory: Any, prompts: Path
) -> None:
    async with client_factory() as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("email-polisher", {"tone": "warm"})
        assert (await client.list_tools()).tools  # the connection still serves
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message == (
        "prompt 'email-polisher' needs the arguments 'recipient', 'draft'; pass them in arguments"
    )


async def test_a_declared_default_makes_an_argument_optional_and_fills_it(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "triage.md").write_text(JOB_PROMPT, encoding="utf-8")
    await import_into(data_dir, "prompts", folder)
    async with client_factory() as client:
        [listed] = (await client.list_prompts()).prompts
        assert listed.name == "failed-job-triage"
        assert [(a.name, a.required) for a in listed.arguments or []] == [
            ("cluster", True),
            ("job_id", False),
        ]
        got = await client.get_prompt("failed-job-triage", {"cluster": "prod-eu"})
        texts = [m.content.text for m in got.messages]  # type: ignore[union-attr]
        assert texts == ["You are debugging a failed job on prod-eu.", "Investigate job unknown on prod-eu."]
        again = await client.get_prompt("failed-job-triage", {"cluster": "prod-eu", "job_id": "4711"})
        assert again.messages[1].content.text == "Investigate job 4711 on prod-eu."  # type: ignore[union-attr]


async def test_the_list_is_read_per_call_so_a_new_import_shows_and_pages_continue(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    async with client_factory() as client:
        assert (await client.list_prompts()).prompts == []
        folder = tmp_path / "many"
        folder.mkdir()
        many = [{"name": f"Prompt {i:03}", "user_prompt": f"Say {{{{word}}}} {i} times."} for i in range(130)]
        (folder / "many.yaml").write_text(yaml.safe_dump(many), encoding="utf-8")
        await import_into(data_dir, "prompts", folder)
        first = await client.list_prompts()
        assert len(first.prompts) == 100 and first.next_cursor is not None
        rest = await client.list_prompts(cursor=first.next_cursor)
        names = [p.name for p in (*first.prompts, *rest.prompts)]
        assert len(names) == len(set(names)) == 130 and rest.next_cursor is None
        got = await client.get_prompt("prompt-129", {"word": "hello"})
        assert got.messages[0].content.text == "Say hello 129 times."  # type: ignore[union-attr]


async def test_two_prompts_of_one_name_get_distinct_names(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "twins"
    folder.mkdir()
    for n in (1, 2):
        (folder / f"twin{n}.json").write_text(
            f'{{"name": "Twin", "user_prompt": "twin {n}"}}', encoding="utf-8"
        )
    await import_into(data_dir, "prompts", folder)
    async with client_factory() as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
        assert names[0] == "twin" and names[1].startswith("twin-") and len(names) == 2
        texts = {(await client.get_prompt(n, {})).messages[0].content.text for n in names}  # type: ignore[union-attr]
    assert texts == {"twin 1", "twin 2"}
