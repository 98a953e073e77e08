"""Logging: loguru to stderr only (stdout belongs to the protocol in stdio mode), and the
per-request log line.

Log lines carry ids, tools and timings; never query text, content, tokens or keys.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from loguru import logger

from knowledge_mcp.sources.errors import KnowledgeError

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


def configure_logging(level: str = "INFO") -> None:
    logger.remove()
    logger.add(sys.stderr, level=level, format="{time:HH:mm:ss.SSS} {level: <7} {message}", backtrace=False)
    logging.basicConfig(handlers=[_InterceptHandler()], level=level, force=True)
    for noisy in ("uvicorn.access", "httpx", "httpcore", "mcp", "websockets"):
        logging.getLogger(noisy).setLevel("WARNING")
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _HideQueryStrings) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(_HideQueryStrings())


CONTENT_ARGUMENTS = frozenset({"quote", "claim", "text"})
"""Arguments that carry words of the user's files or of an answer about them (verify_quote,
session_cite, session_note): the DEBUG line gives their length only."""


def _loggable(arguments: Any) -> Any:
    if not isinstance(arguments, dict):
        return arguments
    return {
        k: f"<{len(v)} chars>" if k in CONTENT_ARGUMENTS and isinstance(v, str) else v
        for k, v in arguments.items()
    }


def log_requests(
    user_of: Callable[[ServerRequestContext[Any, Any]], str],
) -> ServerMiddleware[Any]:
    """Server middleware: one INFO line per MCP request, with what an operator needs to follow it.

    `request <id> rpc=<json-rpc id> user=… client=… method=… [tool=…] outcome=ok|tool_error|error
    ms=…`. The arguments (query text included) appear only at DEBUG; tokens, keys and headers
    never reach a middleware, and document content never appears here at all.
    """
    from mcp.shared.exceptions import MCPError  # here: the SDK loads only when a server is built

    from .tool_list import is_write_tool

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing answers it, nothing to time
            return await call_next(ctx)
        request_id = secrets.token_hex(4)
        params = ctx.params or {}
        tool = params.get("name") if ctx.method == "tools/call" else None
        if ctx.method == "tools/call":
            given = params.get("arguments")
            if is_write_tool(tool) and isinstance(given, dict):  # a note's text is content: names only
                given = sorted(given)
            arguments = json.dumps(_loggable(given), default=str)  # one line, escaped
            logger.debug("request {} arguments {}", request_id, arguments[:2000])
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
                f" tool={_clean(tool)}" if tool is not None else "",
                outcome,
                elapsed_ms,
            )

    return middleware


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


def _clean(value: object, limit: int = 64) -> str:
    """Peer-supplied text on one line, printable, bounded: no forged log lines."""
    if value is None:
        return "-"
    text = "".join(ch if ch.isprintable() and not ch.isspace() else "?" for ch in str(value))
    return text if len(text) <= limit else text[:limit] + "…"
