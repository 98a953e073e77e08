"""The split eval's hybrid run borrows each document's vectors: which document a chunk holds."""

from __future__ import annotations

import pytest

from knowledge_mcp.bench.split.vectors import document_key, lent


@pytest.mark.parametrize(
    ("origin", "source", "expected"),
    [
        ("scifact#10009203", "notes", "d10009203"),  # the eval's import of SciFact
        ("beir#7", "notes", "d7"),
        ("/tmp/x/single/d123.md", "notes", "d123"),
        ("/tmp/x/single/xmedia12.md", "notes", "xmedia12"),  # a media distractor in the single index
        ("/tmp/x/split/media/x12.html", "media", "xmedia12"),  # ... and the same one in media
        ("/tmp/x/split/notes/x3.md", "notes", "xnotes3"),
        ("/tmp/x/split/chats/conversations.json#d55", "chats", "d55"),
        ("/tmp/x/split/characters/d7.json", "characters", "d7"),
    ],
)
def test_a_chunk_s_document_is_read_from_its_item_s_origin(origin: str, source: str, expected: str) -> None:
    assert document_key(origin, source) == expected


def test_a_chunk_borrows_the_same_position_or_the_last_one_before_it() -> None:
    lender = {("d1", 0): (1, b"a"), ("d1", 1): (1, b"b")}
    assert lent(lender, "d1", 1) == (1, b"b")
    assert lent(lender, "d1", 4) == (1, b"b")
    assert lent(lender, "d1", 0) == (1, b"a")
    assert lent(lender, "d2", 0) is None
