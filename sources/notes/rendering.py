"""The text `notes_create` and `notes_update` send: where the note is, and what is like it. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the writing models name the tool host (the MCP SDK); rendering needs only fields
    from .writing.models import WriteResult


def render_write(result: WriteResult) -> str:
    lines = [f"{result.title} — {result.uri} ({result.path}, version {result.version})"]
    if result.recommendation:
        lines.append("recommendation: review_first (a near-identical note exists)")
    lines += [f"similar: {d.title} — {d.uri} ({d.similarity})" for d in result.duplicates or []]
    lines += [f"warning: {w}" for w in result.warnings or []]
    return "\n".join(lines)
