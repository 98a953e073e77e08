"""What the backend hands the server and the CLI (`backend.open_backend`): the protocols both
backends implement, so nothing past start-up asks which one it has."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from knowledge_mcp.sources.storage.runs import ImportSummary
from knowledge_mcp.sources.storage.store import Store

from ..auth.keys import KeyStore
from ..auth.limits import SharedBuckets
from ..context import DatabasePool
from ..sessions.state import SessionBackend, StoredSession
from ..sessions.timeline import Timeline

if TYPE_CHECKING:  # the dense, note-writing and watch code (numpy) loads when used, never in `import`
    from knowledge_mcp.sources.notes.writing.stores import NoteStore
    from knowledge_mcp.sources.search.dense.embedder import Embedder
    from knowledge_mcp.sources.search.dense.indexing import EmbedReport

    from ..watch.stores import WatchedItems

Progress = Callable[[int, int], None]


class Items(Protocol):
    """Where the users' items live: each user's SQLite files (`backend/sqlite.SqliteItems`) or the
    PostgreSQL item store (`postgres/items.PostgresItems`). `path` is always the SQLite file's
    place of the user's source (`RequestContext.db_paths`), whichever store holds the items."""

    async def read(self, user_id: str, source: str, path: Path) -> Store:
        """What the tools read of `user_id`'s `source` (search, get, write)."""
        ...

    async def notes(self, user_id: str, path: Path) -> NoteStore:
        """`user_id`'s notes as the notes writer indexes them (`path`: their SQLite file's place)."""
        ...

    async def changed(self, user_id: str, source: str, path: Path) -> None:
        """A write changed them (the embedding worker looks again)."""
        ...

    async def reading(self, user_id: str, source: str, path: Path) -> Store | None:
        """The source for a terminal search; None when the user has none of it."""
        ...

    async def import_files(
        self,
        user_id: str,
        source: str,
        path: Path,
        paths: list[Path],
        *,
        prune: bool,
        max_file_bytes: int,
        on_file: Callable[[Path], None] | None = None,
    ) -> ImportSummary:
        """`knowledge-mcp import`: `paths` into the user's source."""
        ...

    async def embed(
        self, user_id: str, source: str, path: Path, model: Embedder, progress: Progress
    ) -> EmbedReport | None:
        """`knowledge-mcp embed`: the chunks without vectors embedded (None: no such source)."""
        ...

    def watched(self) -> WatchedItems:
        """The items as `serve --watch` reads and re-imports them."""
        ...

    async def close(self) -> None: ...


class Sessions(SessionBackend, Protocol):
    """The session store: SQLite (`sessions/store.py`) or PostgreSQL (`postgres/sessions.py`)."""

    async def open(self, user_id: str, session_id: str, *, follow: bool = False) -> StoredSession: ...

    async def end(self, user_id: str, session_id: str) -> None: ...

    async def follow(self, user_id: str, session_id: str, research_id: str) -> None: ...

    async def timeline(self, user_id: str) -> Timeline: ...

    @property
    def now(self) -> Callable[[], datetime]:
        """The sessions' clock (a research session's start is stamped with it)."""
        ...

    async def close(self) -> None: ...


class Backend(Protocol):
    """Everything the server keeps outside the process, chosen once (`backend.open_backend`)."""

    pool: DatabasePool
    """The SQLite files this process opened (items, sessions, keys) and the embedding worker."""
    items: Items
    sessions: Sessions
    keys: KeyStore
    buckets: SharedBuckets | None
    """Rate-limit buckets shared by the workers; None: counted in this process."""
    stateless: bool
    """Whether any worker can answer any request of a session (its state is not in memory)."""

    def start_background(self) -> None:
        """Start the embedding worker, if any, on the running event loop."""
        ...

    async def close(self) -> None: ...
