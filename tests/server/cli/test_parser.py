"""The command line explains itself: a version, help text on every argument, and one ranking
across sources in the terminal search."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from knowledge_mcp.server.cli import main
from knowledge_mcp.server.cli.commands import run_search
from knowledge_mcp.server.cli.dispatch import build_parser
from knowledge_mcp.server.config import Settings
from tests.conftest import FIXTURES, import_into


def _parsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _parsers(child)
    return found


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    assert printed.startswith("knowledge-mcp ") and printed.split()[-1][0].isdigit()


def test_every_argument_of_every_command_has_help_text() -> None:
    missing = [
        f"{prog} {action.dest}"
        for prog, parser in _parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction) and not action.help
    ]
    assert not missing, missing


def test_an_argument_with_a_default_says_it_in_its_help() -> None:
    silent = [
        f"{prog} {action.dest}"
        for prog, parser in _parsers(build_parser())
        for action in parser._actions
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in (action.help or "")
    ]
    assert not silent, silent


@pytest.mark.anyio
async def test_the_terminal_search_ranks_one_list_across_sources(tmp_path: Path) -> None:
    for source in ("notes", "media", "chats"):
        await import_into(tmp_path, source, FIXTURES / source)
    rows = await run_search(
        Settings(data_dir=tmp_path), "project meeting notes", ["notes", "media", "chats"], 12
    )
    assert len({r["source"] for r in rows}) > 1
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
