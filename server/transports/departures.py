"""A client going away is a DEBUG line, not a traceback.

With many streamable-HTTP clients, some leave mid-request: a socket closed while the body is
sent or the answer streams, a session DELETEd while one of its calls runs. Each left a traceback
at ERROR: the SDK's "SSE response error" (`ClosedResourceError` of the session's closed stream),
uvicorn's "Exception in ASGI application" (`ClientDisconnect`), "ASGI callable returned without
completing response", "Unexpected ASGI message … after response already completed". None is
the server's fault and none needs anyone's attention, so:

- `QuietDepartures` wraps the HTTP app: a departure raised through it ends the request with one
  DEBUG line; a response left unfinished is finished (an empty last chunk) so the client's
  stream ends cleanly; a message sent after the response completed is dropped;
- `DepartureFilter` turns the SDK's and uvicorn's log records of a departure into one DEBUG line
  without the traceback. Any other exception keeps its traceback.
"""

from __future__ import annotations

import logging

import anyio
from loguru import logger
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEPARTURES: tuple[type[BaseException], ...] = (
    ClientDisconnect,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,  # reset, aborted, broken pipe
)
_LATE_MESSAGE = "after response already completed"
WATCHED_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager", "uvicorn.error")


def is_departure(exc: BaseException | None) -> bool:
    """Whether `exc` only says that the other side is gone (all of a group's errors, if a group)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(is_departure(inner) for inner in exc.exceptions)
    if isinstance(exc, RuntimeError) and _LATE_MESSAGE in str(exc):
        return True
    return isinstance(exc, DEPARTURES)


class QuietDepartures:
    """ASGI: HTTP requests whose client leaves end quietly; everything else passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = completed = False

        async def guarded_send(message: Message) -> None:
            nonlocal started, completed
            if completed:
                return  # a late write (a stream that outlived its response): nobody can read it
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                completed = True
            await send(message)

        departed = False
        try:
            await self.app(scope, receive, guarded_send)
        except Exception as exc:
            if not is_departure(exc):
                raise
            departed = True
            logger.debug("http client left during {} {} ({})", scope["method"], scope["path"], _name(exc))
        if not completed and (started or departed):  # an app that never answered stays uvicorn's error
            await _finish(scope, send, started)


async def _finish(scope: Scope, send: Send, started: bool) -> None:
    """End a response its app left unfinished: the last chunk of a started one, else a 503."""
    logger.debug(
        "http response to {} {} ended early: its client or session is gone", scope["method"], scope["path"]
    )
    try:
        if not started:
            body = b"the request's session or connection ended before it was answered"
            headers = [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        else:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    except Exception as exc:  # the transport is gone as well
        logger.debug("http response could not be ended ({})", _name(exc))


class DepartureFilter(logging.Filter):
    """Log records about a client that left become DEBUG, without their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_departure(exc):
            reason = f"{record.getMessage()} ({_name(exc)})"
            record.msg, record.args, record.exc_info, record.exc_text = (
                f"client left: {reason}",
                (),
                None,
                None,
            )
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_departure_logs() -> None:
    """Put `DepartureFilter` on the loggers that report departures (once)."""
    for name in WATCHED_LOGGERS:
        watched = logging.getLogger(name)
        if not any(isinstance(f, DepartureFilter) for f in watched.filters):
            watched.addFilter(DepartureFilter())


def _name(exc: BaseException | None) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return ", ".join(sorted({_name(inner) for inner in exc.exceptions}))
    return type(exc).__name__
