"""What writes may store (issue 25, item 5): a note never grows past `max_note_bytes` (appends
included), and the notes a user writes into their folder under the data dir stay within
`notes_quota_mb`; both refused with a sentence naming the field, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, error

pytestmark = pytest.mark.anyio

PARAGRAPH = "The starter doubled overnight; the crumb was open and glossy. "  # 62 characters


def notes_dir(data_dir: Path) -> Path:
    return data_dir / "users" / "local" / "notes"


async def test_appends_cannot_grow_a_note_past_one_megabyte(data_dir: Path, client_factory: Any) -> None:
    chunk = PARAGRAPH * 9_600  # about 595 KB
    async with client_factory(duplicate_check_ms=0) as client:
        made = await call(client, "notes_create", title="Bake log", content="Day one.")
        grown = await call(client, "notes_update", note_id=made["id"], append=chunk)
        message = await error(client, "notes_update", note_id=made["id"], append=chunk)
        again = await call(client, "notes_get", note_id=made["id"])
    assert grown["version"] == 2
    assert "append:" in message and "more than the 1,000,000 a note may have" in message
    file = notes_dir(data_dir) / "Bake log.md"
    assert 590_000 < file.stat().st_size < 600_000  # the refused append left the file as it was
    assert again["meta"]["version"] == 2


async def test_a_new_note_or_new_content_past_the_maximum_is_refused(client_factory: Any) -> None:
    async with client_factory(max_note_bytes=2_000, duplicate_check_ms=0) as client:
        refused = await error(client, "notes_create", title="Too long", content=PARAGRAPH * 40)
        made = await call(client, "notes_create", title="Short", content=PARAGRAPH)
        replaced = await error(client, "notes_update", note_id=made["id"], content=PARAGRAPH * 40)
    assert "content:" in refused and "2,000 a note may have" in refused
    assert "content:" in replaced and "split the text into several notes" in replaced


async def test_writes_past_the_users_quota_are_refused_and_shrinking_is_allowed(
    data_dir: Path, client_factory: Any
) -> None:
    body = PARAGRAPH * 60  # about 3.8 KB a note; the quota is 10 KB
    async with client_factory(notes_quota_mb=0.01, duplicate_check_ms=0) as client:
        first = await call(client, "notes_create", title="One", content=body)
        await call(client, "notes_create", title="Two", content=body)
        over = await error(client, "notes_create", title="Three", content=body)
        grow = await error(client, "notes_update", note_id=first["id"], append=body)
        shrunk = await call(client, "notes_update", note_id=first["id"], content=PARAGRAPH)
        third = await call(client, "notes_create", title="Three", content=body)
    assert "content:" in over and "more than your quota of 10,000" in over
    assert "append:" in grow and "quota" in grow
    assert shrunk["version"] == 2 and third["version"] == 1
    assert sorted(p.name for p in notes_dir(data_dir).iterdir()) == ["One.md", "Three.md", "Two.md"]


async def test_the_local_users_own_notes_dir_is_not_counted_against_the_quota(
    tmp_path: Path, client_factory: Any
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    async with client_factory(notes_dir=vault, notes_quota_mb=0.001, duplicate_check_ms=0) as client:
        for n in range(3):
            await call(client, "notes_create", title=f"Note {n}", content=PARAGRAPH * 20)
    assert len(list(vault.iterdir())) == 3
