"""The one place sources are registered: a source is a package `sources.<name>` listed here,
exporting its `source`; its MCP tools are `sources.<name>.tools.register`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import InvalidArgumentError
from .source import ChunkedSource

if TYPE_CHECKING:  # the SDK is loaded only when a server is built (`registrars`)
    from mcp.server.mcpserver import MCPServer

SOURCE_NAMES: tuple[str, ...] = ("notes", "media", "chats", "characters", "prompts")


def _load() -> dict[str, Any]:
    modules = {}
    for name in SOURCE_NAMES:
        try:
            modules[name] = importlib.import_module(f"knowledge_mcp.sources.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"knowledge_mcp.sources.{name}":
                raise
    return modules


_MODULES = _load()

SOURCES: dict[str, ChunkedSource[Any]] = {name: m.source for name, m in _MODULES.items()}


def registrars() -> list[Callable[[MCPServer, Callable[[str], str]], None]]:
    """Each source's `tools.register(mcp, rename)`: its tool table (and resources), published under
    the names `rename` spells. Imported here, when a server is built, so that the
    command line's import and search never load the MCP SDK."""
    return [importlib.import_module(f"{m.__name__}.tools").register for m in _MODULES.values()]


def get_source(name: str) -> ChunkedSource[Any]:
    if name not in SOURCES:
        raise InvalidArgumentError("source", f"must be one of {', '.join(SOURCES)}")
    return SOURCES[name]
