"""The pure helpers of the write tools: front matter rendering, the three body changes, file
names and the `folder` check, and the lexical similarity."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from knowledge_mcp.sources.errors import InvalidArgumentError
from knowledge_mcp.sources.notes.writing.markdown import NoteText, appended, render_note, replace_section
from knowledge_mcp.sources.notes.writing.paths import file_stem, folder_parts
from knowledge_mcp.sources.notes.writing.similarity import resemblance, top_terms
from knowledge_mcp.sources.notes.writing.writer import new_body
from knowledge_mcp.sources.text.frontmatter import split_front_matter

DATA = Path(__file__).parent / "data" / "notes_writing"
WHEN = "2026-11-24T01:00:00+00:00"

RENDER_CASES = [
    # (what it shows, title, tags, front matter expected)
    ("plain title", "Sourdough starter", [], {"title": "Sourdough starter"}),
    ("tags as a list", "Trip", ["travel", "2026"], {"title": "Trip", "tags": ["travel", "2026"]}),
    ("a colon and quotes survive YAML", 'Re: "the plan"', [], {"title": 'Re: "the plan"'}),
    ("a title that looks like YAML stays text", "yes", [], {"title": "yes"}),
    ("non-ASCII", "Crème brûlée — notes", ["küche"], {"title": "Crème brûlée — notes", "tags": ["küche"]}),
    ("a comma in the title", "Thinking, Fast and Slow", [], {"title": "Thinking, Fast and Slow"}),
]


@pytest.mark.parametrize(
    ("case", "title", "tags", "expected"), RENDER_CASES, ids=[c[0] for c in RENDER_CASES]
)
def test_a_new_note_reads_back_with_its_title_tags_and_dates(
    case: str, title: str, tags: list[str], expected: dict[str, object]
) -> None:
    text = render_note(title, "Body text.\n", tags, WHEN)
    front, body = split_front_matter(text)
    assert {k: front[k] for k in expected} == expected
    assert str(front["created"]) == str(front["modified"]) == WHEN
    assert body.strip() == "Body text."
    # one key a line (block style), so an update can set its `modified` line and still parse
    updated, later = (
        NoteText.parse(text).with_body("New.", "2027-01-01T00:00:00+00:00"),
        "2027-01-01T00:00:00+00:00",
    )
    assert {k: v for k, v in split_front_matter(updated)[0].items() if k != "modified"} == {
        k: v for k, v in front.items() if k != "modified"
    }
    assert str(split_front_matter(updated)[0]["modified"]) == later


NOTE = "# Plan\n\nIntro.\n\n## Tasks\n\n- a\n- b\n\n### Sub\n\nnested\n\n## Log\n\nday 1\n"
SECTION_CASES = [
    # (what it shows, section, content, expected body)
    (
        "a section ends at the next heading of its level, its sub-sections with it",
        "Tasks",
        "- c",
        "# Plan\n\nIntro.\n\n## Tasks\n\n- c\n\n## Log\n\nday 1\n",
    ),
    (
        "the level may be given, and case does not matter",
        "### sub",
        "flat",
        "# Plan\n\nIntro.\n\n## Tasks\n\n- a\n- b\n\n### Sub\n\nflat\n\n## Log\n\nday 1\n",
    ),
    (
        "the last section runs to the end",
        "Log",
        "day 2",
        "# Plan\n\nIntro.\n\n## Tasks\n\n- a\n- b\n\n### Sub\n\nnested\n\n## Log\n\nday 2\n",
    ),
    (
        "empty content empties the section",
        "Log",
        "",
        "# Plan\n\nIntro.\n\n## Tasks\n\n- a\n- b\n\n### Sub\n\nnested\n\n## Log\n",
    ),
    ("a top heading's section is the whole note", "Plan", "All new.", "# Plan\n\nAll new.\n"),
]


@pytest.mark.parametrize(
    ("case", "section", "content", "expected"), SECTION_CASES, ids=[c[0] for c in SECTION_CASES]
)
def test_replacing_a_section_changes_only_its_text(
    case: str, section: str, content: str, expected: str
) -> None:
    assert replace_section(NOTE, section, content) == expected


def test_an_unknown_section_is_an_error_naming_the_field() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^section: the note has no heading 'Ideas'"):
        replace_section(NOTE, "Ideas", "x")
    with pytest.raises(InvalidArgumentError, match="section"):
        replace_section(NOTE, "# Tasks", "x")  # Tasks is a level-2 heading


def test_headings_inside_fenced_code_of_a_real_note_are_not_sections() -> None:
    note = (DATA / "note-templates.md").read_text(encoding="utf-8")
    with pytest.raises(InvalidArgumentError):
        replace_section(note, "Here's what I'm going to do today", "x")  # only inside ```markdown
    changed = replace_section(note, "Relative daily notes", "Use the FOAM_DATE_ variables.")
    assert "Use the FOAM_DATE_ variables." in changed
    assert "/tomorrow" not in changed  # the section's text, its fenced example included, is gone
    assert changed.split("## Metadata")[1] == note.split("## Metadata")[1]  # the rest is untouched
    assert changed.split("#### Relative daily notes")[0] == note.split("#### Relative daily notes")[0]


def test_an_update_keeps_the_front_matter_line_for_line_but_modified() -> None:
    text = Path("fixtures/notes/reading/thinking-fast-and-slow.md").read_text(encoding="utf-8")
    note = NoteText.parse(text)
    updated = note.with_body(appended(note.body, "A new thought."), WHEN)
    before, after = note.front.splitlines(), NoteText.parse(updated).front.splitlines()
    assert [line for line in after if not line.startswith("modified")] == [
        line for line in before if not line.startswith("modified")
    ]
    front, body = split_front_matter(updated)
    assert str(front["modified"]) == WHEN and front["author"] == "Daniel Kahneman"
    assert body.rstrip().endswith("A new thought.") and body.startswith("\n# Thinking, Fast and Slow")


def test_modified_is_added_to_front_matter_without_one() -> None:
    updated = NoteText.parse("---\ntitle: T\n---\nbody\n").with_body("new", WHEN)
    assert yaml.safe_load(updated.split("---")[1]) == {"title": "T", "modified": WHEN}
    assert NoteText.parse("no front matter\n").with_body("new", WHEN) == "new\n"


BODY_CASES = [
    # (what it shows, content, append, section, expected or error field)
    ("content replaces the body", "new", None, None, "new"),
    ("append adds a paragraph", None, "more", None, "old text\n\nmore"),
    ("section with content replaces the section", "x", None, "S", "old text\n## S\n\nx\n"),
    ("neither is refused", None, None, None, "content"),
    ("both are refused", "a", "b", None, "content"),
    ("section with append is refused", None, "b", "S", "section"),
]


@pytest.mark.parametrize(
    ("case", "content", "append", "section", "expected"), BODY_CASES, ids=[c[0] for c in BODY_CASES]
)
def test_an_update_changes_the_body_one_way(
    case: str, content: str | None, append: str | None, section: str | None, expected: str
) -> None:
    body = "old text\n## S\n\ny\n" if section else "old text"
    if expected in ("content", "section"):
        with pytest.raises(InvalidArgumentError, match=rf"^{expected}:"):
            new_body(body, content, append, section)
    else:
        assert new_body(body, content, append, section) == expected


STEM_CASES = [
    ("Sourdough starter", "Sourdough starter"),
    ("a/b\\c: d?", "a b c d"),
    ("  ..hidden.. ", "hidden"),
    ("", "note"),
    ("///", "note"),
    ("CON", "note CON"),
    ("x" * 200, "x" * 80),
    ("Tags #one [[link]]", "Tags one link"),
]


@pytest.mark.parametrize(("title", "stem"), STEM_CASES)
def test_a_file_name_comes_from_the_title_and_is_safe(title: str, stem: str) -> None:
    assert file_stem(title) == stem


FOLDER_CASES = [
    # (folder, parts, or None when refused)
    (None, ()),
    ("", ()),
    ("projects", ("projects",)),
    ("projects/2026/", ("projects", "2026")),
    ("./inbox", ("inbox",)),
    ("../x", None),
    ("a/../../x", None),
    ("/etc", None),
    ("~/notes", None),
    ("C:/Users", None),
    ("a\\..\\b", None),
    (".obsidian", None),
    ("a/.git", None),
    ("bad\x00name", None),
]


@pytest.mark.parametrize(("folder", "parts"), FOLDER_CASES)
def test_a_folder_is_a_relative_path_of_plain_names(
    folder: str | None, parts: tuple[str, ...] | None
) -> None:
    if parts is None:
        with pytest.raises(InvalidArgumentError, match=r"^folder: must be a relative sub-folder"):
            folder_parts(folder)
    else:
        assert folder_parts(folder) == parts


SIMILARITY_CASES = [
    # (what it shows, a, b, low, high)
    ("the same text", "feed the starter twice a day", "feed the starter twice a day", 1.0, 1.0),
    (
        "case and punctuation do not count",
        "Feed the starter, twice a day!",
        "feed the starter twice a day",
        1.0,
        1.0,
    ),
    (
        "one word changed in twenty",
        "feed the rye starter twice a day and keep it warm near the oven while the dough proofs overnight",
        "feed the rye starter twice a day and keep it cool near the oven while the dough proofs overnight",
        0.85,
        0.95,
    ),
    ("unrelated texts", "feed the starter twice a day", "the invoice is due on friday", 0.0, 0.1),
    ("an empty text", "", "anything at all", 0.0, 0.0),
    (
        "the same words in another order are alike, not the same",
        "rye bread flour",
        "flour bread rye",
        0.4,
        0.7,
    ),
]


@pytest.mark.parametrize(
    ("case", "a", "b", "low", "high"), SIMILARITY_CASES, ids=[c[0] for c in SIMILARITY_CASES]
)
def test_resemblance_is_the_cosine_of_words_and_word_pairs(
    case: str, a: str, b: str, low: float, high: float
) -> None:
    assert low <= resemblance(a, b) <= high


def test_top_terms_are_the_frequent_content_words() -> None:
    text = "The starter: feed the starter with rye flour. Rye flour keeps the starter lively. 2026"
    assert top_terms(text, 3) == ["starter", "flour", "rye"]
