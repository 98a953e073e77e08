"""Logging: loguru to stderr only (stdout belongs to the protocol in stdio mode), and the
per-request log line.

Log lines carry ids, tools and timings; never query text, content, tokens or keys (at DEBUG
neither: see docs/logging.md). An exception logged anywhere keeps only its code locations
(`logs.guard`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import secrets
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from loguru import logger

from knowledge_mcp.sources.errors import KnowledgeError

from .guard import guard_logs

if TYPE_CHECKING:  # the command line configures logging without loading the MCP SDK
    from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext


class _InterceptHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        logger.opt(depth=6, exception=record.exc_info).log(level, record.getMessage())


# uvicorn's sans-I/O WebSocket protocol reports a handshake refused with an HTTP response (our
# 400/401/403 denials) as this error, though the response went out in full; it is not one.
_DENIAL_NOISE = "ASGI callable returned without completing handshake."


class _HideQueryStrings(logging.Filter):
    """uvicorn logs each WebSocket handshake with its path and query string; the query may hold
    `?token=` or `?config=`, so only the path is kept. A refused handshake is DEBUG, not ERROR."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _DENIAL_NOISE:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        if isinstance(record.args, tuple):
            record.args = tuple(
                arg.split("?", 1)[0] + "?…"
                if isinstance(arg, str) and arg.startswith("/") and "?" in arg
                else arg
                for arg in record.args
            )
        return True


# Libraries log through the standard library (our code uses loguru), and there they stop at WARNING:
# aiosqlite writes each SQL statement with its parameters at DEBUG (whole notes, session notes,
# claims), watchfiles the changed paths, httpx and uvicorn's access log the URLs.
# `log_library_debug = true` lets them through at `log_level`, for debugging a library.
OWN_LIBRARY_LINES = ("uvicorn.error",)
"""Loggers whose INFO lines follow `log_level`: uvicorn's start-up lines (the address, the
process). Below INFO they stop at WARNING like the rest: uvicorn hands `uvicorn.error` to the
WebSocket protocol, which logs every frame, content included, at DEBUG."""


class _LibraryLevel(logging.Filter):
    """Below `library_level`, only OWN_LIBRARY_LINES' INFO lines pass (a library that set its
    own logger to DEBUG still stops here)."""

    def __init__(self, library_level: int, level: int) -> None:
        super().__init__()
        self.library_level, self.level = library_level, level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.library_level:
            return True
        return record.name in OWN_LIBRARY_LINES and record.levelno >= max(self.level, logging.INFO)


def configure_logging(level: str = "INFO", *, library_debug: bool = False, process: bool = False) -> None:
    """loguru to stderr at `level`, exceptions without values (`logs.guard`); the standard
    library's loggers (only libraries use them here) at WARNING unless `library_debug`. With
    `process`, each line names its process (the workers of `serve --workers N`)."""
    guard_logs()
    logger.remove()
    logger.add(
        sys.stderr,
        level=level,
        format="{time:HH:mm:ss.SSS} {level: <7} " + ("[{process}] " if process else "") + "{message}",
        backtrace=False,
        diagnose=False,
    )
    own = _stdlib_level(level)
    library = own if library_debug else max(own, logging.WARNING)
    handler = _InterceptHandler()
    handler.addFilter(_LibraryLevel(library, own))
    logging.basicConfig(handlers=[handler], level=library, force=True)
    for name in OWN_LIBRARY_LINES:
        logging.getLogger(name).setLevel(own if library_debug else max(own, logging.INFO))
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _HideQueryStrings) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(_HideQueryStrings())


def _stdlib_level(level: str) -> int:
    """The standard library's number for a loguru level name (TRACE is 5 there)."""
    return 5 if level == "TRACE" else logging.getLevelNamesMapping().get(level, logging.INFO)


SHOWN_TEXT = frozenset(
    {
        "by", "format", "mode", "order_by", "seen", "sources", "media_types", "fields", "source",
        "uri", "uris", "id", "note_id", "media_id", "conversation_id", "character_id", "session_id",
    }
)  # fmt: skip
"""Arguments whose text names an id, a uri or a choice; every other text (a query, a title, a
quote, a note, a folder, a tag, a sender) is logged as its length only, at DEBUG too."""
SHOWN_CHARS = 100


def _key(key: object) -> str:
    """An argument's name as the tools spell theirs (snake_case), else only that it is a name."""
    text = str(key)
    return text if len(text) <= 40 and re.fullmatch(r"[a-z_][a-z0-9_]*", text) else "<name>"


def _loggable(value: Any, key: str = "") -> Any:
    """`value` with every text that may be content replaced by its length."""
    if isinstance(value, dict):
        return {_key(k): _loggable(v, str(k)) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        shown = [_loggable(item, key) for item in value[:20]]
        return [*shown, f"<{len(value) - 20} more>"] if len(value) > 20 else shown
    if isinstance(value, str):
        return value if key in SHOWN_TEXT and len(value) <= SHOWN_CHARS else f"<{len(value)} chars>"
    return value if value is None or isinstance(value, bool | int | float) else f"<{type(value).__name__}>"


def log_requests(
    user_of: Callable[[ServerRequestContext[Any, Any]], str],
) -> ServerMiddleware[Any]:
    """Server middleware: one INFO line per MCP request, with what an operator needs to follow it.

    `request <id> rpc=<json-rpc id> user=… client=… method=… [tool=…] outcome=ok|tool_error|error
    ms=…`. The arguments appear only at DEBUG, their text only where it is an id, a uri or a
    choice (`SHOWN_TEXT`): a query, a title or a quote is its length. Tokens, keys and headers
    never reach a middleware.
    """
    from mcp.shared.exceptions import MCPError  # here: the SDK loads only when a server is built

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing answers it, nothing to time
            return await call_next(ctx)
        request_id = secrets.token_hex(4)
        params = ctx.params or {}
        tool = params.get("name") if ctx.method == "tools/call" else None
        if ctx.method == "tools/call":  # the arguments' line made only when DEBUG is logged
            arguments = params.get("arguments")
            line = functools.partial(_line, arguments)
            logger.opt(lazy=True).debug("request {} arguments {}", lambda: request_id, line)
        outcome = "cancelled"
        started = time.perf_counter()
        try:
            with logger.contextualize(request_id=request_id):
                result = await call_next(ctx)
            outcome = "tool_error" if _is_tool_error(result) else "ok"
            return result
        except MCPError as exc:
            outcome = f"error({exc.error.code})"
            raise
        except Exception:
            outcome = "error"
            raise
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            logger.info(
                "request {} rpc={} user={} client={} method={}{} outcome={} ms={:.1f}",
                request_id,
                _clean(ctx.request_id),
                _user(user_of, ctx),
                _clean(_client(ctx)),
                _clean(ctx.method),
                f" tool={_tool_shown(tool)}" if ctx.method == "tools/call" else "",
                outcome,
                elapsed_ms,
            )

    return middleware


def _line(arguments: Any) -> str:
    """The arguments as the DEBUG line shows them: one line, escaped, at most 2,000 characters."""
    return json.dumps(_loggable(arguments), default=str)[:2000]


def _is_tool_error(result: HandlerResult) -> bool:
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", False) is True


UserOf = Callable[["ServerRequestContext[Any, Any]"], str]


def _user(user_of: UserOf, ctx: ServerRequestContext[Any, Any]) -> str:
    try:
        return user_of(ctx)
    except KnowledgeError:
        return "-"


def _client(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The client's name: from the handshake, or from `initialize` itself while it is served."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    if info is not None:
        return getattr(info, "name", None)
    if ctx.method == "initialize":
        client_info = (ctx.params or {}).get("clientInfo")
        if isinstance(client_info, dict):
            name = client_info.get("name")
            return name if isinstance(name, str) else None
    return None


def _tool_shown(name: object) -> str:
    """A called tool's name as logged: a name, or only what kind of thing was sent instead."""
    if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
        return name
    return f"<{len(name)} chars>" if isinstance(name, str) else f"<{type(name).__name__}>"


def _clean(value: object, limit: int = 64) -> str:
    """Peer-supplied text on one line, printable, bounded: no forged log lines."""
    if value is None:
        return "-"
    text = "".join(ch if ch.isprintable() and not ch.isspace() else "?" for ch in str(value))
    return text if len(text) <= limit else text[:limit] + "…"
