"""Protocol errors carry the spec's code and a plain sentence; nothing is logged above INFO."""

from __future__ import annotations

from typing import Any

import pytest
from loguru import logger
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

pytestmark = pytest.mark.anyio


async def test_an_unknown_prompt_is_invalid_params_naming_it(client_factory: Any) -> None:
    logged: list[str] = []
    sink = logger.add(lambda m: logged.append(m.record["level"].name), level="WARNING")
    try:
        async with client_factory() as client:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("no-such-prompt", {"secret": "query text"})
            assert (await client.list_tools()).tools  # the connection still serves
    finally:
        logger.remove(sink)
    assert refused.value.code == INVALID_PARAMS
    assert "'no-such-prompt'" in refused.value.message and "prompts" in refused.value.message
    assert logged == []
