"""A session's timeline as Markdown (server/sessions/export.py, pure): one line per event, in
order, and the claims, notes and items after it."""

from __future__ import annotations

from typing import Any

import pytest

from knowledge_mcp.server.sessions.export import as_json, markdown
from knowledge_mcp.server.sessions.timeline import Event, Research

AT = "2026-11-24T09:05:33.123456+00:00"
TITLES = {"notes://n1": "Country Loaf"}
RESEARCH = Research("research-1", "Rye", AT, AT)


@pytest.mark.parametrize(
    "kind, payload, line",
    [
        (
            "search",
            {"query": "rye  levain", "uris": [f"notes://{n}" for n in range(7)], "count": 7},
            "**Searched** “rye levain” → 7 result(s): "
            "notes://0, notes://1, notes://2, notes://3, notes://4 …",
        ),
        ("get", {"uri": "notes://n1"}, "**Read** Country Loaf (notes://n1)"),
        ("get", {"uri": "notes://gone"}, "**Read** notes://gone"),
        (
            "verify",
            {"uri": "notes://n1", "quote": "rye\nferments", "found": True, "normalisations": ["whitespace"]},
            "**Checked a quote** in Country Loaf (notes://n1): “rye ferments” — "
            "verified (after normalising whitespace)",
        ),
        (
            "cite",
            {
                "uri": "notes://n1",
                "claim": "Rye is fast.",
                "quote": "rye ferments",
                "found": False,
                "similarity": 0.9,
            },
            "**Cited** Country Loaf (notes://n1); for: Rye is fast.; quote “rye ferments” — "
            "NOT found in the source (closest passage similarity 0.9)",
        ),
        (
            "cite",
            {"uri": "notes://n1", "stale": True},
            "**Cited** Country Loaf (notes://n1); STALE: the source changed since",
        ),
        ("note", {"text": "check rye"}, "**Note**: check rye"),
    ],
)
def test_each_event_is_one_line_of_the_timeline(kind: str, payload: dict[str, Any], line: str) -> None:
    text = markdown("research-1", RESEARCH, [Event(kind, payload, AT)], TITLES)
    assert f"1. 2026-11-24 09:05 UTC — {line}\n" in text


def test_the_document_lists_claims_notes_and_items_after_the_timeline() -> None:
    events = [
        Event("get", {"uri": "notes://n1"}, AT),
        Event("cite", {"uri": "notes://n1", "claim": "Rye is fast.", "quote": "rye", "found": True}, AT),
        Event("cite", {"uri": "media://m1"}, AT),
        Event("note", {"text": "check rye"}, AT),
    ]
    text = markdown("research-1", RESEARCH, events, TITLES)
    assert text.startswith("# Research: Rye\n\nSession `research-1`, started 2026-11-24 09:05 UTC")
    sections = [
        text.index(h) for h in ("## Timeline", "## Claims and sources", "## Notes", "## Items read or cited")
    ]
    assert sections == sorted(sections)
    assert "- Rye is fast. — [Country Loaf](notes://n1): “rye”, verified\n" in text
    assert "- (no claim given) — [media://m1](media://m1)\n" in text
    assert "- Country Loaf (notes://n1): read, cited\n- media://m1: cited\n" in text


def test_an_unnamed_empty_session_says_so() -> None:
    assert markdown("process-1", None, []) == "# Session process-1\n\n## Timeline\n\n(nothing yet)\n"


def test_the_json_export_keeps_every_event_with_its_payload() -> None:
    data = as_json("research-1", RESEARCH, [Event("note", {"text": "x"}, AT)])
    assert data == {
        "session_id": "research-1",
        "name": "Rye",
        "created_at": AT,
        "updated_at": AT,
        "events": [{"kind": "note", "at": AT, "text": "x"}],
    }
