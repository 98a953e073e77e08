"""A BEIR corpus split across the five sources by topic, written as the files people import.

Each document goes to one source by its *dominant term* (the word with the highest tf-idf in
its title and text): the term's hash picks a bucket of 100, and the buckets are dealt out by
`SHARES` (60/25/10/4/1 %), so documents about the same thing land in the same source and the
sources differ in size and vocabulary, as a person's notes, web pages, chats, cards and
prompts do. The larger sources also get synthetic distractor documents (`bench.corpus`'s
Zipfian text), so a word's document frequency differs from source to source.

Every document is written in its source's own format (notes: Markdown; media: a saved web
page; chats: one ChatGPT-export `conversations.json`; characters: V1 cards; prompts: JSON
prompt files). The same documents and distractors are also written as one folder of notes:
the single index the merge is compared with. Deterministic: the same corpus gives the same
files.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge_mcp.sources.search.query import STOP_WORDS

from ..corpus import Writer
from ..corpus import note as synthetic_note

SHARES = {"notes": 0.60, "media": 0.25, "chats": 0.10, "characters": 0.04, "prompts": 0.01}
DISTRACTORS = {"notes": 1500, "media": 600}
"""Synthetic documents added to the larger sources (and to the single index)."""
_WORD = re.compile(r"[a-z][a-z0-9]{3,}")


@dataclass
class Split:
    """Which source each document went to, and where each source's files are."""

    source_of: dict[str, str]
    folders: dict[str, Path]
    single: Path
    """One folder of notes holding every document and distractor."""
    sizes: dict[str, int] = field(default_factory=dict)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def dominant_terms(docs: list[dict[str, Any]]) -> dict[str, str]:
    """Each document's highest tf-idf word (ties: alphabetical); "" for a document without one."""
    counts = [Counter(words(f"{d.get('title', '')} {d.get('text', '')}")) for d in docs]
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(docs)
    dominant: dict[str, str] = {}
    for doc, c in zip(docs, counts, strict=True):
        scored = [(-tf * math.log(n / df[w]), w) for w, tf in c.items()]
        dominant[str(doc["_id"])] = min(scored)[1] if scored else ""
    return dominant


def source_for(term: str, shares: dict[str, float] = SHARES) -> str:
    """The source a dominant term's documents go to: its hash's bucket among the shares."""
    bucket = int(hashlib.sha1(term.encode()).hexdigest()[:8], 16) % 1000 / 1000
    edge = 0.0
    for name, share in shares.items():
        edge += share
        if bucket < edge:
            return name
    return next(reversed(shares))


def write_split(
    docs: list[dict[str, Any]], root: Path, seed: int = 7, extra: dict[str, int] = DISTRACTORS
) -> Split:
    """Write every document into its source's folder and into the single folder, with `extra`
    distractors per source."""
    dominant = dominant_terms(docs)
    source_of = {str(d["_id"]): source_for(dominant[str(d["_id"])]) for d in docs}
    folders = {name: root / "split" / name for name in SHARES}
    single = root / "single"
    for folder in [*folders.values(), single]:
        folder.mkdir(parents=True, exist_ok=True)
    conversations: list[dict[str, Any]] = []
    for doc in docs:
        doc_id, title, text = str(doc["_id"]), doc.get("title") or str(doc["_id"]), doc.get("text", "")
        name = source_of[doc_id]
        (single / f"d{doc_id}.md").write_text(markdown(title, text), encoding="utf-8")
        if name == "chats":
            conversations.append(conversation(f"d{doc_id}", title, text))
        else:
            path = folders[name] / f"d{doc_id}{SUFFIX[name]}"
            path.write_text(WRITERS[name](title, text), encoding="utf-8")
    writer = Writer(random.Random(seed))
    for name, count in extra.items():
        for n, (title, text) in enumerate(distractors(writer, count)):
            (single / f"x{name}{n}.md").write_text(markdown(title, text), encoding="utf-8")
            (folders[name] / f"x{n}{SUFFIX[name]}").write_text(WRITERS[name](title, text), encoding="utf-8")
    (folders["chats"] / "conversations.json").write_text(json.dumps(conversations), encoding="utf-8")
    sizes = Counter(source_of.values())
    return Split(source_of, folders, single, {name: sizes.get(name, 0) for name in SHARES})


def distractors(writer: Writer, count: int) -> Iterable[tuple[str, str]]:
    for n in range(count):
        item = synthetic_note(writer, n)
        yield item.title, item.content


def markdown(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


def web_page(title: str, text: str) -> str:
    t, body = html.escape(title), html.escape(text)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{t}</title></head>\n'
        f"<body><article><h1>{t}</h1>\n<p>{body}</p></article></body></html>\n"
    )


def card(title: str, text: str) -> str:
    return json.dumps({"name": title, "description": text})


def prompt(title: str, text: str) -> str:
    return json.dumps({"name": title, "details": text})


def conversation(key: str, title: str, text: str) -> dict[str, Any]:
    """A ChatGPT export conversation: the document as the user's one message."""
    stamp = 1_700_000_000.0
    message = {
        "id": f"{key}-m",
        "author": {"role": "user", "name": None, "metadata": {}},
        "create_time": stamp,
        "content": {"content_type": "text", "parts": [text or title]},
        "status": "finished_successfully",
    }
    mapping = {
        f"{key}-root": {"id": f"{key}-root", "message": None, "parent": None, "children": [f"{key}-m"]},
        f"{key}-m": {"id": f"{key}-m", "message": message, "parent": f"{key}-root", "children": []},
    }
    return {
        "id": key,
        "title": title,
        "create_time": stamp,
        "update_time": stamp,
        "mapping": mapping,
        "current_node": f"{key}-m",
    }


WRITERS = {"notes": markdown, "media": web_page, "characters": card, "prompts": prompt}
SUFFIX = {"notes": ".md", "media": ".html", "characters": ".json", "prompts": ".json"}
