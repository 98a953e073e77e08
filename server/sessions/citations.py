"""Citations: what `session_cite` records of each cited item, and whether it still holds.

A citation records the item's content hash and, when its quote is found (`verify_quote`), the
stable id of the chunk that holds it (the hash of the chunk's text). A later re-import that
changes the text changes those ids, so the citation shows as `stale` instead of silently
pointing at other words; an item deleted since is stale too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowledge_mcp.aggregator.calls import AggregatorCall
from knowledge_mcp.aggregator.quotes.verify import checked_quote, verify_quote
from knowledge_mcp.aggregator.routing import parse_uri
from knowledge_mcp.sources.registry import SOURCES

from .timeline import Event, clip

TITLE_BATCH = 500


def once(uris: Sequence[str]) -> list[str]:
    """Each uri once, at the last place it was named (where citing it twice leaves it)."""
    return list(dict.fromkeys(reversed(uris)))[::-1]


async def cite_records(
    call: AggregatorCall, uris: Sequence[str], claim: str | None, quote: str | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per uri, each once (claim, quote, verdict, passage id, item hash), and
    warnings for items that do not exist and quotes not found; the quote is checked in all of
    them within one time budget (a uri past it: "not verified: too long")."""
    if quote is not None:
        checked_quote(quote)
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    deadline = call.quote_work.deadline()
    for uri in once(uris):
        record: dict[str, Any] = {"uri": uri}
        if claim:
            record["claim"] = clip(claim.strip())
        if quote:
            record["quote"] = clip(quote.strip())
        name, item_id = parse_uri(uri, None, None)
        db = await call.database(name)
        row = await db.item(item_id)
        if row is None:
            warnings.append(f"{uri}: no such item; cited as given")
            records.append(record)
            continue
        record["item_hash"] = row["content_hash"]
        if quote:
            record |= await _verdict(call, uri, quote, warnings, deadline)
        records.append(record)
    return records, warnings


async def _verdict(
    call: AggregatorCall, uri: str, quote: str, warnings: list[str], deadline: float
) -> dict[str, Any]:
    verdict = await verify_quote(call, uri, quote, deadline)
    if verdict.not_verified is not None:
        warnings.append(f"{uri}: the quote was not verified: {verdict.not_verified}")
        return {"verified": False}
    if verdict.match is not None:
        found: dict[str, Any] = {"found": True, "chunk_id": verdict.match.chunk_id}
        found["offsets"] = verdict.match.offsets
        if verdict.normalisations:
            found["normalisations"] = verdict.normalisations
        return found
    warning = f"{uri}: the quote is not in this item"
    if verdict.closest is not None:
        warning += f"; closest (similarity {verdict.similarity}): {verdict.closest.text!r}"
    warnings.append(warning)
    return {"found": False, "similarity": verdict.similarity}


async def is_stale(call: AggregatorCall, record: dict[str, Any]) -> bool | None:
    """Whether a citation's passage (or item) changed since; None when nothing was recorded."""
    if "item_hash" not in record:
        return None
    name, item_id = parse_uri(str(record["uri"]), None, None)
    db = await call.database(name)
    if record.get("chunk_id"):
        return not await db.has_chunk(item_id, str(record["chunk_id"]))
    row = await db.item(item_id)
    return row is None or row["content_hash"] != record["item_hash"]


async def mark_stale(call: AggregatorCall, events: Sequence[Event]) -> list[Event]:
    """`events` with `stale: true` on each citation whose passage changed."""
    marked: list[Event] = []
    for event in events:
        if event.kind == "cite" and await is_stale(call, event.payload):
            event = Event(event.kind, event.payload | {"stale": True}, event.at)
        marked.append(event)
    return marked


async def titles(call: AggregatorCall, events: Sequence[Event]) -> dict[str, str]:
    """The titles of the items the events read, checked or cited (gone ones are left out)."""
    wanted: dict[str, set[str]] = {}
    for event in events:
        uri = event.payload.get("uri")
        if event.kind in ("get", "cite", "verify") and isinstance(uri, str) and "://" in uri:
            name, item_id = uri.split("://", 1)
            if name in SOURCES:
                wanted.setdefault(name, set()).add(item_id)
    found: dict[str, str] = {}
    for name, ids in wanted.items():
        db = await call.database(name)
        for at in range(0, len(ids), TITLE_BATCH):
            batch = sorted(ids)[at : at + TITLE_BATCH]
            found |= {f"{name}://{row['item_id']}": str(row["title"]) for row in await db.titles(batch)}
    return found


def citation_view(record: dict[str, Any]) -> dict[str, Any]:
    """What session_info shows of a citation: no hashes or offsets."""
    keys = ("uri", "claim", "quote", "found", "verified", "similarity", "stale")
    return {k: record[k] for k in keys if record.get(k) is not None}
