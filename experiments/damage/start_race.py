"""Two real `serve --transport stdio` processes and one `import notes`, started together on a fresh
data dir, N rounds (issue 29's start race). Each server answers `initialize` and one
`knowledge_search` with a session (every source, sessions.db); a round fails when any process
exits non-zero or its stderr holds a traceback, "already exists" or "could not be loaded".

`python -m experiments.damage.start_race ROUNDS DIR` prints one JSON object.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

NOTES = Path(__file__).resolve().parents[2] / "fixtures" / "notes"
BAD = ("Traceback", "already exists", "could not be loaded")
INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "race", "version": "0"},
}
MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "knowledge_search", "arguments": {"query": "bread", "session_id": "s1"}},
    },
]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "knowledge_mcp", *args]


def answered(out: IO[bytes]) -> None:
    """Read the server's stdout until the search (id 2) is answered, or it ends."""
    for line in iter(out.readline, b""):
        if json.loads(line).get("id") == 2:
            return


def one_round(data_dir: Path) -> list[str]:
    """Start the three processes together; the stderr of each that failed."""
    serve = command("serve", "--transport", "stdio", "--data-dir", str(data_dir))
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    servers = [subprocess.Popen(serve, **pipes) for _ in range(2)]  # type: ignore[call-overload]
    importing = command("import", "notes", str(NOTES), "--data-dir", str(data_dir))
    importer = subprocess.Popen(importing, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = "".join(json.dumps(m) + "\n" for m in MESSAGES).encode()
    for server in servers:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(lines)
        server.stdin.flush()
    failed = []
    for server in servers:
        assert server.stdin is not None and server.stdout is not None
        answered(server.stdout)
        server.stdin.close()
        server.stdin = None  # closed: communicate() must not flush it
    for process in [*servers, importer]:
        _, err = process.communicate(timeout=120)
        text = err.decode(errors="replace")
        if process.returncode != 0 or any(mark in text for mark in BAD):
            failed.append(text[-600:])
    return failed


def main(rounds: int, root: Path) -> dict[str, object]:
    started, failed = time.monotonic(), []
    for n in range(rounds):
        failed += one_round(root / f"round-{n}")
    seconds = round(time.monotonic() - started, 1)
    return {
        "rounds": rounds,
        "processes": 3 * rounds,
        "failed": len(failed),
        "seconds": seconds,
        "first": failed[:1],
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), Path(sys.argv[2]))))
