"""The per-request config layer of the defaults, and its warnings in tool results.

Precedence (DESIGN §9): explicit tool input > session defaults > request config > server
config. The request's call (`server/call.py`) resolves the config once per `tools/call` from the
transport, and lays the session's defaults over it:

- streamable HTTP: the `X-Knowledge-Config` header and the `config` query parameter of this
  HTTP request (the header wins key by key); its warnings go into this request's result;
- WebSocket: the connection's config (`?config=` on its URL, then `config` in `initialize`);
  its warnings go into the next tool result on that connection, once.

A problem with the config never fails the call: it becomes a line in the result's `warnings`
(when the result has that field) and a `warning: …` line in its text.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from mcp.server.context import HandlerResult, ServerRequestContext
from mcp_types import CallToolResult
from starlette.requests import HTTPConnection

from .request_config import EMPTY, RequestConfig, parse

CONFIG_HEADER = "x-knowledge-config"
CONFIG_QUERY = "config"


@runtime_checkable
class CarriesConfig(Protocol):
    """A transport request object that keeps its own config (the WebSocket connection's)."""

    def take_request_config(self) -> RequestConfig:
        """The connection's config, with warnings not yet shown (handed out once)."""
        ...


def http_request_config(connection: HTTPConnection) -> RequestConfig:
    """The config an HTTP request carries: header over query parameter, key by key."""
    query = connection.query_params.get(CONFIG_QUERY)
    header = connection.headers.get(CONFIG_HEADER)
    from_query = parse(query, "config (query parameter)") if query is not None else EMPTY
    from_header = parse(header, "X-Knowledge-Config") if header is not None else EMPTY
    return from_header.over(from_query)


def config_of(request: ServerRequestContext[Any, Any]) -> RequestConfig:
    transport = request.request
    if transport is None:  # stdio and the in-memory transport carry no config
        return EMPTY
    if isinstance(transport, CarriesConfig):
        return transport.take_request_config()
    if isinstance(transport, HTTPConnection):
        return http_request_config(transport)
    return EMPTY


def with_config_warnings(result: HandlerResult, config: RequestConfig) -> HandlerResult:
    """A tool call's result with its request config's warnings, if any."""
    if not config.warnings:
        return result
    if isinstance(result, CallToolResult):
        return with_warnings(result, config.warnings)
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        return wire_with_warnings(result, config.warnings)  # the SDK hands middleware the wire form
    return result


def with_warnings(result: CallToolResult, warnings: tuple[str, ...]) -> CallToolResult:
    """`result` with `warnings` added (see `wire_with_warnings`)."""
    wire = wire_with_warnings(result.model_dump(by_alias=True, mode="json", exclude_none=True), warnings)
    return CallToolResult.model_validate(wire)


# Search pages (`results`) and get results (`meta`) publish `warnings`, left out while empty.
WARNS_WHEN_EMPTY = frozenset({"results", "meta"})


def wire_with_warnings(result: dict[str, Any], warnings: tuple[str, ...]) -> dict[str, Any]:
    """A wire-form tool result with `warnings` added: to its structured `warnings` and its text.

    A search or get result whose empty `warnings` was left out counts as having one. A result
    with no `warnings` list (or no structured content at all, like the deep-research aliases
    whose first text block is JSON) keeps its content and gets one more text block, so nothing
    that parses the first block breaks.
    """
    lines = "\n".join(f"warning: {w}" for w in warnings)
    structured = result.get("structuredContent")
    content = list(result.get("content", []))
    updated = dict(result)
    first = content[0] if content else None
    if isinstance(structured, dict) and (
        isinstance(structured.get("warnings"), list) or WARNS_WHEN_EMPTY & structured.keys()
    ):
        earlier = structured.get("warnings", [])
        updated["structuredContent"] = {**structured, "warnings": [*earlier, *warnings]}
        if isinstance(first, dict) and first.get("type") == "text":
            content[0] = {**first, "text": f"{first['text']}\n{lines}"}
        else:
            content.append({"type": "text", "text": lines})
    else:
        content.append({"type": "text", "text": lines})
    updated["content"] = content
    return updated
