"""verify_quote and session_cite cannot stall the server (issue 25, item 2), through a real MCP
client: the quote's cap counts characters after NFKC, a check past its time budget answers
"not verified: too long", a uri named twice is checked once, and another user's search is not
held up behind adversarial checks (an ordering, not a timing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from knowledge_mcp.server.app import build_server
from knowledge_mcp.server.config import Settings
from tests.conftest import FIXTURES, call, error, import_into

pytestmark = pytest.mark.anyio

WORDS = "word " * 60_000  # 300 KB: every place is the start of a long near-match
ADVERSARIAL = "WORD " * 599 + "zebra"  # 3,000 characters, in no place of it


async def note_of(data_dir: Path, user: str, text: str, tmp_path: Path) -> None:
    folder = tmp_path / f"{user}-notes"
    folder.mkdir()
    (folder / "long.md").write_text(f"# Words\n\n{text}\n", encoding="utf-8")
    await import_into(data_dir, "notes", folder, user=user)


async def only_uri(client: Client) -> str:
    page = await call(client, "notes_search", query="words", limit=1)
    return str(page["results"][0]["uri"])


async def test_a_quote_is_capped_after_nfkc_so_a_symbol_that_expands_is_refused(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    await note_of(data_dir, "local", WORDS[:30_000], tmp_path)
    async with client_factory() as client:
        uri = await only_uri(client)
        message = await error(client, "verify_quote", uri=uri, quote="\ufdfa" * 300)  # 5,400 once NFKC'd
        assert "quote" in message and "once normalised" in message
        cite = await client.call_tool("session_cite", {"uris": [uri], "quote": "\ufdfa" * 3000})
        assert cite.is_error and "once normalised" in cite.content[0].text
        # the same number of plain characters is a quote like any other
        verdict = await call(client, "verify_quote", uri=uri, quote="WORD " * 100)
        assert verdict["found"] is True and verdict["normalisations"] == ["case"]


async def test_an_adversarial_quote_on_a_300_kb_note_is_answered_with_its_closest_passage(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    await note_of(data_dir, "local", WORDS, tmp_path)
    async with client_factory() as client:
        uri = await only_uri(client)
        verdict = await call(client, "verify_quote", uri=uri, quote=ADVERSARIAL)
    assert verdict["found"] is False and "not_verified" not in verdict
    assert verdict["closest"]["text"].split()[:3] == ["word", "word", "word"]
    assert 0.9 < verdict["similarity"] < 1.0


async def test_a_check_past_its_time_budget_answers_not_verified_too_long(
    client_factory: Any, data_dir: Path, tmp_path: Path
) -> None:
    await note_of(data_dir, "local", "lorem ipsum dolor sit amet " * 40_000, tmp_path)  # 1 MB
    async with client_factory(quote_budget_s=0.001) as client:
        uri = await only_uri(client)
        verdict = await call(client, "verify_quote", uri=uri, quote="Ipsum  dolor sit amet, zebra")
        cited = await call(client, "session_cite", uris=[uri], quote="ipsum dolor zebra")
        text = (await client.call_tool("verify_quote", {"uri": uri, "quote": "amet lorem"})).content[0].text
    assert verdict["found"] is False and verdict["not_verified"].startswith("too long")
    assert "closest" not in verdict
    assert any("not verified: too long" in w for w in cited["warnings"])
    assert text.startswith(f"not verified in {uri}: too long")


async def test_a_uri_cited_twice_is_checked_once(client_factory: Any, data_dir: Path) -> None:
    await import_into(data_dir, "notes", FIXTURES / "notes")
    async with client_factory() as client:
        uri = await only_uri_of(client, "levain")
        cited = await call(client, "session_cite", uris=[uri, uri, uri], quote="zebra quagga okapi")
    assert cited["cited"] == [uri]
    assert len([w for w in cited["warnings"] if w.startswith(uri)]) == 1
    assert len(cited["citations"]) == 1


async def only_uri_of(client: Client, query: str) -> str:
    page = await call(client, "notes_search", query=query, limit=1)
    return str(page["results"][0]["uri"])


# 1 MB in which every place starts a long near-match of the quote, which is found at its end in
# another case: a regex with `\s+` between the words takes about 1 MB × 600 words to find it.
SHOUTED = "word " * 200_000 + "WORD " * 599 + "ZEBRA."
FOUND_AT_THE_END = "word " * 599 + "zebra"


async def test_another_users_search_is_not_held_up_behind_ten_adversarial_checks(
    data_dir: Path, tmp_path: Path
) -> None:
    """alice sends 10 adversarial checks at once (verify_quote, and session_cite naming the
    note twice), each found only at the end of a 1 MB note; bob searches meanwhile, in the same
    process (its event loop and GIL are what a check could hold). bob's answer, from every
    source, comes before alice's checks are all done: they run in steps, two at a time, and the
    loop serves bob between steps (a check that held the GIL through one long regex made bob
    wait for most of them, and his sources ran past their timeout)."""
    await note_of(data_dir, "alice", SHOUTED, tmp_path)
    await import_into(data_dir, "notes", FIXTURES / "notes", user="bob")
    hosts = [
        build_server(Settings(data_dir=data_dir, user=u, rate_limit_per_minute=0)) for u in ("alice", "bob")
    ]
    finished: list[str] = []
    async with Client(hosts[0][0]) as alice, Client(hosts[1][0]) as bob:
        uri = await only_uri(alice)
        await call(bob, "knowledge_search", query="sourdough")  # bob's databases are open

        async def adversarial(n: int) -> None:
            if n % 2:
                verdict = await call(alice, "verify_quote", uri=uri, quote=FOUND_AT_THE_END)
                assert verdict["found"] is True
            else:
                await call(alice, "session_cite", uris=[uri, uri], quote=FOUND_AT_THE_END)
            finished.append("alice")

        async def bystander() -> None:
            page = await call(bob, "knowledge_search", query="sourdough starter")
            assert page["results"] and not page.get("warnings")
            finished.append("bob")

        async with anyio.create_task_group() as group:
            for n in range(10):
                group.start_soon(adversarial, n)
            await anyio.sleep(0.05)  # alice's checks are under way
            group.start_soon(bystander)
    for _, host in hosts:
        await host.pool.close()
    assert "alice" in finished[finished.index("bob") + 1 :], finished
