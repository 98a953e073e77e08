"""Logging: loguru to stderr only (stdout belongs to the protocol in stdio mode).

Log lines carry ids, tools and timings; never query text, content, tokens or keys.
"""

from __future__ import annotations

import logging
import sys

from loguru import logger


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
