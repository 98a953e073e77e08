"""Email import on real mail: decoded headers, one bad message of an archive, threads, and one
item per Message-ID whichever files hold it (re-import and --prune included)."""

from __future__ import annotations

import json
import mailbox
from email import policy
from email.parser import BytesParser
from pathlib import Path

import pytest

from knowledge_mcp.sources.media.formats.emails import parse_eml, parse_mbox
from knowledge_mcp.sources.media.formats.headers import decode_8bit, thread_id
from knowledge_mcp.sources.registry import get_source
from knowledge_mcp.sources.storage.db import database_path, open_database
from tests.conftest import FIXTURES, import_into

MAIL = Path(__file__).parent / "data" / "email"
THREAD = FIXTURES / "media" / "emails" / "team-thread.mbox"


def _escaped(text: str) -> str:
    """A header value as the stdlib parser holds its 8-bit bytes (surrogate escapes)."""
    return text.encode("utf-8", "surrogateescape").decode("ascii", "surrogateescape")


@pytest.mark.parametrize(
    "raw, charset, text",
    [
        (b"plain ascii", None, "plain ascii"),
        ("Jürgen Müller".encode(), None, "Jürgen Müller"),  # RFC 6532 UTF-8
        ("Jürgen Müller".encode("latin-1"), "iso-8859-1", "Jürgen Müller"),
        ("Jürgen Müller".encode("latin-1"), None, "Jürgen Müller"),  # undeclared: Windows-1252
        ("中文測試".encode("big5"), "big5", "中文測試"),
        ("中文測試".encode("big5"), "no-such-charset", "¤¤¤å´ú¸Õ"),
        ("Юникод запрещен".encode() + b"\xf1", None, "Юникод запрещен\ufffd"),  # UTF-8, one stray byte
    ],
)
def test_8bit_header_bytes_decode_by_utf8_then_the_declared_charset(
    raw: bytes, charset: str | None, text: str
) -> None:
    assert decode_8bit(raw.decode("ascii", "surrogateescape"), charset) == text


def _message(headers: str) -> object:
    return BytesParser(policy=policy.default).parsebytes(headers.encode() + b"\n\nbody\n")


@pytest.mark.parametrize(
    "headers, root",
    [
        ("Message-ID: <c@x>\nIn-Reply-To: <b@x>\nReferences: <a@x> <b@x>", "<a@x>"),
        ("Message-ID: <c@x>\nIn-Reply-To: <b@x>", "<b@x>"),
        ("Message-ID: <a@x>\nSubject: Re: Plan", "<a@x>"),
        ("Subject: Re: AW:  Plan  B", "Plan B"),
    ],
)
def test_thread_id_is_the_root_id_and_the_subject_only_without_ids(headers: str, root: str) -> None:
    msg = _message(headers)
    assert thread_id(msg, "Re: AW:  Plan  B") == root  # type: ignore[arg-type]


def test_headers_in_8bit_utf8_and_encoded_words_decode_without_surrogates() -> None:
    found = {}
    for name in ("from-encoding.eml", "gb2312-subject.eml", "malformed-headers.eml", "bilingual-simple.eml"):
        path = MAIL / name
        (found[name],) = parse_eml(path, path.read_bytes())
    assert found["from-encoding.eml"].meta["from"] == "Ingo Lütkebohle <ingo@blank.pages.de>"
    assert found["gb2312-subject.eml"].title == "代开各地增值税发票"
    assert found["gb2312-subject.eml"].meta["from"] == "张先生 <baoguan@hotmail.com>"
    assert found["gb2312-subject.eml"].meta["to"] == ["danglüe@email.com"]
    assert found["malformed-headers.eml"].meta["from"].startswith("Юникод запрещен")
    assert found["bilingual-simple.eml"].title == "Simple text. How are you? Как ты пож иваешь?"
    for item in found.values():
        json.dumps([item.title, item.content, item.meta], ensure_ascii=False).encode()  # no surrogates


def test_a_big5_subject_in_raw_bytes_is_decoded_by_its_declared_charset(tmp_path: Path) -> None:
    raw = (
        "From: 王小明 <wang@example.tw>\nSubject: 會議紀錄\nContent-Type: text/plain; charset=big5\n\n內容\n"
    )
    path = tmp_path / "big5.eml"
    path.write_bytes(raw.encode("big5"))
    (item,) = parse_eml(path, path.read_bytes())
    assert (item.title, item.meta["from"], item.content) == ("會議紀錄", "王小明 <wang@example.tw>", "內容")


def _mbox(path: Path, *messages: Path) -> Path:
    box = mailbox.mbox(path)
    for message in messages:
        box.add(message.read_bytes())
    box.close()
    return path


async def _stored(data_dir: Path) -> dict[str, dict[str, object]]:
    source = get_source("media")
    db = await open_database(database_path(data_dir, "local", "media"), source.migrations)
    try:
        rows = await db.fetchall("SELECT origin, title, content, source_path, version, meta FROM media_items")
    finally:
        await db.close()
    return {r["origin"]: {**dict(r), "meta": json.loads(r["meta"])} for r in rows}


@pytest.mark.anyio
async def test_one_damaged_message_of_an_mbox_fails_alone_and_the_rest_import(
    data_dir: Path, tmp_path: Path
) -> None:
    archive = _mbox(
        tmp_path / "list.mbox",
        MAIL / "from-encoding.eml",
        MAIL / "damaged-multipart.eml",
        MAIL / "gb2312-subject.eml",
    )
    summary = await import_into(data_dir, "media", archive)
    assert (summary.added, summary.files_failed, summary.exit_code) == (2, 1, 2)
    assert [f["path"] for f in summary.failures] == [f"{archive} (message 2)"]
    reason = summary.failures[0]["reason"]
    assert reason.startswith("could not be read") and "AttributeError" not in reason
    titles = {str(row["title"]) for row in (await _stored(data_dir)).values()}
    assert titles == {"Re: running server as root (Was: Re: PUT method)", "代开各地增值税发票"}


def test_a_body_line_split_off_an_unescaped_mbox_is_a_notice_not_a_message() -> None:
    path = MAIL / "unescaped-from.mbox"
    parsed = parse_mbox(path, path.read_bytes())
    assert [item.title for item in parsed] == ["unquoted From in body; extra info on From line"]
    assert [(n.part, n.reason) for n in parsed.notices] == [("message 2", "no email headers: left out")]
    assert parsed.failures == []


def test_a_threads_first_message_and_its_replies_share_one_thread_id(tmp_path: Path) -> None:
    root = (
        b"From ann@example.org Tue Jun  3 08:02:11 2025\nFrom: Ann <ann@example.org>\n"
        b"Subject: Q3 offsite planning\nMessage-ID: <20250603080211.4f2a@mail.example.org>\n"
        b"Date: Tue, 3 Jun 2025 08:02:11 +0000\n\nWhere shall we go?\n\n"
    )
    path = tmp_path / "thread.mbox"
    path.write_bytes(root + THREAD.read_bytes())
    threads = {i.meta["subject"]: set() for i in parse_mbox(path, path.read_bytes())}
    for item in parse_mbox(path, path.read_bytes()):
        threads[item.meta["subject"]].add(item.meta["thread_id"])
    assert (
        threads["Q3 offsite planning"]
        == threads["Re: Q3 offsite planning"]
        == {"<20250603080211.4f2a@mail.example.org>"}
    )


def test_a_second_copy_of_a_message_id_in_one_mbox_is_left_out_with_a_notice(tmp_path: Path) -> None:
    path = _mbox(tmp_path / "twice.mbox", MAIL / "bilingual-simple.eml", MAIL / "bilingual-simple.eml")
    parsed = parse_mbox(path, path.read_bytes())
    assert len(parsed) == 1 and parsed[0].origin == "message-id:<341090.85574.qm@web50704.mail.re2.yahoo.com>"
    assert [n.part for n in parsed.notices] == ["message 2"]


@pytest.mark.anyio
async def test_a_message_in_two_archives_is_one_item_through_reimport_and_prune(
    data_dir: Path, tmp_path: Path
) -> None:
    shared, only_a, only_b = (
        MAIL / "from-encoding.eml",
        MAIL / "bilingual-simple.eml",
        MAIL / "gb2312-subject.eml",
    )
    a = _mbox(tmp_path / "a.mbox", only_a, shared)
    b = _mbox(tmp_path / "b.mbox", shared, only_b)
    first = await import_into(data_dir, "media", a, b)
    assert (first.added, first.unchanged, first.updated) == (3, 1, 0)
    stored = await _stored(data_dir)
    shared_origin = "message-id:<33C7E4E1.2A12445E@blank.pages.de>"
    assert len(stored) == 3 and stored[shared_origin]["version"] == 1

    again = await import_into(data_dir, "media", a, b)
    # both files skipped unread; each counts the messages it holds, as the first run did
    # (3 added + b's copy of the shared message unchanged)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 4)

    _mbox(b, MAIL / "malformed-headers.eml")  # b grows: b is re-read, the shared message stays one
    grown = await import_into(data_dir, "media", a, b)
    assert (grown.added, grown.updated) == (1, 0)
    assert len(await _stored(data_dir)) == 4

    b.unlink()
    pruned = await import_into(data_dir, "media", tmp_path, prune=True)
    after = await _stored(data_dir)
    assert pruned.pruned == 2 and set(after) == {
        shared_origin,
        "message-id:<341090.85574.qm@web50704.mail.re2.yahoo.com>",
    }


@pytest.mark.anyio
async def test_an_eml_and_an_mbox_holding_the_same_message_store_it_once(
    data_dir: Path, tmp_path: Path
) -> None:
    archive = _mbox(tmp_path / "list.mbox", MAIL / "bilingual-simple.eml")
    summary = await import_into(data_dir, "media", archive, MAIL / "bilingual-simple.eml")
    assert (summary.added, summary.unchanged) == (1, 1)
    (item,) = (await _stored(data_dir)).values()
    assert item["source_path"] == str(archive.resolve()) and "file_name" not in item["meta"]  # type: ignore[operator]
