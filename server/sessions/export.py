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


def _line(event: Event) -> str:
    p = event.payload
    if event.kind == "search":
        uris = list(p.get("uris") or [])
        shown = ", ".join(uris[:URIS_SHOWN]) + (" …" if len(uris) > URIS_SHOWN else "")
        return f"**Searched** {_quote(p.get('query', ''))} → {p.get('count', len(uris))} result(s): {shown}"
    if event.kind == "get":
        return f"**Read** {p.get('uri')}"
    if event.kind == "verify":
        return f"**Checked a quote** in {p.get('uri')}: {_quote(p.get('quote', ''))} — {_verdict(p)}"
    if event.kind == "cite":
        parts = [f"**Cited** {p.get('uri')}"]
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


def _claims(events: Sequence[Event]) -> list[str]:
    lines = []
    for event in events:
        p = event.payload
        if event.kind != "cite":
            continue
        head = p.get("claim") or "(no claim given)"
        line = f"- {head} — [{p.get('uri')}]({p.get('uri')})"
        if p.get("quote"):
            line += f": {_quote(p['quote'])} ({_verdict(p)})"
        if p.get("stale"):
            line += " **stale**"
        lines.append(line)
    return lines


def _sources(events: Sequence[Event]) -> list[str]:
    uses: dict[str, dict[str, None]] = {}
    for event in events:
        uri = event.payload.get("uri")
        if event.kind in ("get", "cite") and uri:
            uses.setdefault(str(uri), {})["read" if event.kind == "get" else "cited"] = None
    return [f"- {uri} ({', '.join(how)})" for uri, how in uses.items()]


def markdown(session_id: str, research: Research | None, events: Sequence[Event]) -> str:
    title = f"Research: {research.name}" if research is not None else f"Session {session_id}"
    lines = [f"# {title}", ""]
    if research is not None:
        lines += [
            f"Session `{session_id}`, started {research.created_at}, last activity {research.updated_at}.",
            "",
        ]
    lines += ["## Timeline", ""]
    lines += [f"{n}. {event.at} — {_line(event)}" for n, event in enumerate(events, 1)] or ["(nothing yet)"]
    claims, notes = _claims(events), [e.payload.get("text", "") for e in events if e.kind == "note"]
    if claims:
        lines += ["", "## Claims and sources", "", *claims]
    if notes:
        lines += ["", "## Notes", "", *(f"- {text}" for text in notes)]
    sources = _sources(events)
    if sources:
        lines += ["", "## Items read or cited", "", *sources]
    return "\n".join(lines) + "\n"


def as_json(session_id: str, research: Research | None, events: Sequence[Event]) -> dict[str, Any]:
    head: dict[str, Any] = {"session_id": session_id}
    if research is not None:
        head |= {"name": research.name, "created_at": research.created_at, "updated_at": research.updated_at}
    return head | {"events": [{"kind": e.kind, "at": e.at, **e.payload} for e in events]}
