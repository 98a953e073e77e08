"""verify_quote: is this quote in that item? Where exactly, or what is closest (DESIGN §12).

The quote is matched in the item's whole text (`sources/text/quotes.py`), whatever its source:
a note, a document's page, an email body, a transcript's cues, a chat's messages, a card's or a
prompt's fields. A match names the chunk it starts in by its stable id (the hash of the chunk's
text, so a re-import that changes the text changes it), its character offsets in the item and
the source's `loc` for a get; where a person would cite it by something else, `at` says so (a
PDF page, a transcript cue's time, a chat message's sender, a card's field).

The check takes time linear in the item and the quote and runs in small steps on the event loop
within the server's `quote_budget_s` (`work.py`); past it the verdict is "not verified: too
long". The quote's length is capped after it is normalised (a ligature or "ﷺ" grows under NFKC).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import aiosqlite
from loguru import logger
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from knowledge_mcp.sources.errors import InvalidArgumentError, SessionWriteError
from knowledge_mcp.sources.registry import SOURCES
from knowledge_mcp.sources.text.quoting.quotes import Closest, QuoteMatch, Span, check, quote_form
from knowledge_mcp.sources.tooling import Tool, add_tools, tool_result
from knowledge_mcp.sources.wire import LOC_ITEM_IDS

from ..calls import AggregatorCall, current_call
from ..routing import parse_uri
from .work import QuoteTooLong

MAX_QUOTE = 5000
"""Characters of a quote once normalised; before, at most `RAW_QUOTE_FACTOR` times as many (its
spaces collapse)."""
RAW_QUOTE_FACTOR = 4
TOO_LONG = "too long: the check stopped at its time budget; quote a shorter passage, or check it again later"
# Chunk fields a person cites a passage by, beside its loc.
CITED_BY = ("page", "start_s", "end_s", "sender", "field")


class Passage(BaseModel):
    """A passage of the item: its own words, the chunk's stable id, [start, end) offsets in the
    item's text, the loc for a get, and `at`: a page, a cue's start_s, a sender or a field."""

    text: str
    chunk_id: str
    offsets: list[int]
    loc: dict[str, Any]
    at: dict[str, Any] | None = None


class QuoteVerdict(BaseModel):
    uri: str
    found: bool
    normalisations: list[str] = Field(default_factory=list)
    match: Passage | None = None
    closest: Passage | None = None
    similarity: float | None = None
    not_verified: str | None = None


class VerdictOutput(BaseModel):
    """The published schema of a verdict (`QuoteVerdict`), without the nested models' schemas."""

    model_config = ConfigDict(extra="allow")

    found: bool
    normalisations: list[str] = Field(default_factory=list, description="Needed to match.")
    match: dict[str, Any] | None = Field(default=None, description="{text, chunk_id, offsets, loc, at}")
    closest: dict[str, Any] | None = Field(default=None, description="Not found: the most similar passage.")
    similarity: float | None = Field(default=None, description="Of closest, 0..1.")
    not_verified: str | None = Field(default=None, description="Why it was not checked.")


def anchor_chunk(chunks: Sequence[aiosqlite.Row], span: Span) -> aiosqlite.Row:
    """The chunk a span starts in (chunks overlap: the one holding most of the span)."""
    holding = [c for c in chunks if c["start_offset"] <= span.start < c["end_offset"]] or list(chunks)
    return max(holding, key=lambda c: (min(c["end_offset"], span.end) - span.start, -c["chunk_index"]))


def cue_time(item: aiosqlite.Row, offset: int) -> dict[str, Any]:
    """A transcript's cue holding `offset` (its cues are the text, one per line), else nothing."""
    cues = json.loads(item["meta"]).get("cues") or []
    at = 0
    for cue in cues:
        at += len(cue.get("text", "")) + 1
        if offset < at:
            return {"start_s": cue.get("start_s"), "end_s": cue.get("end_s")}
    return {}


def passage(source: Any, item: aiosqlite.Row, chunks: Sequence[aiosqlite.Row], span: Span) -> Passage:
    chunk = anchor_chunk(chunks, span)
    loc = source.loc(item, chunk).model_dump(exclude_none=True)
    for key in LOC_ITEM_IDS:
        if loc.get(key) == item["item_id"]:
            del loc[key]
    fields = source.fields(item, chunk) | {"field": chunk["field"]} | cue_time(item, span.start)
    at = {k: fields[k] for k in CITED_BY if fields.get(k) is not None}
    return Passage(
        text=item["content"][span.start : span.end],
        chunk_id=chunk["chunk_uuid"],
        offsets=[span.start, span.end],
        loc=loc,
        at=at or None,
    )


def verdict_of(
    source: Any, item: aiosqlite.Row, chunks: Sequence[aiosqlite.Row], outcome: QuoteMatch | Closest | None
) -> QuoteVerdict:
    """The verdict on a quote in one loaded item, given what `check` found."""
    uri = source.uri(item["item_id"])
    if isinstance(outcome, QuoteMatch):
        return QuoteVerdict(
            uri=uri,
            found=True,
            normalisations=list(outcome.normalisations),
            match=passage(source, item, chunks, outcome),
        )
    if outcome is None:
        return QuoteVerdict(uri=uri, found=False)
    return QuoteVerdict(
        uri=uri,
        found=False,
        closest=passage(source, item, chunks, outcome),
        similarity=outcome.similarity,
    )


def checked_quote(quote: str) -> str:
    """`quote`, or an error when it is empty or longer than `MAX_QUOTE` once normalised."""
    too_long = (
        f"at most {MAX_QUOTE} characters once normalised (NFKC makes a ligature or a symbol such as "
        "\ufdfa several); quote a shorter passage"
    )
    if len(quote) > MAX_QUOTE * RAW_QUOTE_FACTOR:
        raise InvalidArgumentError("quote", too_long)
    form = quote_form(quote)
    if not form:
        raise InvalidArgumentError("quote", "give the words to look for, as the item says them")
    if len(form) > MAX_QUOTE:
        raise InvalidArgumentError("quote", too_long)
    return quote


async def verify_quote(
    call: AggregatorCall, uri: str, quote: str, deadline: float | None = None
) -> QuoteVerdict:
    """The verdict on `quote` in the item `uri` names, for the caller's databases; checked in
    steps on the event loop until `deadline` (default: the server's budget from now)."""
    name, item_id = parse_uri(uri, None, None)
    quote = checked_quote(quote)
    source = SOURCES[name]
    work = call.quote_work
    deadline = work.deadline() if deadline is None else deadline
    too_long = QuoteVerdict(uri=source.uri(item_id), found=False, not_verified=TOO_LONG)
    if time.monotonic() > deadline:  # a session_cite's later uris: not even loaded
        return too_long
    item, chunks = await source.load_item(await call.database(name), item_id)
    try:
        outcome = await work.run(check(item["content"], quote), deadline)
    except QuoteTooLong:
        return too_long
    return verdict_of(source, item, chunks, outcome)


def render(verdict: QuoteVerdict) -> str:
    if verdict.not_verified is not None:
        return f"not verified in {verdict.uri}: {verdict.not_verified}"
    if verdict.match is not None:
        how = ", ".join(verdict.normalisations) or "exactly"
        m = verdict.match
        return f"found in {verdict.uri} ({how}) at {m.offsets}, chunk {m.chunk_id}, loc {m.loc}: {m.text}"
    if verdict.closest is not None:
        c = verdict.closest
        return (
            f"not found in {verdict.uri}; closest (similarity {verdict.similarity}) at {c.offsets}, "
            f"loc {c.loc}: {c.text}"
        )
    return f"not found in {verdict.uri}, and none of its words either"


async def verify_quote_tool(
    uri: Annotated[str, Field(description="The item's uri, e.g. media://<id>.")],
    quote: Annotated[str, Field(description="The words you want to quote.")],
    ctx: Context,
) -> Annotated[CallToolResult, VerdictOutput]:
    """Check that a quote is in an item before citing it.

    Ignores whitespace, quotation marks, dashes, ligatures and case (`normalisations`).
    `match`: the item's own words, chunk_id, offsets, loc. Not found: the `closest` passage.
    """
    call = current_call()
    verdict = await verify_quote(call, uri, quote)
    session = (await call.with_session(None)).session
    if session is not None:
        try:
            await session.log_verdict(quote, verdict.model_dump(mode="json", exclude_none=True))
        except SessionWriteError:  # the verdict stands; only the timeline's note of it is lost
            logger.warning("verify_quote: the session's timeline could not be written")
    return tool_result(verdict, render(verdict))


TOOLS = (Tool("verify_quote", "Verify a quote", verify_quote_tool),)


def register(mcp: MCPServer, rename: Callable[[str], str]) -> None:
    add_tools(mcp, TOOLS, rename)
