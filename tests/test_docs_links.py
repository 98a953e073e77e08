"""The docs hold together: every relative link and anchor in README.md and docs/*.md resolves, the
README stays a landing page, and every command of its quick start is run by the tests."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"^#{1,6}\s+(.*)$", line):
            base = slug(match.group(1))
            name, n = base, 0
            while name in found:  # a repeated heading gets -1, -2, …
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def links(page: Path) -> list[str]:
    prose = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, broken


def test_slugs_follow_github_for_the_headings_the_docs_use() -> None:
    assert slug("Live re-indexing (`serve --watch`)") == "live-re-indexing-serve---watch"
    assert slug("Several workers / PostgreSQL") == "several-workers--postgresql"
    assert slug("Deep-research clients: `search` and `fetch`") == "deep-research-clients-search-and-fetch"


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    pages = {p.name for p in PAGES if p.parent.name == "docs" and p.name != "README.md"}
    assert pages <= listed, sorted(pages - listed)


def test_the_readme_is_a_landing_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for section in ("Quick start", "Install", "First import", "Connect a host", "Tools"):
        assert f"## {section}\n" in text, section
    assert "docs/README.md" in text


def quick_start_commands() -> list[str]:
    """The shell lines of the README's quick start (its fenced blocks), comments dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


def test_the_quick_start_is_the_two_commands_the_design_names() -> None:
    assert quick_start_commands() == ["make demo", "make test"]


def test_make_test_in_the_quick_start_is_the_command_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "make test" in [line.strip() for line in ci]


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in quick_start_commands() if c != "make test"])
def test_each_quick_start_command_runs_for_real_without_a_traceback(command: str) -> None:
    # `make test` is this suite itself: running it here would recurse (the test above ties it to CI)
    done = subprocess.run(shlex.split(command), cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "Traceback" not in done.stdout + done.stderr
