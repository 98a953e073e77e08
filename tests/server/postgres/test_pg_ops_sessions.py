"""With shared state (`database_url`), an `Mcp-Session-Id` the server never issued to the caller
is 404, as on the single-process server: made up, another user's, or ended — one answer for all
(no oracle), while the caller's own session is served on both workers."""

from __future__ import annotations

import httpx

from tests.server.shared.test_two_workers import Workers, database, workers  # noqa: F401  (fixtures)

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "p", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def _headers(served: Workers, user: str, session: str | None = None) -> dict[str, str]:
    headers = ACCEPT | {"authorization": f"Bearer {served.tokens[user]}"}
    headers |= {"mcp-protocol-version": "2025-11-25"}
    return headers | ({"mcp-session-id": session} if session else {})


def _pings(http: httpx.Client, served: Workers, user: str, session: str) -> list[httpx.Response]:
    return [http.post(served.url, json=PING, headers=_headers(served, user, session)) for _ in range(4)]


def test_an_id_never_issued_to_the_caller_is_404_the_same_whoever_holds_it(
    workers: Workers,  # noqa: F811
) -> None:
    with httpx.Client(timeout=30, headers={"connection": "close"}) as http:
        opened = {
            user: http.post(workers.url, json=INIT, headers=_headers(workers, user)).headers["mcp-session-id"]
            for user in ("alice", "bob")
        }
        own = _pings(http, workers, "alice", opened["alice"])
        borrowed = _pings(http, workers, "alice", opened["bob"])
        made_up = _pings(http, workers, "alice", "0" * 32)
        bob_still = _pings(http, workers, "bob", opened["bob"])[0]
    assert [r.status_code for r in own] == [200] * 4 and bob_still.status_code == 200
    assert len({r.headers["x-knowledge-worker"] for r in own + borrowed + made_up}) == 2  # both workers
    assert [r.status_code for r in borrowed + made_up] == [404] * 8
    assert {r.content for r in borrowed} == {r.content for r in made_up}  # no oracle: one answer
    assert len({r.content for r in borrowed + made_up}) == 1
