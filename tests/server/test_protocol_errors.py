"""Protocol errors carry the spec's code and a plain sentence (never code 0); nothing is logged
above INFO, and what is logged holds no value of the request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings

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


async def raw_request(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send a request as given, past the client's own checks (a hostile peer's message)."""
    answer: dict[str, Any] = await client.session._dispatcher.send_raw_request(method, params, {})
    return answer


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"name": ["x"], "arguments": {}}, "params.name must be text"),
        ({"name": {"a": 1}}, "params.name must be text"),
        ({"name": 7, "arguments": {}}, "params.name must be text"),
        ({"name": "notes_search", "arguments": ["x"]}, "params.arguments must be an object"),
    ],
)
async def test_a_tools_call_that_names_no_tool_is_invalid_params_never_code_0(
    client_factory: Any, params: dict[str, Any], says: str
) -> None:
    async with client_factory() as client:
        with pytest.raises(MCPError) as refused:
            await raw_request(client, "tools/call", params)
        assert (await client.list_tools()).tools  # the connection still serves
    assert refused.value.code == INVALID_PARAMS
    assert says in refused.value.message and "unhashable" not in refused.value.message


async def test_an_overlong_session_id_in_an_export_uri_is_invalid_params_naming_the_field(
    client_factory: Any,
) -> None:
    session_id = "longsessionid" * 16  # 208 characters; ids have at most 128
    logged: list[str] = []
    sink = logger.add(lambda m: logged.append(str(m)), level="DEBUG", format="{level} {message}")
    try:
        async with client_factory() as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(f"knowledge://sessions/{session_id}/export.md")
    finally:
        logger.remove(sink)
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message.startswith("session_id: must be 1..128 characters")
    assert session_id not in refused.value.message
    assert not [line for line in logged if line.startswith(("ERROR", "WARNING"))], logged
    assert session_id not in "\n".join(logged)


async def test_an_unexpected_failure_is_internal_error_with_a_fixed_sentence(data_dir: Path) -> None:
    """A handler that raises what nobody planned for: -32603 (not the SDK's code 0 with the
    exception's text), and the log has where it failed, not what it held."""
    mcp, host = build_server(Settings(data_dir=data_dir))

    async def broken(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "prompts/list":
            secret = "plantedcanaryvalue"  # a local variable a diagnosing traceback would print
            raise RuntimeError(f"plantedcanarymessage {secret}")
        return await call_next(ctx)

    mcp.middleware.append(broken)
    logged: list[str] = []
    sink = logger.add(lambda m: logged.append(str(m)), level="DEBUG", format="{level} {message}")
    try:
        async with Client(mcp) as client:
            with pytest.raises(MCPError) as refused:
                await client.list_prompts()
            assert (await client.list_tools()).tools  # the connection still serves
    finally:
        logger.remove(sink)
        await host.close()
    assert refused.value.code == INTERNAL_ERROR
    assert "plantedcanary" not in refused.value.message
    text = "\n".join(logged)
    assert "plantedcanary" not in text
    assert "raised RuntimeError (message withheld)" in text and "test_protocol_errors.py" in text
