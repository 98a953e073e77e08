"""`serve --transport http --workers N`: N processes answering on one port, sharing state.

uvicorn's supervisor starts N worker processes (spawned, each with its own event loop, server,
database pools and PostgreSQL pool) and restarts one that dies. Each worker listens on the
port with its own SO_REUSEPORT socket (`WorkerSocket`), so the kernel deals new connections
across the workers, and Nagle's algorithm is off on every connection. The app is built in
each worker from the settings the supervisor pickles to it (`worker_app`), never through the
environment, so secrets stay off the process table.

Several workers need `database_url`: sessions and rate limits live in process memory or behind a
per-process cache with SQLite, so they would not be shared. Items stay in the per-user SQLite
files (WAL: one writer, many readers, across processes). One worker at a time runs the
background embedding (`embed_in_background`): the one holding `<data_dir>/.embedding.lock`;
when it ends, the worker uvicorn starts in its place takes the lock up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import IO, Any

import anyio
import uvicorn
from loguru import logger
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.supervisors import Multiprocess

from knowledge_mcp.sources.errors import KnowledgeError

from ...app import Services, build_server
from ...config import Settings
from ...logs import configure_logging
from ...watch import start_watching
from ..collecting import fewer_collections
from ..departures import QuietDepartures, quiet_departure_logs
from ..http import http_app
from ..http_security import is_loopback
from ..ws.server import ws_app

WORKER_HEADER = b"x-knowledge-worker"
LOCK_NAME = ".embedding.lock"
HEALTHCHECK_S = 60
"""How long the supervisor waits for a worker to answer (uvicorn's 5 s default killed workers that
were still importing on a busy 2-core machine, over and over)."""
_held: list[IO[bytes]] = []  # the lock file stays open (and locked) for the worker's life


class WorkersError(KnowledgeError):
    pass


def check_workers(settings: Settings) -> None:
    """Refuse several workers without shared state, in one sentence saying why."""
    if settings.workers > 1 and settings.database_url is None:
        raise WorkersError(
            f"--workers {settings.workers} needs database_url (PostgreSQL): with SQLite, sessions and "
            "rate limits would not be shared between the workers"
        )
    if settings.workers > 1 and settings.port == 0:
        raise WorkersError("--workers needs a fixed --port: each worker binds it")


HEALTHCHECK_S = 60
"""How long the supervisor waits for a worker's answer to its ping before it kills and replaces
the worker. A spawned worker answers only once it has imported the server; uvicorn's 5 s
default killed workers still importing on a busy machine, again and again (the restarted
worker is as slow), so the server never had its second worker."""


def run_workers(settings: Settings, uvicorn_options: dict[str, Any]) -> None:
    """Serve on one port with `settings.workers` processes until interrupted."""
    config = uvicorn.Config(
        partial(worker_app, settings),
        factory=True,
        workers=settings.workers,
        timeout_worker_healthcheck=HEALTHCHECK_S,
        **uvicorn_options,
    )
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    bound = WorkerSocket(family, settings.host, settings.port, config.backlog)
    logger.info("{} workers on http://{}:{}/mcp", settings.workers, settings.host, settings.port)
    Multiprocess(config, sockets=[bound]).run()


class WorkerSocket(socket.socket):
    """A TCP socket with SO_REUSEPORT that each worker re-creates for itself when it is handed over.

    uvicorn's supervisor pickles the sockets it is given to every worker it spawns. Pickled, this
    one binds and listens anew in the worker (`listening`), so each worker has its own listening
    socket on the port and the kernel deals new connections across them by a hash of their
    addresses. With one socket shared by all, the worker that has just answered is the first to
    accept again: sequential calls all went to one worker. The supervisor's own copy is bound
    (so a taken port fails at once) but never listens, so it takes no connections."""

    def __init__(self, family: int, host: str, port: int, backlog: int) -> None:
        super().__init__(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.where, self.backlog = (family, host, port), backlog
        self.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.bind((host, port))

    def __reduce__(self) -> tuple[Any, ...]:
        family, host, port = self.where
        return listening, (family, host, port, self.backlog)


def listening(family: int, host: str, port: int, backlog: int) -> socket.socket:
    """A worker's own listening socket on the port (asyncio sets TCP_NODELAY on its connections,
    as it does only for a socket that says IPPROTO_TCP)."""
    sock = WorkerSocket(family, host, port, backlog)
    sock.listen(backlog)
    sock.setblocking(False)
    return sock


def worker_app(settings: Settings) -> ASGIApp:
    """One worker's app: the same server and transports as a single process, its pid on each
    HTTP response (`X-Knowledge-Worker`), the embedding only where the lock was won."""
    configure_logging(settings.log_level, library_debug=settings.log_library_debug, process=True)
    quiet_departure_logs()
    mcp, host = build_server(settings, authenticate=not settings.no_auth)
    http = http_app(mcp, settings, host)
    ws = ws_app(mcp, host.verifier, settings.ws_idle_timeout_s, loopback=is_loopback(settings.host))
    run_with_host(http, host, embed=holds_embedding_lock(settings.data_dir))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await (ws if scope["type"] == "websocket" else http)(scope, receive, send)

    return QuietDepartures(named_worker(app))


def run_with_host(app: Starlette, host: Services, *, embed: bool) -> None:
    """Start the embedding worker and the folder watcher (`serve --watch`) when `embed` (the one
    worker holding the lock does the background work) once `app` has started; close the host's
    databases when it stops."""
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with inner(application) as state:
            watcher = None
            if embed:
                host.start_background()
                watcher = start_watching(host, every_user=not host.settings.no_auth)
            try:
                with fewer_collections():  # the built server, frozen
                    yield state
            finally:
                if watcher is not None:
                    await watcher.stop()
                await host.close()

    app.router.lifespan_context = lifespan


def holds_embedding_lock(data_dir: Path) -> bool:
    """Whether this process now holds `<data_dir>/.embedding.lock` (then it embeds)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = (data_dir / LOCK_NAME).open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _held.append(handle)
    logger.info("this worker embeds in the background")
    return True


def named_worker(app: ASGIApp) -> ASGIApp:
    """`app` with `X-Knowledge-Worker: <pid>` on its HTTP responses (which worker answered)."""
    pid = str(os.getpid()).encode()

    async def named(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (WORKER_HEADER, pid)]}
            await send(message)

        await app(scope, receive, sending)

    return named


def serve_workers(settings: Settings, prepare: Any, uvicorn_options: dict[str, Any]) -> None:
    """Check the settings and credentials (`prepare`, async) in this process, then serve."""
    check_workers(settings)
    anyio.run(prepare, settings)
    run_workers(settings, uvicorn_options)
