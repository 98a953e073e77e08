"""The one place sources are registered.

A source is a package that declares its `entry` (a `source.SourceEntry`): its `source` (name,
id field, result model, migrations, parser), the MIME type and label of its items as resources,
and whether it has its own tools (`<package>.tools.register`). The built-in sources are the
packages `knowledge_mcp.sources.<name>` named in `BUILT_IN`: adding one is a package and a line
there. An application, or a test, adds a package of its own with `register_source` before it
builds the server.

Everything that names the sources reads them here: the CLI's choices, the aggregator's fan-out
and filters, the resource templates and listing, and the `sources`/`source` arguments of
`knowledge_search`/`knowledge_get` (`SourceChoice`, an enum of the names registered when the
server's tools are built).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema

from .errors import InvalidArgumentError
from .source import ChunkedSource, SourceEntry

if TYPE_CHECKING:  # the SDK is loaded only when a server is built (`registrars`)
    from mcp.server.mcpserver import MCPServer

BUILT_IN: tuple[str, ...] = ("notes", "media", "chats", "characters", "prompts")
"""The sources this package ships, in the order they are listed and searched."""

SOURCE_NAMES: list[str] = []
"""The registered sources by name, in order (changed only by `register_source` and
`unregister_source`: read them, never assign them)."""
_PACKAGES: dict[str, str] = {}
_LOADED: dict[str, SourceEntry] = {}
"""The entries imported so far: a built-in source's package is imported when the source is
first named (`knowledge-mcp import notes` loads only the notes package; docs/performance.md,
"Lazy imports")."""

V = TypeVar("V")


def _entry(name: str) -> SourceEntry:
    entry = _LOADED.get(name)
    if entry is None:
        entry = _LOADED[name] = _import_entry(_PACKAGES[name])
        if entry.name != name:
            raise ValueError(f"{_PACKAGES[name]}.entry is named {entry.name!r}, not {name!r}")
    return entry


def _import_entry(package: str) -> SourceEntry:
    entry = importlib.import_module(package).entry
    if not isinstance(entry, SourceEntry):
        raise TypeError(f"{package}.entry is not a SourceEntry")
    return entry


class _Registry(Mapping[str, V]):
    """The registered sources by name, in order; a source's package is imported at first use."""

    def __init__(self, pick: Callable[[SourceEntry], V]) -> None:
        self._pick = pick

    def __getitem__(self, name: str) -> V:
        if name not in _PACKAGES:
            raise KeyError(name)
        return self._pick(_entry(name))

    def __iter__(self) -> Iterator[str]:
        return iter(list(_PACKAGES))

    def __len__(self) -> int:
        return len(_PACKAGES)

    def __contains__(self, name: object) -> bool:
        return name in _PACKAGES

    def __repr__(self) -> str:
        return f"<registered sources {list(_PACKAGES)}>"


ENTRIES: Mapping[str, SourceEntry] = _Registry(lambda entry: entry)
SOURCES: Mapping[str, ChunkedSource[Any]] = _Registry(lambda entry: entry.source)


def register_source(package: str) -> SourceEntry:
    """Register the source package `package` (a module path whose `entry` is a `SourceEntry`)."""
    entry = _import_entry(package)
    if entry.name in _PACKAGES:
        raise ValueError(f"a source named {entry.name!r} is registered already")
    _PACKAGES[entry.name], _LOADED[entry.name] = package, entry
    SOURCE_NAMES.append(entry.name)
    return entry


def unregister_source(name: str) -> None:
    """Forget the source `name` (a test's own source, once the test is done)."""
    del _PACKAGES[name]
    _LOADED.pop(name, None)
    SOURCE_NAMES.remove(name)


def _register_built_in() -> None:
    """Name the built-in sources this install has, without importing them."""
    for name in BUILT_IN:
        package = f"knowledge_mcp.sources.{name}"
        if importlib.util.find_spec(package) is not None:  # else a source left out of this install
            _PACKAGES[name] = package
            SOURCE_NAMES.append(name)


_register_built_in()


def registrars() -> list[Callable[[MCPServer, Callable[[str], str]], None]]:
    """Each source's `tools.register(mcp, rename)`: its tool table (and resources), published under
    the names `rename` spells. Imported here, when a server is built, so that the command line's
    import and search never load the MCP SDK."""
    return [
        importlib.import_module(f"{_PACKAGES[name]}.tools").register
        for name, entry in ENTRIES.items()
        if entry.tools
    ]


def get_source(name: str) -> ChunkedSource[Any]:
    if name not in _PACKAGES:
        raise InvalidArgumentError("source", f"must be one of {', '.join(_PACKAGES)}")
    return _entry(name).source


class _Registered:
    """A tool argument naming a source: its schema is an enum of the sources registered when
    the schema is built (when a server builds its tools), its value one of them."""

    def __get_pydantic_core_schema__(self, source_type: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return handler.generate_schema(Literal[tuple(SOURCE_NAMES)])


SourceChoice = Annotated[str, _Registered()]
"""A registered source's name, as a tool argument (`knowledge_search(sources=[...])`)."""
