"""The wire form of our results: what a host's model reads, so every key costs tokens.

`dump` turns a result model into structured content without empty fields, fields at their
default and copies of what another field already says (an item's `id` is the tail of its `uri`;
a media `loc` repeats the media id). The published output schemas (`SearchOutput`, `GetOutput`)
describe that form: the fields every result has, and room for the fields its source adds
(DESIGN §5), so one small schema serves every source's tools. The text a tool sends beside
it, for hosts whose model reads text, is rendered here too (`render_search`, `render_get`):
pure functions of the response models (a source with a response of its own renders it beside
its models: `chats/models.py`, `notes/rendering.py`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .models import GetResponse, ResultItem, SearchResponse

# Fields that stay on the wire as null: their absence would be ambiguous.
KEEP_NULL = frozenset({"next_offset", "top_score", "next"})
# Fields said even at their default: how a get counted its tokens.
SAY_ALWAYS = frozenset({"tokenizer"})
SCORE_DIGITS = 3
"""Significant digits a score is given with at the least: a page gives its scores more when
three would print two distinct scores alike (`score_digits`); 17 tells any two floats apart."""
EXACT_DIGITS = 17
ROUNDED_KEPT = 4096  # scores remembered rounded (`rounded`): a few pages' worth
DEFAULT_SCORE_TYPE = "fts"
# Keys of a loc that repeat the item's own id.
LOC_ITEM_IDS = ("media_id", "conversation_id")
# A loc key that finds the chunk on its own, and the key it makes redundant (get reads the first).
LOC_COPIES = (("chunk_index", "approx_offset"), ("message_id", "message_index"))
# A field and the field it may merely repeat (an email's subject is its title, its Date the
# item's date; a prompt's keywords are its tags).
FIELD_COPIES = (("subject", "title"), ("date", "last_modified"), ("tags", "keywords"))
# The fields without which `_drop_copies` drops nothing from a search hit (it drops a summary only
# when not kept, and a hit says one only when kept).
COPIES_NEED = frozenset({"created_at", "subject", "date", "keywords", "attachment_count"})
# How much of a summary is compared with the snippet: one that opens the snippet is a copy.
SUMMARY_PROBE = 60
# Fields a search hit leaves to the get tools' `meta` (DESIGN §5 fields all the same): the
# item's outline and summary, its creation time beside `last_modified`, mail headers beyond
# from/date/subject, a card's format details.
DETAIL_FIELDS = (
    "headings",
    "summary",
    "created_at",
    "to",
    "cc",
    "message_id",
    "attachments",
    "character_version",
    "spec",
)
# An ISO timestamp with seconds: 2025-06-03T17:45:02 (then a zone, if any).
MINUTE_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?![.\d])")
# Our own UTC timestamps, written the short way (Z for +00:00).
TIMESTAMPS = ("created_at", "last_modified")


def dump(model: BaseModel) -> dict[str, Any]:
    """The wire form: JSON types, aliases, nothing empty or at its default, no redundant copy
    (`KEEP_NULL` fields stay, as null)."""
    hits = _said_hits(model)
    data = model.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_defaults=True, exclude=hits and hits[1]
    )
    fields = set(type(model).model_fields)
    for name in KEEP_NULL & fields:
        data.setdefault(name, None)
    for name in SAY_ALWAYS & fields:
        data[name] = getattr(model, name)
    if isinstance(model, ResultItem):
        return compact_item(data)
    if isinstance(data.get("meta"), dict):
        data["meta"] = compact_item(data["meta"])
        if str(data["meta"].get("uri", "")).startswith(f"{data['meta'].get('source')}://"):
            del data["meta"]["source"]  # the uri's scheme says it
    digits = SCORE_DIGITS
    if hits is not None:
        results, _, keep = hits
        digits = score_digits(r.score for r in results)
        hit_results = zip(data["results"], results, strict=True)
        data["results"] = [
            _said_once(_compact_rest(item, r.id, keep, digits, _copies_said(type(r), keep)))
            for item, r in hit_results
        ]
        _hoist_score_type(data)
    elif isinstance(data.get("results"), list):
        kept: list[frozenset[str]] = [_kept(r) for r in getattr(model, "results", [])]
        kept += [frozenset()] * (len(data["results"]) - len(kept))
        digits = score_digits(hit.get("score") for hit in data["results"])
        pairs = zip(data["results"], kept, strict=True)
        data["results"] = [brief(compact_item(item, keep, digits), keep) for item, keep in pairs]
        _hoist_score_type(data)
    if isinstance(data.get("top_score"), float):
        data["top_score"] = rounded(data["top_score"], digits)
    return data


def _said_hits(model: BaseModel) -> tuple[list[ResultItem], dict[str, Any], frozenset[str]] | None:
    """A search page's results, what pydantic leaves out of each hit's dump (what `compact_item`
    and `brief` would drop in every hit: `rank`, the detail fields the search did not keep, `id`
    and `source` that its uri says), and the fields kept; None (each hit dumped whole, then
    compacted) when its hits keep different fields or one's uri is not `<source>://<id>`.
    Pydantic drops them while it walks the page, and each hit's own compaction has less to do."""
    if not isinstance(model, SearchResponse) or not model.results:
        return None
    results = model.results
    keep = _kept(results[0])
    for result in results:
        if not isinstance(result, ResultItem) or result.private["_keep"] != keep:
            return None
        if result.uri != f"{result.source}://{result.id}":
            return None
    dropped = {"id", "source", "rank", *(key for key in DETAIL_FIELDS if key not in keep)}
    return results, {"results": {"__all__": dropped}}, keep


@functools.lru_cache(maxsize=64)
def _copies_said(model: type[ResultItem], keep: frozenset[str]) -> bool:
    """Whether a hit of `model` can say a field `_drop_copies` drops, once `_said_hits` left out
    the detail fields not kept (a note's cannot: ~0.5 µs a hit saved)."""
    said = {name for name in model.model_fields if name not in DETAIL_FIELDS or name in keep}
    return bool(said & COPIES_NEED)


def _kept(result: object) -> frozenset[str]:
    """The fields a hit's search asked to keep (`ResultItem._keep`), read past pydantic's
    `__getattr__`."""
    return result.private["_keep"] if isinstance(result, ResultItem) else frozenset()


def score_digits(scores: Iterable[object]) -> int:
    """The fewest significant digits, at least `SCORE_DIGITS`, that give a page's distinct scores
    distinct numbers: a long hybrid page of small scores (0.0123, 0.0121…) still reads as ranked.
    Rounding keeps the order, so only neighbours in sorted order can round alike: each count of
    digits stops at the first pair that does."""
    distinct = sorted({s for s in scores if isinstance(s, float)})
    for digits in range(SCORE_DIGITS, EXACT_DIGITS):
        previous = None
        for score in distinct:
            shown = rounded(score, digits)
            if shown == previous:
                break
            previous = shown
        else:
            return digits
    return EXACT_DIGITS


def rounded(score: float, digits: int = SCORE_DIGITS) -> float:
    """`score` to `digits` significant digits: the number both the structured content and the
    text say (the text prints it as Python and JSON do: 0.0123, 0.5, 1e-05). Remembered: a
    page's scores are rounded four times each (its digits and its hits, in `dump` and in the
    text), and formatting a float is most of what a top-100 page's rounding costs."""
    if not score:  # 0.0 and -0.0 are one key to the cache but print apart
        return float(f"{score:.{digits}g}")
    return _rounded(score, digits)


@functools.lru_cache(maxsize=ROUNDED_KEPT)
def _rounded(score: float, digits: int) -> float:
    return float(f"{score:.{digits}g}")


def _hoist_score_type(page: dict[str, Any]) -> None:
    """A score type every hit shares is said once, on the page (fts, the default, not at all)."""
    kinds = {hit.get("score_type", DEFAULT_SCORE_TYPE) for hit in page["results"]}
    if len(kinds) != 1:
        return
    for hit in page["results"]:
        hit.pop("score_type", None)
    if (kind := kinds.pop()) != DEFAULT_SCORE_TYPE:
        page["score_type"] = kind


def compact_item(
    item: dict[str, Any], keep: frozenset[str] = frozenset(), digits: int = SCORE_DIGITS
) -> dict[str, Any]:
    """One result without copies or empties: `id` (the uri's tail), `rank` (its place in the
    list, after `offset`), fields repeating another (`FIELD_COPIES`, `created_at` equal to
    `last_modified`, a summary that opens the snippet unless `keep` asks for it), ids the loc
    repeats, empty lists and strings; UTC timestamps end in Z; the score has `digits` significant
    digits."""
    item_id = item.get("id")
    if item_id is not None and item.get("uri") == f"{item.get('source')}://{item_id}":
        del item["id"]
    item.pop("rank", None)
    return _compact_rest(item, item_id, keep, digits)


def _compact_rest(
    item: dict[str, Any], item_id: Any, keep: frozenset[str], digits: int, copies: bool = True
) -> dict[str, Any]:
    """`compact_item` after `id` and `rank` (`item_id`: the result's id; `copies`: whether the
    item can have a field `_drop_copies` drops)."""
    if isinstance(item.get("loc"), dict):
        _compact_loc(item, item["loc"], item_id)
    if item.get("conversation_id") == item_id:
        item.pop("conversation_id", None)
    if copies:
        _drop_copies(item, keep)
    # `not value` first: the tuple of an empty list, string and dict is built for falsy values only
    for key in [key for key, value in item.items() if not value and value in ([], "", {})]:
        del item[key]
    for key in TIMESTAMPS:
        if isinstance(item.get(key), str) and item[key].endswith("+00:00"):
            item[key] = item[key][: -len("+00:00")] + "Z"
    if isinstance(item.get("score"), float):
        item["score"] = rounded(item["score"], digits)
    return item


def _compact_loc(item: dict[str, Any], loc: dict[str, Any], item_id: Any) -> None:
    for key in LOC_ITEM_IDS:
        if loc.get(key) == item_id:
            loc.pop(key)
    for key, copy in LOC_COPIES:
        if key in loc:
            loc.pop(copy, None)
    if item.get("message_id") == loc.get("message_id"):
        item.pop("message_id", None)


def _drop_copies(item: dict[str, Any], keep: frozenset[str] = frozenset()) -> None:
    if item.get("created_at") == item.get("last_modified"):
        item.pop("created_at", None)
    for key, original in FIELD_COPIES:
        if key in item and item[key] == item.get(original):
            del item[key]
    if item.get("attachment_count") is not None:
        item.pop("has_attachments", None)  # attachment_count > 0 says it
    if item.get("attachment_count") == 0:
        del item["attachment_count"]
    summary = str(item.get("summary", ""))
    opens_snippet = summary[:SUMMARY_PROBE].strip("…") in str(item.get("snippet", ""))
    if summary and opens_snippet and "summary" not in keep:
        del item["summary"]


def brief(hit: dict[str, Any], keep: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A search hit says enough to decide whether to read the item: the fields that describe
    the item at length (`DETAIL_FIELDS`) are in the get tools' `meta`, unless the search's
    `fields` asks for them (`keep`); `source` is the uri's scheme; the date is to the minute."""
    for key in DETAIL_FIELDS:
        if key not in keep:
            hit.pop(key, None)
    return _said_once(hit)


def _said_once(hit: dict[str, Any]) -> dict[str, Any]:
    """`brief` after the detail fields."""
    if str(hit.get("uri", "")).startswith(f"{hit.get('source')}://"):
        del hit["source"]
    modified = hit.get("last_modified")
    if isinstance(modified, str) and MINUTE_SECONDS.match(modified):
        hit["last_modified"] = modified[:16] + modified[19:]
    return hit


def fields_in_description(schema: dict[str, Any]) -> None:
    """A hit's fields named in its schema's description instead of as `properties`: a client's
    JSON Schema validator descends into every declared property of every hit, which made the
    official client's check of a top-100 page cost ~18 ms against ~0.7 ms for `required` alone
    (docs/performance.md); the names, types and descriptions tell a model the same."""
    said = []
    for name, field in schema.pop("properties").items():
        kinds = [field.get("type")] if "type" in field else [k.get("type") for k in field.get("anyOf", [])]
        kind = "/".join(str(k) for k in kinds if k not in (None, "null"))
        said.append(
            f"{name} ({kind})" + (f": {field['description'].rstrip('.')}" if "description" in field else "")
        )
    schema["description"] = f"{schema['description']} Fields: {'; '.join(said)}."


class Hit(BaseModel):
    """A hit; its source adds fields (media: from, subject, page…; chats: sender, role…)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=fields_in_description)

    uri: str = Field(description="<source>://<id>, for the get tools.")
    title: str
    score: float = Field(description="0..1, comparable across sources.")
    snippet: str | None = None
    loc: dict[str, Any] | None = Field(default=None, description="For the get tools: where the hit is.")


class SearchOutput(BaseModel):
    """A page of hits, best first (the first is rank offset + 1)."""

    model_config = ConfigDict(extra="allow")

    results: list[Hit]
    count: int
    has_more: bool
    next_offset: int | None = Field(description="The offset of the next page.")
    total_estimated: int
    warnings: list[str] = Field(default_factory=list)


class GetOutput(BaseModel):
    """An item's fields (`meta`) and as much of its content as the budget allows."""

    model_config = ConfigDict(extra="allow")

    meta: dict[str, Any] = Field(description="The item's uri, title and its source's fields.")
    content: Any = Field(description="Text; for chats the messages.")
    mode_used: str
    truncated: bool
    next: dict[str, Any] | None = Field(description="Arguments for the same get tool to read on.")
    warnings: list[str] = Field(default_factory=list)


def hit_line(r: ResultItem, digits: int = SCORE_DIGITS) -> str:
    """One search hit: rank, score (to `digits` significant digits, the structured content's
    number), title, uri, tags, matched terms and why; then its snippet."""
    extras = []
    if r.tags:
        extras.append("tags: " + ", ".join(r.tags[:6]))
    if r.matched_terms:
        extras.append("matched: " + ", ".join(r.matched_terms))
    if r.reason:
        extras.append("why: " + r.reason)
    tail = f" ({'; '.join(extras)})" if extras else ""
    line = f"{r.rank}. [{rounded(r.score, digits)}] {r.title} — {r.uri}{tail}\n   {r.snippet}"
    return line + (f"\n   content: {r.content}" if r.content else "")


def render_search(response: SearchResponse[Any]) -> str:
    head = f"{response.count} result(s), about {response.total_estimated} in all"
    if response.has_more:
        head += f"; next page: offset={response.next_offset}"
    digits = score_digits(r.score for r in response.results)
    lines = [head, *(hit_line(r, digits) for r in response.results)]
    if response.expanded_terms:
        lines.append("expanded: " + "; ".join(response.expanded_terms))
    lines += [f"warning: {w}" for w in response.warnings]
    return "\n".join(lines)


def render_get(response: GetResponse[Any]) -> str:
    m = response.meta
    head = f"{m.title} — {m.uri} ({response.mode_used}, ~{response.estimated_tokens} tokens"
    head += ", truncated)" if response.truncated else ")"
    content = response.content if isinstance(response.content, str) else str(response.content)
    lines = [head, "", content]
    if response.next is not None:
        lines += ["", f"continue with loc={dump(response.next.loc)} retrieval={response.next.retrieval}"]
    lines += [f"warning: {w}" for w in response.warnings]
    return "\n".join(lines)
