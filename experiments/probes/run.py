"""Runs every probe against the real server and gathers one report.

Order: kill -9 during imports first (it also makes the data dir the others serve: SciFact notes
for the user `local`), kill -9 during writes (its own data dir), then the stdio malformed
messages, then one HTTP server (HS256 secret and RS256 public key; /mcp and /ws on one port)
for malformed HTTP and WebSocket messages, the tool fuzz, hostile prompt arguments and resource
URIs, `true` for every integer argument, the concurrent sessions and the credential attacks.
The servers' logs (at WARNING) are searched for tracebacks, ERROR lines and a written note's
word. Every count and wait is bounded.
"""

from __future__ import annotations

import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from knowledge_mcp.bench.http import served, server_env

from . import credentials, sessions
from .calls import fuzz, malformed, surfaces
from .killed import imports as kills
from .killed import writes

CORPUS = Path("/work/shared/data/scifact/corpus.jsonl")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"  # the sample data (as `demo` finds it)


@dataclass(frozen=True)
class Size:
    fuzz_per_tool: int
    fuzz_seconds: float
    notes: int
    kills: int
    write_rounds: int
    sessions: int


SIZES = {
    "tiny": Size(fuzz_per_tool=3, fuzz_seconds=30, notes=20, kills=1, write_rounds=1, sessions=5),
    "quick": Size(fuzz_per_tool=40, fuzz_seconds=90, notes=300, kills=10, write_rounds=3, sessions=30),
    "full": Size(fuzz_per_tool=100, fuzz_seconds=180, notes=300, kills=10, write_rounds=5, sessions=100),
}


def token(secret: str, user: str, scope: str = "") -> str:
    now = int(time.time())
    body: dict[str, Any] = {"sub": user, "iat": now, "exp": now + 3000}
    if scope:
        body["scope"] = scope
    return jwt.encode(body, secret, algorithm="HS256")


async def run(mode: str, seed: int = 25, corpus: Path | None = CORPUS) -> dict[str, Any]:
    size = SIZES[mode]
    report: dict[str, Any] = {"mode": mode, "seed": seed, "python": platform.python_version()}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="probes-") as tmp:
        work = Path(tmp)
        report["kill9_imports"] = kills.probe(work / "kills", size.notes, size.kills, seed, corpus)
        report["kill9_writes"] = await writes.probe(
            work / "writes", size.write_rounds, seed, lambda secret: token(secret, writes.USER, "read write")
        )
        data_dir = work / "kills" / "clean"
        kills.import_folder("prompts", FIXTURES / "prompts", data_dir)  # for prompts/get
        command = malformed.stdio_command(str(data_dir))
        with (work / "stdio.log").open("wb") as log:
            report["malformed"] = {"stdio": await malformed.stdio(command, server_env(), log)}
        logs = (work / "stdio.log").read_text(errors="replace")
        private, pem = credentials.rsa_key(work)
        env = {"KNOWLEDGE_MCP_JWT_PUBLIC_KEY_FILE": str(pem)}
        async with served(data_dir, auth=True, settings_env=env) as server:
            assert server.secret is not None
            writer = token(server.secret, "local", "read write")
            report["malformed"]["http"] = await malformed.http(server, writer)
            report["malformed"]["websocket"] = await malformed.websocket(server, writer)
            found = await fuzz.fuzz(server, writer, size.fuzz_per_tool, seed, size.fuzz_seconds)
            report["fuzz"] = found.as_dict()
            report["prompts_and_resources"] = await surfaces.probe(server, writer, size.fuzz_per_tool, seed)
            report["fuzz"]["booleans_for_integers"] = await fuzz.booleans_for_integers(server, writer, seed)
            readers = [token(server.secret, "local") for _ in range(size.sessions)]
            report["concurrent_sessions"] = await sessions.concurrent(
                server, readers, sessions.queries(work / "kills" / "notes")
            )
            report["credentials"] = await credentials.attacks(server, private, pem, data_dir)
            report["server_alive_at_end"] = server.process.poll() is None
            logs += server.log_text()
    report["server_logs"] = {
        "tracebacks": logs.count("Traceback"),
        "error_lines": logs.count(" ERROR "),
        "warning_lines": logs.count(" WARNING "),
        "note_text_in_logs": logs.count(credentials.CANARY),  # a written note's word
    }
    report["crashes"] = crashes(report)
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def crashes(report: dict[str, Any]) -> int:
    """Server processes that died under the probes (the one figure that must be 0)."""
    died = report["fuzz"]["crashes"] + sum(t["crash"] for t in report["malformed"].values())
    died += not report["concurrent_sessions"]["server_alive"]
    return int(died + (not report["server_alive_at_end"]))
