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


def configure_logging(level: str = "INFO") -> None:
    logger.remove()
    logger.add(sys.stderr, level=level, format="{time:HH:mm:ss.SSS} {level: <7} {message}", backtrace=False)
    logging.basicConfig(handlers=[_InterceptHandler()], level=level, force=True)
    for noisy in ("uvicorn.access", "httpx", "httpcore", "mcp"):
        logging.getLogger(noisy).setLevel("WARNING")
