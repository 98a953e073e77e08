"""An item's text within the resource cap, cut at a boundary, and the marker that reads on (pure)."""

from __future__ import annotations

import json
import re

import pytest

from knowledge_mcp.server.resources.capping import cap, marker


@pytest.mark.parametrize(
    ("text", "max_chars", "shown", "cut"),
    [
        ("short text", 100, "short text", None),
        ("x" * 100, 100, "x" * 100, None),
        ("first paragraph here\n\nsecond one that goes on", 24, "first paragraph here", 22),
        ("line one is long\nline two is long too", 20, "line one is long", 17),
        ("words words words words words", 20, "words words words", 18),
        ("abcdefghijklmnopqrstuvwxyz", 10, "abcdefghij", 10),
        ("a\n\n" + "b" * 100, 50, "a\n\n" + "b" * 47, 50),
    ],
)
def test_cap_cuts_at_a_boundary_near_the_cap_else_at_the_cap(
    text: str, max_chars: int, shown: str, cut: int | None
) -> None:
    capped = cap(text, max_chars)
    assert (capped.text, capped.cut) == (shown, cut)
    assert len(capped.text) <= max_chars
    if cut is not None:
        assert text[cut:].strip() and not text[len(capped.text) : cut].strip()


def test_the_marker_says_how_much_was_shown_and_both_calls_that_read_on() -> None:
    line = marker(
        shown=100_000,
        total=1_048_576,
        uri="notes://abc",
        get_tool="notes_get",
        id_field="note_id",
        item_id="abc",
        loc={"chunk_index": 3, "approx_offset": 100_002},
    )
    assert line.startswith("\n\n[truncated: 100,000 of 1,048,576 characters shown.")
    assert 'knowledge_get(uri="notes://abc", loc=' in line and 'notes_get(note_id="abc", loc=' in line
    locs = re.findall(r"loc=(\{[^}]*\})", line)
    assert [json.loads(x) for x in locs] == [{"chunk_index": 3, "approx_offset": 100_002}] * 2
    assert '"mode": "full"' in line
