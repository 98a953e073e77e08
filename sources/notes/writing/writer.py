"""notes_create and notes_update: validate, check for duplicates, write the file, index it.

A note is written as a file first (atomically, `files`), then indexed through the import
runner exactly as `knowledge-mcp import` would (`ImportRun`: the file's items and its record in
one transaction). A crash between the two leaves a file the index does not know yet, which the
next import of the folder picks up; never an index entry without its file. An update first
re-indexes the note's file, so an edit made outside (in an editor) counts as a version: an
`expected_version` older than the file is refused and nothing is written. Writes of one user's
notes are serialized: one lock per database on SQLite; on PostgreSQL (`item_store =
"postgresql"`) the database's advisory lock of the user, held by every process that writes
(`stores.py`), so the version check and the write are atomic across `serve --workers N`.
"""

from __future__ import annotations

import asyncio
import unicodedata
from pathlib import Path

from ...errors import InvalidArgumentError, NotFoundError, SourceUnavailableError
from ...retrieval import Defaults
from ...storage.files.opening import LinkRefusedError
from ...storage.files.walking import Found
from ...storage.naming import stored_path
from ...storage.runs import ImportRun
from ...storage.store import Store
from ...text import dates
from ...text.decoding import decode_text
from ...text.frontmatter import string_list
from ..source import source
from . import duplicates
from .files import create_file, read_note, replace_file
from .folders import notes_folder, writable_root
from .markdown import NoteText, appended, render_note, replace_section
from .models import TIMEOUT_WARNING, DuplicateCheck, WritePermit, WriteResult
from .paths import folder_parts, inside, name_problem, relative_name
from .stores import NoteStore

LEADS_OUT = "leads out of the notes folder (a link?); choose another"
MAX_TITLE = 1000  # paper titles run past 200 characters; the file name keeps the first 80
MAX_CONTENT = 1_000_000
EMOJI_JOINER = "\u200d"  # joins emoji (👩‍💻) in a title; its file name leaves it out (`file_stem`)


def clean_title(title: str) -> str:
    text = " ".join(title.split())
    if not text:
        raise InvalidArgumentError("title", "must not be empty")
    if len(text) > MAX_TITLE:
        raise InvalidArgumentError("title", f"at most {MAX_TITLE} characters")
    invisible = next((ch for ch in text if unicodedata.category(ch) == "Cf" and ch != EMOJI_JOINER), None)
    if invisible is not None:  # the file name's rule (paths.name_problem): no bidi or format characters
        raise InvalidArgumentError("title", f"{name_problem(invisible)}; remove it")
    return text


def checked_content(field: str, text: str) -> str:
    if len(text) > MAX_CONTENT:
        raise InvalidArgumentError(field, f"at most {MAX_CONTENT:,} characters")
    return text


def new_body(body: str, content: str | None, append: str | None, section: str | None) -> str:
    """The body after an update: `content` replaces it (or only `section`'s text), or `append`
    is added at its end. Exactly one of content / append."""
    if (content is None) == (append is None):
        raise InvalidArgumentError("content", "give either content (with or without section) or append")
    if append is not None:
        if section is not None:
            raise InvalidArgumentError("section", "goes with content, not with append")
        return appended(body, checked_content("append", append))
    text = checked_content("content", content or "")
    return replace_section(body, section, text) if section is not None else text


class NoteWriter:
    def __init__(self, notes: NoteStore, permit: WritePermit, defaults: Defaults) -> None:
        """`notes`: the user's notes as the writer indexes them (the backend's `Items.notes`)."""
        self.db: Store = notes.store
        self.store = notes
        self.permit = permit
        self.defaults = defaults

    async def create(
        self, title: str, content: str, tags: list[str] | None, folder: str | None
    ) -> WriteResult:
        title = clean_title(title)
        content = checked_content("content", content)
        root = await notes_folder(self.store, self.permit)
        parts = folder_parts(folder)
        if not inside(root, root.joinpath(*parts)):
            raise InvalidArgumentError("folder", LEADS_OUT)
        async with self.store.lock():
            verdict = await self.check(title, content, exclude=None)
            text = render_note(title, content, string_list(tags), dates.now())
            await self.check_size("content", root, text, 0)
            try:  # the folders are made and entered without following links
                path = await asyncio.to_thread(create_file, root, parts, title, text)
            except LinkRefusedError:
                raise InvalidArgumentError("folder", LEADS_OUT) from None
            return await self.indexed(root, Found.at(path), verdict)

    async def update(
        self,
        note_id: str,
        *,
        content: str | None,
        append: str | None,
        section: str | None,
        expected_version: int | None,
    ) -> WriteResult:
        row = await self.db.item(note_id)
        if row is None:
            raise NotFoundError("note_id", note_id, "pass a notes_search result's uri")
        path = Path(row["source_path"])
        async with self.store.lock():
            root = await writable_root(self.store, self.permit, path)
            # The file is read and written by its resolved path inside `root`, opened without
            # following links: a link swapped in after this check is refused, never followed.
            real = path.resolve()
            if not real.is_relative_to(root):
                raise InvalidArgumentError(
                    "note_id", "that note's file is outside the folders you may write to"
                )
            await self.index(Found(path, real))  # an edit made outside becomes a version first
            row = await self.db.item(note_id) or row
            version = int(row["version"])
            if expected_version is not None and expected_version != version:
                raise InvalidArgumentError(
                    "expected_version",
                    f"the note is at version {version}, not {expected_version}; nothing was changed: "
                    "read it again (notes_get) and retry",
                )
            try:
                note = NoteText.parse(decode_text(await asyncio.to_thread(read_note, real)))
            except LinkRefusedError:
                raise InvalidArgumentError(
                    "note_id", "the note's file is behind a link now; not followed"
                ) from None
            body = new_body(note.body, content, append, section)
            text = note.with_body(body, dates.now())
            await self.check_size("append" if append is not None else "content", root, text, real)
            verdict = await self.check(row["title"], body, exclude=note_id)
            await asyncio.to_thread(replace_file, real, text)
            return await self.indexed(root, Found(path, real), verdict)

    async def check_size(self, field: str, root: Path, text: str, old: Path | int) -> None:
        """Refuse a note that would be larger than `max_note_bytes`, or take the notes under
        the user's own folder past their quota (`old`: the file it replaces, or 0 bytes)."""
        size = len(text.encode("utf-8", "surrogateescape"))
        most = self.permit.max_note_bytes
        if size > most:
            raise InvalidArgumentError(
                field,
                f"the note would be {size:,} bytes, more than the {most:,} a note may have; "
                "split the text into several notes",
            )
        quota = self.permit.quota_bytes
        if quota is None or not inside(self.permit.home, root):
            return
        before = old if isinstance(old, int) else (await asyncio.to_thread(old.stat)).st_size
        used = await self.store.stored_bytes(root)
        if used - before + size > quota:
            raise InvalidArgumentError(
                field,
                f"your notes would take {used - before + size:,} bytes, more than your quota of {quota:,}; "
                "shorten notes (notes_update) or ask for a larger notes_quota_mb",
            )

    async def check(self, title: str, body: str, exclude: str | None) -> DuplicateCheck:
        budget = self.permit.duplicate_check_ms
        return await duplicates.check(
            self.store, title, body, exclude=exclude, budget_ms=budget, defaults=self.defaults
        )

    async def index(self, found: Found) -> None:
        """Import the file through the import runner (one batch of one file: read, hashed, parsed
        and written with its record, skipped when unchanged), looking up only this file's record
        (a whole run reads every file's, a cost that grows with the notes: docs/performance.md);
        a failure is an error."""
        run = ImportRun(self.store.item_store())
        known = await self.store.known_file(str(stored_path(found.path)))
        run.known = {known["path"]: known} if known is not None else {}
        await run.batch([found], None)
        await run.settle()
        if run.summary.failures:
            reason = run.summary.failures[0]["reason"]
            raise SourceUnavailableError(f"the note's file was written but could not be indexed: {reason}")

    async def indexed(self, root: Path, found: Found, verdict: DuplicateCheck) -> WriteResult:
        await self.index(found)
        path = found.path
        row = await self.db.item_by_origin(str(stored_path(path.resolve())))
        if row is None:
            raise SourceUnavailableError("the note's file was written but has no importable content")
        return WriteResult(
            id=row["item_id"],
            uri=source.uri(row["item_id"]),
            path=relative_name(root, path),
            version=int(row["version"]),
            title=row["title"],
            duplicates=verdict.duplicates or None,
            recommendation=verdict.recommendation,
            provider=verdict.provider,
            warnings=[TIMEOUT_WARNING] if verdict.timed_out else None,
        )
