"""What reaches a log: an exception as code locations only (never a local variable or its
message), and the libraries' own loggers held at WARNING unless `log_library_debug`."""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import Iterator

import pytest
from loguru import logger

from knowledge_mcp.server.logs import configure_logging
from knowledge_mcp.server.logs.guard import content_free_trace, guard_logs

CANARY = "plantedcanary"


def fail_with_content(note_text: str) -> None:
    title = f"{CANARY}title"  # a local a diagnosing traceback would print
    raise ValueError(f"cannot index {note_text} under {title}")


def fail_writing(path: str) -> None:
    try:
        fail_with_content(path)
    except ValueError as exc:
        raise OSError(errno.ENAMETOOLONG, "File name too long", path) from exc


@pytest.fixture
def captured() -> Iterator[list[str]]:
    """A sink that would show everything: diagnose and backtrace on, DEBUG."""
    guard_logs()
    lines: list[str] = []
    sink = logger.add(
        lines.append, level="DEBUG", format="{level} {message}\n{exception}", diagnose=True, backtrace=True
    )
    try:
        yield lines
    finally:
        logger.remove(sink)


@pytest.fixture
def stdlib_logging() -> Iterator[None]:
    """configure_logging changes the process's logging: put it back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    uvicorn_level = logging.getLogger("uvicorn.error").level
    try:
        yield
    finally:
        root.handlers[:], root.level = handlers, level
        logging.getLogger("uvicorn.error").setLevel(uvicorn_level)
        logger.remove()
        logger.add(sys.stderr, level="DEBUG")  # loguru's default sink, which configure_logging removed


def test_a_logged_exception_names_where_it_failed_but_no_value(captured: list[str]) -> None:
    try:
        fail_writing(f"/notes/{CANARY}path.md")
    except OSError:
        logger.exception("note could not be written")
    text = "".join(captured)
    assert CANARY not in text
    assert "note could not be written" in text
    assert "raised ValueError (message withheld)" in text
    assert "then raised OSError (errno 36) (message withheld)" in text
    assert "in fail_with_content" in text and "tests/server/test_log_guard.py:" in text
    assert "Traceback" not in text


def test_an_exception_logged_by_a_library_loses_its_values_too(stdlib_logging: None) -> None:
    configure_logging("INFO")
    captured: list[str] = []
    sink = logger.add(captured.append, level="DEBUG", format="{level} {message}\n{exception}", diagnose=True)
    try:
        try:
            fail_with_content(f"{CANARY}note")
        except ValueError:
            logging.getLogger("mcp.server").exception("Tool %r raised an unexpected exception", "notes_get")
    finally:
        logger.remove(sink)
    text = "".join(captured)
    assert "Tool 'notes_get' raised an unexpected exception" in text
    assert "raised ValueError (message withheld)" in text
    assert CANARY not in text


def test_the_trace_of_no_exception_is_empty() -> None:
    assert content_free_trace(None) == ""


def test_library_loggers_stop_at_warning_even_at_debug(stdlib_logging: None) -> None:
    configure_logging("DEBUG")
    lines: list[str] = []
    sink = logger.add(lines.append, level="TRACE", format="{level} {message}")
    try:
        logging.getLogger("aiosqlite").debug("executing INSERT ... (%r,)", f"{CANARY} note body")
        logging.getLogger("watchfiles.main").info("1 change detected: %s", f"/notes/{CANARY}.md")
        logging.getLogger("httpx").info("HTTP Request: GET /?q=%s", CANARY)
        logging.getLogger("aiosqlite").warning("a library warning")
        logging.getLogger("uvicorn.error").info("Uvicorn running on http://127.0.0.1:8000")
        logging.getLogger("uvicorn.error").debug("< TEXT %r", f'{{"query": "{CANARY}"}}')  # a WS frame
    finally:
        logger.remove(sink)
    text = "".join(lines)
    assert CANARY not in text
    assert "WARNING a library warning" in text
    assert "INFO Uvicorn running on" in text  # its start-up lines follow log_level


def test_the_library_debug_setting_lets_library_lines_through(stdlib_logging: None) -> None:
    configure_logging("DEBUG", library_debug=True)
    lines: list[str] = []
    sink = logger.add(lines.append, level="TRACE", format="{level} {message}")
    try:
        logging.getLogger("aiosqlite").debug("executing %s", "SELECT 1")
    finally:
        logger.remove(sink)
    assert "DEBUG executing SELECT 1" in "".join(lines)


def test_trace_is_a_log_level_the_standard_library_takes_too(stdlib_logging: None) -> None:
    configure_logging("TRACE")  # logging.basicConfig(level="TRACE") raised ValueError
    assert logging.getLogger().level == logging.WARNING
