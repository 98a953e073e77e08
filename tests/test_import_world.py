"""`knowledge-mcp import` over a folder of the world's files, in a real process: every bad file
or message is reported, every good one imported, nothing leaves the folder, no traceback, and
exit 2 because something failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

DATA = ROOT / "tests" / "sources" / "data"
SECRET = "world-import-secret-never-stored"


def _world(folder: Path) -> None:
    folder.mkdir()
    for eml in ("bilingual-simple.eml", "from-encoding.eml", "gb2312-subject.eml"):
        (folder / eml).write_bytes((DATA / "email" / eml).read_bytes())
    (folder / "french-cp1252.txt").write_bytes((DATA / "encodings" / "french-cp1252.txt").read_bytes())
    srt = (FIXTURES / "media" / "transcripts" / "talk-sqlite-internals.srt").read_text(encoding="utf-8")
    (folder / "talk-utf16.srt").write_bytes(srt.encode("utf-16"))  # with its byte-order mark
    good = (DATA / "email" / "bilingual-simple.eml").read_bytes()
    (folder / "list.mbox").write_bytes(
        b"From a@b Sat Jan  1 00:00:00 2000\n" + good + b"\nFrom x@y Sat Jan  1 00:00:00 2000\n"
        b"\x00\x01\xff garbage\n\nFrom c@d Sat Jan  1 00:00:00 2000\nSubject: last words\n"
        b"Message-ID: <last@example.org>\n\nthe archive's last message\n"
    )
    (folder / "photo.txt").write_bytes((FIXTURES / "broken" / "characters" / "no-card.png").read_bytes())
    (folder / os.fsdecode(b"caf\xe9-latin1-name.txt")).write_text("a quokka note named in latin-1")
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "environ.txt").symlink_to("/proc/self/environ")


def test_the_worlds_files_import_or_fail_alone(tmp_path: Path) -> None:
    _world(tmp_path / "in")
    cli = Path(sys.executable).with_name("knowledge-mcp")
    env = {**os.environ, "KNOWLEDGE_MCP_JWT_SECRET": SECRET}
    data = tmp_path / "data"
    done = subprocess.run(
        [str(cli), "import", "media", str(tmp_path / "in"), "--data-dir", str(data), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads(done.stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in summary["failures"]}
    assert failed == {"photo.txt": "binary content, not text"}
    noticed = {Path(n["path"]).name: n["reason"] for n in summary["notices"]}
    assert {"passwd.txt", "environ.txt", "list.mbox (message 2)"} <= set(noticed), noticed
    assert summary["added"] >= 7  # 3 emails, 2 of the archive's, the text, the subtitle, the note

    def search(query: str) -> list[str]:
        found = subprocess.run(
            [str(cli), "search", query, "--json", "--data-dir", str(data)], capture_output=True, text=True
        )
        return [r["title"] for r in json.loads(found.stdout)["results"]]

    assert search("quokka") and search("archive's last words") and search("SQLite internals")
    assert search(SECRET) == []
    assert not [t for t in search("root daemon bin nologin") if t in ("passwd", "environ")]
