"""A session's timeline as a document (pure): Markdown a person can paste into a report, or JSON.

The Markdown lists every event in order (queries asked, items read, quotes verified, claims
cited with their quotes and verdicts, notes), then the claims with their sources and the items
the session read or cited. Only what is stored goes in (no time of export), so exporting the same
session twice, before or after a restart, gives the same document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .timeline import Event, Research

URIS_SHOWN = 5
Titles = dict[str, str]


def _when(at: str) -> str:
    """An event's time to the minute: 2026-11-24 01:36 UTC."""
    return at[:16].replace("T", " ") + (" UTC" if at.endswith("+00:00") else "")


def _item(uri: object, titles: Titles) -> str:
    title = titles.get(str(uri))
    return f"{title} ({uri})" if title else str(uri)


def _quote(text: str) -> str:
    return "“" + " ".join(str(text).split()) + "”"


def _verdict(payload: dict[str, Any]) -> str:
    if payload.get("found") is True:
        how = ", ".join(payload.get("normalisations") or [])
        return "verified" + (f" (after normalising {how})" if how else "")
    if payload.get("found") is False:
        similarity = payload.get("similarity")
        return "NOT found in the source" + (
            f" (closest passage similarity {similarity})" if similarity else ""
        )
    return "not checked"


def _line(event: Event, titles: Titles) -> str:
    p = event.payload
    if event.kind == "search":
        uris = list(p.get("uris") or [])
        shown = ", ".join(uris[:URIS_SHOWN]) + (" …" if len(uris) > URIS_SHOWN else "")
        return f"**Searched** {_quote(p.get('query', ''))} → {p.get('count', len(uris))} result(s): {shown}"
    if event.kind == "get":
        return f"**Read** {_item(p.get('uri'), titles)}"
    if event.kind == "verify":
        quote = _quote(p.get("quote", ""))
        return f"**Checked a quote** in {_item(p.get('uri'), titles)}: {quote} — {_verdict(p)}"
    if event.kind == "cite":
        parts = [f"**Cited** {_item(p.get('uri'), titles)}"]
        if p.get("claim"):
            parts.append(f"for: {p['claim']}")
        if p.get("quote"):
            parts.append(f"quote {_quote(p['quote'])} — {_verdict(p)}")
        if p.get("stale"):
            parts.append("STALE: the source changed since")
        return "; ".join(parts)
    if event.kind == "note":
        return f"**Note**: {p.get('text', '')}"
    return f"**{event.kind}**"


def _claims(events: Sequence[Event], titles: Titles) -> list[str]:
    lines = []
    for event in events:
        p = event.payload
        if event.kind != "cite":
            continue
        head = p.get("claim") or "(no claim given)"
        uri = p.get("uri")
        line = f"- {head} — [{titles.get(str(uri), uri)}]({uri})"
        if p.get("quote"):
            line += f": {_quote(p['quote'])}, {_verdict(p)}"
        if p.get("stale"):
            line += " **stale**"
        lines.append(line)
    return lines


def _sources(events: Sequence[Event], titles: Titles) -> list[str]:
    uses: dict[str, dict[str, None]] = {}
    for event in events:
        uri = event.payload.get("uri")
        if event.kind in ("get", "cite") and uri:
            uses.setdefault(str(uri), {})["read" if event.kind == "get" else "cited"] = None
    return [f"- {_item(uri, titles)}: {', '.join(how)}" for uri, how in uses.items()]


def markdown(
    session_id: str, research: Research | None, events: Sequence[Event], titles: Titles | None = None
) -> str:
    """The timeline as Markdown; `titles` names the items by uri (else the uri alone)."""
    titles = titles or {}
    title = f"Research: {research.name}" if research is not None else f"Session {session_id}"
    lines = [f"# {title}", ""]
    if research is not None:
        lines += [
            f"Session `{session_id}`, started {_when(research.created_at)}, "
            f"last activity {_when(research.updated_at)}.",
            "",
        ]
    lines += ["## Timeline", ""]
    lines += [f"{n}. {_when(e.at)} — {_line(e, titles)}" for n, e in enumerate(events, 1)] or [
        "(nothing yet)"
    ]
    claims, notes = _claims(events, titles), [e.payload.get("text", "") for e in events if e.kind == "note"]
    if claims:
        lines += ["", "## Claims and sources", "", *claims]
    if notes:
        lines += ["", "## Notes", "", *(f"- {text}" for text in notes)]
    sources = _sources(events, titles)
    if sources:
        lines += ["", "## Items read or cited", "", *sources]
    return "\n".join(lines) + "\n"


def as_json(session_id: str, research: Research | None, events: Sequence[Event]) -> dict[str, Any]:
    head: dict[str, Any] = {"session_id": session_id}
    if research is not None:
        head |= {"name": research.name, "created_at": research.created_at, "updated_at": research.updated_at}
    return head | {"events": [{"kind": e.kind, "at": e.at, **e.payload} for e in events]}
