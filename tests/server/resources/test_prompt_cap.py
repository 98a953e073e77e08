"""prompts/get output is capped like a resource's text (`resource_max_chars`): arguments that
would render a longer prompt are refused (-32602, one sentence) before anything is rendered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.conftest import import_into

pytestmark = pytest.mark.anyio

ECHO = "---\nname: Echo\n---\n\n## User prompt\n\n" + "Say {{ word }}. " * 50 + "\n"


@pytest.fixture
async def echo(data_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "echo.md").write_text(ECHO, encoding="utf-8")
    await import_into(data_dir, "prompts", folder)
    return data_dir


async def test_an_argument_said_in_many_placeholders_cannot_render_past_the_cap(
    client_factory: Any, echo: Path
) -> None:
    async with client_factory(resource_max_chars=10_000) as client:
        short = await client.get_prompt("echo", {"word": "hello"})
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("echo", {"word": "x" * 1_000})  # 50 × 1,000 characters
        assert (await client.list_prompts()).prompts  # the server keeps serving
    text = short.messages[0].content.text  # type: ignore[union-attr]
    assert text.count("Say hello.") == 50
    assert refused.value.error.code == INVALID_PARAMS
    message = refused.value.error.message
    assert message.startswith("arguments:") and "more than the 10,000 allowed" in message


async def test_the_default_cap_is_the_resources_one(client_factory: Any, echo: Path) -> None:
    async with client_factory() as client:
        fits = await client.get_prompt("echo", {"word": "y" * 1_900})  # 95,000 characters
        with pytest.raises(MCPError):
            await client.get_prompt("echo", {"word": "y" * 2_100})  # 105,000
    assert len(fits.messages[0].content.text) > 95_000  # type: ignore[union-attr]
