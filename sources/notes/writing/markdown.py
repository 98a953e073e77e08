"""The text of a written note (pure): front matter, and the three ways an update changes a body.

A new note is YAML front matter (title, tags, created, modified) and the body. An update keeps
the file's front matter as it was, line for line, except its top-level `modified:` line, and
changes only the body: replaced whole, appended to, or one heading's section replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ...errors import InvalidArgumentError

FRONT_MATTER = re.compile(
    r"\A(\ufeff?---[ \t]*\r?\n(?:.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z))", re.DOTALL
)
MODIFIED_LINE = re.compile(r"^(modified|updated)[ \t]*:.*$", re.MULTILINE)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def render_note(title: str, body: str, tags: list[str], when: str) -> str:
    """A new note: front matter (title, tags when any, created and modified) and the body."""
    fields: dict[str, object] = {"title": title}
    if tags:
        fields["tags"] = tags
    fields["created"] = when
    fields["modified"] = when
    head = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    return f"---\n{head}---\n\n{body.strip(chr(10))}\n"


@dataclass(frozen=True)
class NoteText:
    """A note file's text as its front matter block (verbatim, may be empty) and its body."""

    front: str
    body: str

    @classmethod
    def parse(cls, text: str) -> NoteText:
        m = FRONT_MATTER.match(text)
        return cls(m.group(1), text[m.end() :]) if m else cls("", text)

    def with_body(self, body: str, when: str) -> str:
        """The file's new text: its front matter with `modified` set to `when`, then `body`."""
        front = self.front
        if front:
            line = f"modified: '{when}'"
            if MODIFIED_LINE.search(front):
                front = MODIFIED_LINE.sub(line, front, count=1)
            else:
                closing = front.rstrip("\r\n").rfind("\n")
                front = f"{front[: closing + 1]}{line}\n{front[closing + 1 :]}"
            if not front.endswith("\n"):
                front += "\n"
            return f"{front}\n{body.strip(chr(10))}\n"
        return f"{body.strip(chr(10))}\n"


def appended(body: str, text: str) -> str:
    """`text` after the body, as its own paragraph."""
    head = body.rstrip()
    return f"{head}\n\n{text.strip(chr(10))}" if head else text.strip("\n")


def _heading_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each Markdown heading outside fenced code."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for index, line in enumerate(lines):
        mark = FENCE.match(line)
        if mark:
            fence = None if fence == mark.group(1) else (fence or mark.group(1))
            continue
        m = HEADING.match(line) if fence is None else None
        if m:
            found.append((index, len(m.group(1)), m.group(2).strip()))
    return found


def _wanted(section: str) -> tuple[int | None, str]:
    """The level (when the name carries its #s) and the folded text of a section name."""
    m = HEADING.match(section.strip())
    if m:
        return len(m.group(1)), m.group(2).strip().casefold()
    return None, section.strip().casefold()


def replace_section(body: str, section: str, content: str) -> str:
    """`body` with the text under the first heading named `section` (`Tasks` or `## Tasks`,
    case-insensitive) replaced by `content`, up to the next heading of the same or a higher
    level; the heading line stays. An unknown section is an error."""
    lines = body.split("\n")
    headings = _heading_lines(lines)
    level, name = _wanted(section)
    for at, (index, depth, text) in enumerate(headings):
        if text.casefold() == name and level in (None, depth):
            end = next((i for i, d, _ in headings[at + 1 :] if d <= depth), len(lines))
            tail = lines[end:]
            middle = [content.strip("\n"), ""] if content.strip() else []
            return "\n".join([*lines[: index + 1], "", *middle, *tail]).rstrip("\n") + "\n"
    raise InvalidArgumentError(  # the note's own headings are content: not in an error (or a log)
        "section", f"the note has no heading {section.strip()!r}; read it (notes_get) to see its headings"
    )
