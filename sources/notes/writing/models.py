"""What the write tools answer, and what they need of the call they serve (`WritingCall`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, Field

from ...calls import Call, CallSlot

if TYPE_CHECKING:
    from .stores import NoteStore

Provider = Literal["dense", "lexical", "dense+lexical"]
REVIEW_FIRST = 0.85
"""A duplicate this similar (or more) makes the answer recommend reviewing it first."""
MENTION = 0.50
"""Duplicates at least this similar are listed (for information below `REVIEW_FIRST`)."""
TIMEOUT_WARNING = "duplicate_check_timeout"


class Duplicate(BaseModel):
    uri: str
    title: str
    similarity: float = Field(ge=0.0, le=1.0)


class DuplicateCheck(BaseModel):
    """The advisory check's verdict: the similar notes found (best first) and how it measured."""

    duplicates: list[Duplicate] = Field(default_factory=list)
    provider: Provider | None = None
    timed_out: bool = False

    @property
    def recommendation(self) -> Literal["review_first"] | None:
        return "review_first" if self.duplicates and self.duplicates[0].similarity >= REVIEW_FIRST else None


class WriteResult(BaseModel):
    """A note written: where it is and its version, and the duplicate check's verdict."""

    id: str
    uri: str
    path: str = Field(description="The file, relative to its notes folder.")
    version: int
    title: str
    duplicates: list[Duplicate] | None = None
    recommendation: Literal["review_first"] | None = None
    provider: Provider | None = None
    warnings: list[str] | None = None


@dataclass(frozen=True)
class WritePermit:
    """What the server grants a caller who may write notes."""

    home: Path
    """The user's own folder under the data dir (users/<id>)."""
    local: bool
    """The single local user (stdio): writes into `notes_dir` or the folder notes were imported
    from; other users write only under `home`."""
    notes_dir: Path | None
    duplicate_check_ms: int
    max_note_bytes: int = 1_000_000
    """A note's file may not grow past this (UTF-8 bytes, front matter included)."""
    quota_bytes: int | None = None
    """What the note files under `home` may hold together (None: no quota)."""


class WritingCall(Call, Protocol):
    """A call that may write notes: the server's calls are (`server/call.py`)."""

    def write_permit(self) -> WritePermit:
        """The caller's permit to write, or a WriteNotAllowedError saying why not."""
        ...

    async def note_store(self) -> NoteStore:
        """The caller's notes as the writer indexes them (the backend's `Items.notes`)."""
        ...

    async def items_changed(
        self,
        source: str,
        *,
        added: tuple[str, ...] = (),
        updated: tuple[str, ...] = (),
        removed: tuple[str, ...] = (),
    ) -> None:
        """Tell the caller's connected clients that these items (uris) changed."""
        ...


WRITING_CALL: CallSlot[WritingCall] = CallSlot("writing_call")
