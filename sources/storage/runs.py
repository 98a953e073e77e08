"""One import run (DESIGN §3): walk the folders, skip what is unchanged, parse, write in batches.

Files are handled in batches of up to `BATCH_FILES` files (twice as many in each batch after the
first, up to `MAX_BATCH_FILES`: a large import commits less often, and its full-text index is
flushed and merged less) or `BATCH_BYTES` bytes read: read, hashed and parsed in one worker-thread
trip, then written in ONE transaction with the record of each file (`Importer.write_files`). A
file's items and its record commit together, so a run killed at any point loses only its open
batch, and a re-run completes it. Whatever goes wrong with one file (unreadable, over the size cap,
a parser error, text SQLite cannot store) is that file's failure or notice and the run goes on;
when a batch's write fails, it is written again file by file so only the bad file fails. An error
of the database itself (broken, full, locked) ends the run (`storage_failure`): what was committed
stays.

An unchanged file is skipped by its size and modification time without being read; if those
changed, by its content hash.
"""

from __future__ import annotations

import asyncio
import hashlib
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as default
from pathlib import Path
from typing import Any, Protocol

from loguru import logger

from ..errors import ImportFileError
from ..text import dates
from .damage.unreadable import why_unreadable
from .files.opening import Folders, LinkRefusedError
from .files.walking import FileTooLargeError, Found, Skipped, read_regular, walk
from .items import ItemParser, ParsedFile, ParsedItem
from .naming import shown, storable, stored_path

BATCH_FILES = 200
MAX_BATCH_FILES = 1600
"""Larger batches commit less often (less CPU), but the last batch's write overlaps no reading:
SciFact's 5,183 notes took less CPU at 3,200 and less wall time at 800 (docs/performance.md)."""
BATCH_BYTES = 16 * 1024 * 1024
RACY_NS = 2_000_000_000
"""A file modified this recently before its import may change again within the same clock tick:
its modification time is not recorded, so the next run hashes it instead of trusting it."""


@dataclass
class ImportSummary:
    source: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    pruned: int = 0
    files_seen: int = 0
    files_failed: int = 0
    failures: list[dict[str, str]] = default(default_factory=list)
    notices: list[dict[str, str]] = default(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @property
    def exit_code(self) -> int:
        return 2 if self.files_failed else 0

    def fail(self, path: Path | str, reason: str) -> None:
        self.files_failed += 1
        self.failures.append({"path": shown(path), "reason": reason[:300]})

    def notice(self, path: Path | str, reason: str, *, skipped: bool = True) -> None:
        self.skipped += skipped
        self.notices.append({"path": shown(path), "reason": reason[:300]})

    def add(self, other: ImportSummary) -> None:
        """Count in another summary's files (a batch's)."""
        for name, value in other.__dict__.items():
            if name != "source":
                setattr(self, name, getattr(self, name) + value)


@dataclass
class FileWork:
    """A file read and parsed, ready to be written with its record in `<p>_files`."""

    key: Path
    """The path as stored (`naming.stored_path`)."""
    file_hash: str
    size: int
    mtime_ns: int | None
    items: list[ParsedItem] | None
    """None: the content is unchanged (only the size and time are recorded again)."""
    item_count: int = 0


FileRecord = Any
"""An imported file's record, read by key (an `aiosqlite.Row`, or a dict from PostgreSQL):
`file_hash`, `item_count`, `size`, `mtime_ns`."""


class ItemStore(Protocol):
    """Where a run writes: the SQLite `importing.Importer`, or the PostgreSQL store's
    (`postgres.writing.PgItemWriter`). The run itself (walking, skipping, parsing, batches,
    failures) is the same for both."""

    source: ItemParser
    p: str
    max_file_bytes: int

    async def known_files(self) -> dict[str, FileRecord]:
        """Every file imported before, by stored path."""
        ...

    async def write_files(self, works: Sequence[FileWork]) -> list[list[str]]:
        """The files' items and records in one transaction: each file's item outcomes."""
        ...

    async def prune_file(self, stored: str) -> int:
        """Forget a file that is gone and its items; how many items."""
        ...

    def fatal(self, exc: BaseException) -> Exception | None:
        """The error that ends the run if `exc` means the store itself is unusable."""
        ...


class ImportRun:
    def __init__(self, importer: ItemStore) -> None:
        self.importer = importer
        self.summary = ImportSummary(importer.p)
        self.writing: asyncio.Task[None] | None = None
        """The previous batch's write, running while the next batch is read and parsed."""
        self.known: dict[str, FileRecord] = {}
        """Every file imported before, by stored path: read once, before the first batch, so
        no batch waits for the database (busy writing the batch before it) to look its files up."""

    async def run(
        self,
        paths: Sequence[Path],
        *,
        prune: bool,
        on_file: Callable[[Path], None] | None,
        follow: bool = True,
    ) -> ImportSummary:
        """`follow`: resolve links in the given paths (the command line's); the watcher's are
        taken as they are, and a link on the way is refused when a file is opened."""
        roots = [p.resolve() if follow else p.absolute() for p in paths]
        for root in roots:
            if not root.exists():
                self.summary.fail(root, "no such file or folder")
        self.known = await self.importer.known_files()
        try:
            seen = await self.walk([r for r in roots if r.exists()], prune, on_file, follow)
            await self.settle()
        finally:
            if self.writing is not None and not self.writing.done():
                self.writing.cancel()
        if prune:
            await self.prune(roots, seen)
        return self.summary

    async def walk(
        self, roots: list[Path], prune: bool, on_file: Callable[[Path], None] | None, follow: bool = True
    ) -> set[str]:
        """Import the files under `roots` batch by batch; the stored paths seen (for `prune`)."""
        seen: set[str] = set()
        pending: list[Found] = []
        batch_files = BATCH_FILES
        for entry in walk(roots, self.importer.source.extensions, follow=follow):
            if isinstance(entry, Skipped):
                self.summary.notice(entry.path, entry.reason)
                continue
            self.summary.files_seen += 1
            pending.append(entry)
            if prune:
                seen.add(str(stored_path(entry.path)))
            if len(pending) >= batch_files:
                await self.batch(pending, on_file)
                pending = []
                batch_files = min(batch_files * 2, MAX_BATCH_FILES)
        await self.batch(pending, on_file)
        return seen

    async def batch(self, paths: list[Found], on_file: Callable[[Path], None] | None) -> None:
        """Read, parse and write these files (the write runs on while the caller goes on)."""
        rest = paths
        while rest:
            found = ImportSummary(self.importer.p)  # the worker thread's own counts
            works, rest = await asyncio.to_thread(self.prepare, rest, self.known, found)
            await self.settle()
            self.summary.add(found)
            self.writing = asyncio.create_task(self.write(works))
        for entry in paths if on_file else ():
            on_file(entry.path)  # type: ignore[misc]

    async def settle(self) -> None:
        """Wait for the previous batch's write (a fatal database error surfaces here)."""
        writing, self.writing = self.writing, None
        if writing is not None:
            await writing

    def prepare(
        self, paths: list[Found], known: dict[str, FileRecord], found: ImportSummary
    ) -> tuple[list[FileWork], list[Found]]:
        """Read and parse files (in a worker thread) until the batch's byte budget is spent; the
        works and the files left for the next round."""
        with Folders() as folders:
            return self._prepare(folders, paths, known, found)

    def _prepare(
        self, folders: Folders, paths: list[Found], known: dict[str, FileRecord], found: ImportSummary
    ) -> tuple[list[FileWork], list[Found]]:
        works: list[FileWork] = []
        spent = 0
        for at, entry in enumerate(paths):
            if spent >= BATCH_BYTES:
                return works, paths[at:]
            path = entry.path
            key = stored_path(path)
            try:
                work, size = self.prepare_file(folders, entry, known.get(str(key)), found, key)
            except (FileTooLargeError, LinkRefusedError) as exc:
                found.notice(path, str(exc))
                if isinstance(exc, LinkRefusedError):
                    logger.warning(
                        "import: {} refused: a symbolic link on its way; not followed", shown(path)
                    )
                continue
            except Exception as exc:  # one bad file is reported; the rest go on
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else None
                found.fail(path, reason or _reason(exc))
                continue
            spent += size
            if work is not None:
                works.append(work)
        return works, []

    def prepare_file(
        self,
        folders: Folders,
        entry: Found,
        known: FileRecord | None,
        found: ImportSummary,
        key: Path,
    ) -> tuple[FileWork | None, int]:
        """Check the file (its own status, reached without following links), skip it when its
        size and time are unchanged, else read it from the one descriptor that was checked.
        `key`: the path as stored (`naming.stored_path`)."""
        path = entry.path
        info = folders.lstat(entry.real)
        if stat.S_ISLNK(info.st_mode):
            raise LinkRefusedError(shown(path))
        if not stat.S_ISREG(info.st_mode):
            raise ImportFileError("not a regular file; not read")
        if known and known["size"] == info.st_size and known["mtime_ns"] == info.st_mtime_ns:
            found.unchanged += int(known["item_count"])
            return None, 0
        raw = read_regular(folders, entry.real, info, self.importer.max_file_bytes)
        file_hash = hashlib.sha256(raw).hexdigest()
        fresh = time.time_ns() - info.st_mtime_ns < RACY_NS
        work = FileWork(key, file_hash, info.st_size, None if fresh else info.st_mtime_ns, None)
        if known and known["file_hash"] == file_hash:
            work.item_count = int(known["item_count"])
            found.unchanged += work.item_count
            return work, len(raw)
        if not raw or raw.isspace():  # nothing but white space (`raw.strip()` would copy it)
            found.notice(path, "empty file skipped")
            work.items = []
            return work, len(raw)
        with dates.opened_file(path, info.st_mtime):
            items = self.importer.source.parse_file(path, raw)
        parts_failed = isinstance(items, ParsedFile) and _report_parts(path, items, found)
        if not items and not parts_failed:
            found.notice(path, "no importable content")
        work.items = [storable(item) for item in items]
        return work, len(raw)

    async def write(self, works: list[FileWork]) -> None:
        if not works:
            return
        try:
            outcomes: list[list[str] | None] = list(await self.importer.write_files(works))
        except Exception as exc:
            self.raise_if_fatal(exc)
            outcomes = [await self.write_alone(work) for work in works]
        for file_outcomes in outcomes:
            for outcome in file_outcomes or ():
                setattr(self.summary, outcome, getattr(self.summary, outcome) + 1)

    async def write_alone(self, work: FileWork) -> list[str] | None:
        try:
            return (await self.importer.write_files([work]))[0]
        except Exception as exc:  # this file's write failed; the others are written
            self.raise_if_fatal(exc)
            self.summary.fail(work.key, _reason(exc, "could not be stored"))
            return None

    def raise_if_fatal(self, exc: Exception) -> None:
        failure = self.importer.fatal(exc)
        if failure is not None:
            raise failure from exc

    async def prune(self, roots: list[Path], seen: set[str]) -> None:
        """Remove the items of files under `roots` that are gone (neither walked now nor there).
        The candidates are the files known before the run: every file written since was walked."""
        for stored in self.known:
            path = Path(stored)
            under = any(path == r or r in path.parents for r in roots)
            if under and stored not in seen and not path.exists():
                self.summary.pruned += await self.importer.prune_file(stored)


def _reason(exc: BaseException, failed: str = "could not be read") -> str:
    text = str(exc) if isinstance(exc, ImportFileError) else why_unreadable(exc, failed)
    return shown(text)


def _report_parts(path: Path, parsed: ParsedFile, summary: ImportSummary) -> bool:
    """Report a file's failed parts (one line each; the file counts as failed once) and its
    notices; whether any part failed."""
    if parsed.failures:
        summary.files_failed += 1
    for problem in parsed.failures:
        summary.failures.append({"path": f"{shown(path)} ({problem.part})", "reason": problem.reason[:300]})
    for problem in parsed.notices:
        summary.notices.append({"path": f"{shown(path)} ({problem.part})", "reason": problem.reason[:300]})
    return bool(parsed.failures)
