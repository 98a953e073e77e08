"""media_search / media_get / media_transcript and media://types through a real in-memory MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge_mcp.sources.media.formats.transcripts import parse_cues
from tests.budgets import needed_budget, within_budget
from tests.conftest import FIXTURES, call, error, import_into, item_id

pytestmark = pytest.mark.anyio

MEDIA = FIXTURES / "media"


@pytest.fixture
async def media_client(data_dir: Path, client_factory: Any) -> Any:
    await import_into(data_dir, "media", MEDIA)
    async with client_factory() as client:
        yield client


async def top(client: Any, query: str, **args: Any) -> dict[str, Any]:
    response = await call(client, "media_search", query=query, **args)
    assert response["count"] >= 1, f"nothing found for {query!r}"
    return dict(response["results"][0])


async def test_tools_are_listed_read_only_with_output_schema(media_client: Any) -> None:
    tools = {t.name: t for t in (await media_client.list_tools()).tools}
    for name in ("media_search", "media_get", "media_transcript"):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].title and tools[name].output_schema
    assert "from" in json.dumps(tools["media_search"].output_schema)


async def test_an_email_hit_carries_headers_and_a_snippet_from_the_own_reply(media_client: Any) -> None:
    hit = await top(media_client, "catamaran")
    assert hit["media_type"] == "email" and hit["uri"] == f"media://{item_id(hit)}"
    assert hit["from"] == "Marcus Oyelaran <marcus@example.org>"
    # the subject is the title and the Date the item's date (to the minute on a hit): no copies
    assert hit["title"] == "Re: Q3 offsite planning" and "subject" not in hit and "date" not in hit
    assert hit["last_modified"] == "2025-06-03T10:47+01:00"
    # no attachments: nothing about them on the wire
    assert not {"has_attachments", "attachment_count", "attachments"} & set(hit)
    assert "catamaran" in hit["snippet"] and ">" not in hit["snippet"]
    assert hit["matched_terms"] == ["catamaran"]
    assert set(hit["loc"]) == {"chunk_index", "chunk_uuid"}  # the media id is the uri's
    meta = (await call(media_client, "media_get", media_id=hit["uri"], loc=hit["loc"]))["meta"]
    assert meta["to"] == ["Dana Whitfield <dana@example.org>", "Priya Raman <priya@example.org>"]
    assert meta["cc"] == ["Tom Baxter <tom@example.org>"]
    assert meta["title"] == "Re: Q3 offsite planning" and "subject" not in meta
    assert meta["last_modified"] == "2025-06-03T10:47:30+01:00" and "date" not in meta
    assert meta["thread_id"] == "<20250603080211.4f2a@mail.example.org>"
    assert not {"has_attachments", "attachment_count", "attachments"} & set(meta)


@pytest.mark.parametrize(
    "word", ["zeppelin", "Friedrichshafen", "quokka", "tangerine", "pomegranate", "Merchandise", "cormorant"]
)
async def test_words_only_in_quotes_attachments_or_page_chrome_are_not_found(
    media_client: Any, word: str
) -> None:
    assert (await call(media_client, "media_search", query=word))["count"] == 0


@pytest.mark.parametrize("query", ["Invoice #4471", "Northwind"])
async def test_the_invoice_email_is_found_by_subject_and_body(media_client: Any, query: str) -> None:
    hit = await top(media_client, query)
    assert hit["title"] == "Invoice #4471 from Northwind Hosting" and "subject" not in hit  # the subject
    assert hit["from"] == "Northwind Hosting Billing <billing@northwind-hosting.example>"


async def test_an_email_with_an_attachment_lists_it(media_client: Any) -> None:
    hit = await top(media_client, "Corner Bistro receipt")
    assert hit["attachment_count"] == 1 and "attachments" not in hit
    got = await call(media_client, "media_get", media_id=hit["uri"], loc=hit["loc"])
    assert got["meta"]["attachment_count"] == 1
    assert got["meta"]["attachments"] == [
        {"filename": "expenses-june.csv", "content_type": "text/csv", "size_bytes": 440}
    ]
    assert got["attachments"] == got["meta"]["attachments"]


async def test_a_pdf_hit_names_its_page(media_client: Any) -> None:
    hit = await top(media_client, '"inverter clipping"')
    assert (hit["media_type"], hit["doc_type"], hit["page"]) == ("pdf", "pdf", 3)
    assert hit["title"] == "A Homeowner's Guide to Rooftop Solar"
    assert "inverter clipping" in hit["snippet"].lower()
    meta = (await call(media_client, "media_get", media_id=hit["uri"], loc=hit["loc"]))["meta"]
    assert 0 < len(meta["summary"]) <= 200


async def test_a_web_page_hit_has_url_headings_and_summary(media_client: Any) -> None:
    hit = await top(media_client, "itriyya Palermo")
    assert hit["media_type"] == "html" and hit["url"].endswith("/short-history-of-pasta")
    # anchored on the match, so the summary (the article's opening) is not a copy of the snippet
    got = await call(media_client, "media_get", media_id=hit["uri"], query="itriyya Palermo")
    meta = got["meta"]
    assert meta["headings"][0] == "A Short History of Pasta" and len(meta["headings"]) == 5
    assert meta["summary"].startswith("No, Marco Polo")


async def test_a_transcript_hit_says_when_in_the_recording(media_client: Any) -> None:
    hit = await top(media_client, "otters fenders")
    assert hit["media_type"] == "transcript" and hit["doc_type"] == "vtt"
    assert 0 <= hit["start_s"] < 298.828 < hit["end_s"]  # the otters cue starts at 00:04:58.828


async def test_media_types_filter_keeps_only_those_kinds(media_client: Any) -> None:
    query = "the OR and OR a"
    everything = await call(media_client, "media_search", query=query, limit=100)
    assert {r["media_type"] for r in everything["results"]} >= {"email", "pdf", "html", "transcript"}
    only = await call(media_client, "media_search", query=query, media_types=["transcript", "pdf"], limit=100)
    assert {r["media_type"] for r in only["results"]} == {"transcript", "pdf"}
    assert only["count"] == 3


async def test_an_unknown_media_type_is_a_tool_error_naming_the_field(media_client: Any) -> None:
    text = await error(media_client, "media_search", query="boat", media_types=["video"])
    assert "media_types" in text and "transcript" in text


def within(response: dict[str, Any], dates: list[str]) -> bool:
    """Every result is dated one of `dates`, and with the thread's folded hits there are that many."""
    results = response["results"]
    folded = sum(r.get("thread_hits") or 0 for r in results)
    return all(r["last_modified"] in dates for r in results) and len(results) + folded == len(dates)


async def test_date_filters_compare_the_items_own_date(media_client: Any) -> None:
    query = "Annecy OR catamaran OR Talloires OR Finance"
    after = await call(
        media_client, "media_search", query=query, date_from="2025-06-04", media_types=["email"]
    )
    # Both messages of each day belong to one thread: it takes one place, counting the other.
    # An email's date is its last_modified (to the minute on a hit, in its own zone).
    assert within(after, ["2025-06-04T08:30+01:00", "2025-06-04T15:42+05:30"])
    before = await call(
        media_client, "media_search", query=query, date_to="2025-06-03", media_types=["email"]
    )
    assert within(before, ["2025-06-03T10:47+01:00", "2025-06-03T17:45+05:30"])
    window = await call(
        media_client, "media_search", query="the", date_from="2024-11-01", date_to="2024-11-30"
    )
    assert [r["media_type"] for r in window["results"]] == ["html"]


@pytest.mark.parametrize("field", ["date_from", "date_to"])
async def test_a_bad_date_is_a_tool_error_naming_the_field(media_client: Any, field: str) -> None:
    text = await error(media_client, "media_search", query="boat", **{field: "last tuesday"})
    assert field in text and "ISO 8601" in text
    assert (await media_client.call_tool("media_search", {"query": "boat"})).is_error is False


async def test_order_by_recent_sorts_by_last_modified(media_client: Any) -> None:
    response = await call(
        media_client, "media_search", query="Annecy OR boat OR pasta OR solar OR meeting", order_by="recent"
    )
    stamps = [r["last_modified"] for r in response["results"]]
    assert len(stamps) >= 3 and stamps == sorted(stamps, reverse=True)


@pytest.mark.parametrize(
    "args, field", [({"limit": 0}, "limit"), ({"offset": -1}, "offset"), ({"order_by": "oldest"}, "order_by")]
)
async def test_bad_paging_and_enums_name_the_field(
    media_client: Any, args: dict[str, Any], field: str
) -> None:
    assert field in await error(media_client, "media_search", query="boat", **args)


async def test_pages_never_overlap_or_skip(media_client: Any) -> None:
    everything = await call(media_client, "media_search", query="the OR a", limit=100)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await call(media_client, "media_search", query="the OR a", limit=4, offset=offset)
        seen += [r["uri"] for r in page["results"]]
        offset = page["next_offset"]
    assert seen == [r["uri"] for r in everything["results"]] and len(seen) == len(set(seen))


@pytest.mark.parametrize("max_tokens", [50, 150, 600])
@pytest.mark.parametrize("mode", ["snippet", "chunk", "chunk_with_siblings", "full", "auto"])
async def test_get_stays_within_the_token_budget(media_client: Any, mode: str, max_tokens: int) -> None:
    hit = await top(media_client, "B-tree overflow pages")
    args = {"media_id": hit["uri"], "loc": hit["loc"], "retrieval": {"mode": mode, "max_tokens": max_tokens}}
    got = within_budget(await media_client.call_tool("media_get", args), max_tokens)
    if needed_budget(got, max_tokens) is not None:  # too small for content: never raised
        assert max_tokens <= 120 and not got["content"], got
        return
    assert got["mode_used"] == ("chunk_with_siblings" if mode == "auto" else mode)
    assert got["meta"]["uri"] == hit["uri"] and got["content"]


async def test_get_reads_the_chunk_of_the_hit_and_siblings_around_it(media_client: Any) -> None:
    hit = await top(media_client, '"inverter clipping"')
    one = await call(
        media_client, "media_get", media_id=hit["uri"], loc=hit["loc"], retrieval={"mode": "chunk"}
    )
    assert "inverter clipping" in one["content"] and one["meta"]["page"] == 3
    more = await call(
        media_client,
        "media_get",
        media_id=hit["uri"],
        loc=hit["loc"],
        retrieval={"mode": "chunk_with_siblings", "max_tokens": 2000},
    )
    assert one["content"] in more["content"] and len(more["content"]) > len(one["content"])


async def test_get_with_a_query_and_no_loc_anchors_on_the_match(media_client: Any) -> None:
    hit = await top(media_client, "harbour master")
    got = await call(
        media_client, "media_get", media_id=hit["uri"], query="otters", retrieval={"mode": "chunk"}
    )
    assert "otters" in got["content"] and got["meta"]["loc"]["chunk_index"] > 0


async def test_unknown_media_id_names_the_field(media_client: Any) -> None:
    for tool in ("media_get", "media_transcript"):
        assert "media_id" in await error(media_client, tool, media_id="does-not-exist")


async def test_a_loc_of_another_item_is_a_tool_error(media_client: Any) -> None:
    email = await top(media_client, "catamaran")
    pdf = await top(media_client, "inverter")
    # a hit's loc leaves the media id to its uri; a get's `next.loc` names it
    got = await call(media_client, "media_get", media_id=email["uri"], loc=email["loc"])
    email_loc = got["next"]["loc"]
    assert email_loc["media_id"] == item_id(email)
    assert "loc.media_id" in await error(media_client, "media_get", media_id=pdf["uri"], loc=email_loc)


async def transcript_id(client: Any) -> str:
    return item_id(await top(client, "harbour master", media_types=["transcript"]))


async def test_transcript_text_has_a_timestamp_before_each_cue(media_client: Any) -> None:
    media_id = await transcript_id(media_client)
    got = await call(media_client, "media_transcript", media_id=media_id)
    assert (got["media_id"], got["format"]) == (media_id, "text")
    lines = got["content"].split("\n")
    assert (
        lines[0] == "[00:00:04] Welcome back to Tidewater, the podcast about the people who keep small "
        "harbours running. I'm Hannah Cole."
    )
    assert all(line.startswith("[") for line in lines) and len(lines) == 25
    plain = await call(media_client, "media_transcript", media_id=media_id, include_timestamps=False)
    assert plain["content"].startswith("Welcome back") and "[00:" not in plain["content"]


@pytest.mark.parametrize(
    "fmt, head",
    [("srt", "1\n00:00:04,000 --> 00:00:11,500\n"), ("vtt", "WEBVTT\n\n00:00:04.000 --> 00:00:11.500\n")],
)
async def test_transcript_as_subtitle_files_regenerates_the_cues(
    media_client: Any, fmt: str, head: str
) -> None:
    got = await call(media_client, "media_transcript", media_id=await transcript_id(media_client), format=fmt)
    assert got["content"].startswith(head)
    cues, _ = parse_cues(got["content"])
    assert len(cues) == 25 and cues[-1]["end_s"] == 362.428


async def test_transcript_as_json_is_a_list_of_timed_cues(media_client: Any) -> None:
    got = await call(
        media_client, "media_transcript", media_id=await transcript_id(media_client), format="json"
    )
    cues = got["content"]
    assert cues[0] == {"start_s": 4.0, "end_s": 11.5, "text": cues[0]["text"]}
    assert cues[3]["speaker"] == "Ewan" and len(cues) == 25


async def test_transcript_of_a_non_transcript_is_a_tool_error_naming_media_id(media_client: Any) -> None:
    email = await top(media_client, "catamaran")
    text = await error(media_client, "media_transcript", media_id=email["uri"])
    assert "media_id" in text and "not a transcript" in text
    assert "format" in await error(media_client, "media_transcript", media_id=email["uri"], format="docx")


async def test_media_types_resource_counts_the_callers_items(data_dir: Path, client_factory: Any) -> None:
    await import_into(data_dir, "media", MEDIA / "emails", MEDIA / "transcripts", user="dana")
    async with client_factory(user="dana") as dana, client_factory() as local:
        assert "media://types" in [str(r.uri) for r in (await dana.list_resources()).resources]
        counts = json.loads((await dana.read_resource("media://types")).contents[0].text)
        assert counts == {
            "media_types": [{"media_type": "email", "count": 7}, {"media_type": "transcript", "count": 2}],
            "total": 9,
        }
        assert json.loads((await local.read_resource("media://types")).contents[0].text)["total"] == 0
