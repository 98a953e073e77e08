"""No crowding: one place per e-mail thread and per content, on real mail imported twice."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.media.models import MediaResult
from knowledge_mcp.sources.search.describe.results import collapse, content_key
from tests.conftest import FIXTURES, call, import_into

pytestmark = pytest.mark.anyio

THREAD = Path(__file__).parents[1] / "data" / "email" / "grimoirelab-thread.mbox"
EMAILS = FIXTURES / "media" / "emails"
NOTE = FIXTURES / "notes" / "recipes" / "sourdough-country-loaf.md"


def hit(uri: str, thread: str | None, text: str) -> MediaResult:
    result = MediaResult.model_validate(
        {
            "id": uri,
            "source": "media",
            "uri": f"media://{uri}",
            "title": "t",
            "snippet": "",
            "score": 0.5,
            "rank": 1,
            "created_at": "2024-01-01T00:00:00+00:00",
            "last_modified": "2024-01-01T00:00:00+00:00",
            "media_type": "email",
            "thread_id": thread,
        }
    )
    result._content_key = content_key("t", text)
    return result


@pytest.mark.parametrize(
    ("hits", "kept", "thread_hits", "duplicates"),
    [
        ([("a", None, "x"), ("b", None, "y")], ["a", "b"], [None, None], [None, None]),
        ([("a", "T", "x"), ("b", "T", "y"), ("c", "T", "z")], ["a"], [2], [None]),
        ([("a", None, "x"), ("b", None, "x")], ["a"], [None], [["media://b"]]),
        (
            [("a", "T", "x"), ("b", "T", "x"), ("c", "U", "y")],
            ["a", "c"],
            [None, None],
            [["media://b"], None],
        ),
        ([("a", "T", "x"), ("b", None, "y"), ("c", "T", "z")], ["a", "b"], [1, None], [None, None]),
    ],
)
def test_a_thread_and_a_content_take_one_place_held_by_their_best_hit(
    hits: list[tuple[str, str | None, str]],
    kept: list[str],
    thread_hits: list[int | None],
    duplicates: list[list[str] | None],
) -> None:
    out = collapse([hit(*h) for h in hits])
    assert [r.id for r in out] == kept
    assert [r.thread_hits for r in out] == thread_hits
    assert [r.duplicates for r in out] == duplicates


@pytest.fixture
async def mail(data_dir: Path, tmp_path: Path) -> Path:
    """A real mailing-list thread beside the fixture mail (a team thread of four replies)."""
    summary = await import_into(data_dir, "media", THREAD, EMAILS)
    assert summary.added == 3 + 7 and not summary.files_failed
    return data_dir


@pytest.fixture
async def note_twice(data_dir: Path, tmp_path: Path) -> Path:
    """One note file kept in two folders of a vault, beside the other notes."""
    for folder in ("recipes", "archive"):
        (tmp_path / folder).mkdir()
        shutil.copy(NOTE, tmp_path / folder / NOTE.name)
    await import_into(
        data_dir, "notes", tmp_path / "recipes", tmp_path / "archive", FIXTURES / "notes" / "work"
    )
    return data_dir


@pytest.mark.parametrize(("query", "others"), [("GrimoireLab", 2), ("offsite", 3)])
async def test_one_thread_takes_one_place_held_by_its_best_message(
    mail: Path, client_factory: Any, query: str, others: int
) -> None:
    async with client_factory() as client:
        crowded = await call(client, "media_search", query=query, limit=5)
        merged = await call(client, "knowledge_search", query=query, seen="show")
    for out in (crowded, merged):
        threads = [r["thread_id"] for r in out["results"] if r.get("thread_id")]
        assert len(threads) == len(set(threads)) >= 1
        best = out["results"][0]
        assert best["thread_id"] and best["thread_hits"] == others


async def test_the_same_file_in_two_folders_is_one_result_naming_the_other(
    note_twice: Path, client_factory: Any
) -> None:
    async with client_factory() as client:
        own = await call(client, "notes_search", query="sourdough")
        merged = await call(client, "knowledge_search", query="sourdough", seen="show")
    for out in (own, merged):
        copies = [r for r in out["results"] if r["title"] == own["results"][0]["title"]]
        assert len(copies) == 1 and len(copies[0]["duplicates"]) == 1
        assert (
            copies[0]["duplicates"][0].startswith("notes://")
            and copies[0]["duplicates"][0] != copies[0]["uri"]
        )


async def test_a_result_without_crowding_leaves_the_fields_out(mail: Path, client_factory: Any) -> None:
    async with client_factory() as client:
        out = await call(client, "media_search", query="invoice")
    assert out["results"] and all("thread_hits" not in r and "duplicates" not in r for r in out["results"])
