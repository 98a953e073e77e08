"""The `knowledge-mcp` command line in real processes: search, per-user data, user validation, eval."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).with_name("knowledge-mcp"))

CORPUS = [
    ("d0", "Sourdough starter care", "Feed the sourdough starter with rye flour and water every morning."),
    ("d1", "Bicycle chain care", "Degrease the bicycle chain, then apply a drop of lubricant per link."),
    ("d2", "Tomato blight", "Late blight turns tomato leaves brown; remove infected foliage quickly."),
    ("d3", "Postgres vacuum", "Autovacuum reclaims dead tuples in Postgres tables and prevents wraparound."),
    ("d4", "Kayak rolling", "Practice the kayak roll with a hip snap before trying it in rough water."),
    ("d5", "Espresso extraction", "Grind finer when the espresso shot runs fast and tastes sour."),
    ("d6", "Tax receipts", "Keep receipts for charitable donations in the tax folder until April."),
    ("d7", "Violin rosin", "Apply rosin to the violin bow hair before every practice session."),
    ("d8", "Aquarium cycling", "Cycle a new aquarium so nitrifying bacteria convert ammonia to nitrate."),
    ("d9", "Chess openings", "The Sicilian defence answers the king pawn opening with c5."),
]
QUERIES = [
    ("q1", "how often to feed a sourdough starter", "d0"),
    ("q2", "espresso shot tastes sour", "d5"),
    ("q3", "aquarium ammonia nitrate bacteria", "d8"),
]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    return process.returncode, out, err


def test_search_finds_a_note_imported_for_alice_and_shows_nothing_to_bob(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    imported = cli(
        "import", "notes", str(FIXTURES / "notes"), "--data-dir", data_dir, "--user", "alice", "--json"
    )
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["added"] > 0

    alice = start("search", "levain autolyse", "--json", "--data-dir", data_dir, "--user", "alice")
    bob = start("search", "levain autolyse", "--json", "--data-dir", data_dir, "--user", "bob")
    (a_code, a_out, a_err), (b_code, b_out, b_err) = finish(alice), finish(bob)

    assert a_code == 0, a_err
    results = json.loads(a_out)["results"]
    assert results, "alice's own note is not found"
    assert "sourdough" in results[0]["title"].lower()
    assert results[0]["uri"].startswith("notes://")
    assert b_code == 0, b_err
    assert json.loads(b_out)["results"] == []
    assert (tmp_path / "data" / "users" / "alice").is_dir()


def test_an_invalid_user_fails_with_exit_1_and_a_message_naming_the_user(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    done = cli(
        "import", "notes", str(FIXTURES / "notes" / "recipes"), "--data-dir", str(data_dir), "--user", "../x"
    )
    assert done.returncode == 1
    assert "user" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "x").exists()
    assert not (data_dir / "x").exists()


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, title, text in CORPUS:
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as f:
        for query_id, text, _ in QUERIES:
            f.write(json.dumps({"_id": query_id, "text": text}) + "\n")
        f.write(json.dumps({"_id": "q-unjudged", "text": "chess"}) + "\n")
    rows = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t1" for q, _, d in QUERIES)]
    (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_eval_on_a_tiny_beir_dataset_prints_plausible_json_metrics(tmp_path: Path) -> None:
    beir = write_beir(tmp_path / "tiny-beir")
    done = cli("eval", "--beir", str(beir), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    keys = {"dataset", "split", "queries", "ndcg@10", "recall@100", "mrr@10", "latency_ms", "config"}
    assert keys <= set(report)
    assert report["dataset"] == "tiny-beir"
    assert report["split"] == "test"
    assert report["queries"] == len(QUERIES)
    assert 0.5 < report["ndcg@10"] <= 1
    assert 0.5 < report["mrr@10"] <= 1
    assert report["recall@100"] == 1
    assert 0 <= report["latency_ms"]["p50"] <= report["latency_ms"]["p95"]
    assert 0 <= report["page_latency_ms"]["p50"] <= report["page_latency_ms"]["p95"]
    assert report["page_latency_ms"]["limit"] == 10
    assert 0.5 < report["page_ndcg@10"] <= 1
    copy = report["memory_index"]
    assert copy["used"] is True and copy["build_s"] >= 0
    assert 0 < copy["rank_latency_ms"]["p50"] <= copy["rank_latency_ms"]["p95"]
    assert isinstance(report["config"], dict) and report["config"]


def _broken_by_junk(db: Path) -> None:
    db.write_text("These are my notes, pasted over the database by mistake.\n" * 50, encoding="utf-8")


def _broken_by_folder(db: Path) -> None:
    db.unlink()
    db.mkdir()
    (db / "something.txt").write_text("a folder where the database was\n", encoding="utf-8")


def _broken_by_truncation(db: Path) -> None:
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (_broken_by_junk, "not a knowledge-mcp database"),
        (_broken_by_folder, "cannot be opened"),
        (_broken_by_truncation, "damaged"),
    ],
)
def test_an_import_into_a_broken_database_says_why_and_what_to_do_in_one_line_and_exits_1(
    tmp_path: Path, damage: Any, says: str
) -> None:
    data_dir = tmp_path / "data"
    notes = FIXTURES / "notes"
    first = cli("import", "notes", str(notes), "--data-dir", str(data_dir))
    assert first.returncode == 0, first.stderr
    db = data_dir / "users" / "local" / "notes.db"
    for sidecar in (db.with_name("notes.db-wal"), db.with_name("notes.db-shm")):
        sidecar.unlink(missing_ok=True)
    damage(db)
    done = cli("import", "notes", str(notes), "--data-dir", str(data_dir))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert says in lines[0] and str(db) in lines[0]
    remedy = "run `knowledge-mcp repair notes`" if damage is not _broken_by_folder else "import again"
    assert remedy in lines[0]
