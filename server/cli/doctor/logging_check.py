"""Doctor's line on logging: the level, and a warning while the libraries may log content."""

from __future__ import annotations

from .findings import Context, Finding


async def check_logging(ctx: Context) -> list[Finding]:
    """`log_level`, and whether `log_library_debug` lets the libraries' own lines through (at
    DEBUG aiosqlite writes every SQL statement with its parameters: whole notes)."""
    if ctx.settings is None:
        return []
    level = ctx.settings.log_level
    if not ctx.settings.log_library_debug:
        return [Finding("logging", f"{level} to stderr; libraries at WARNING; no content in the log")]
    detail = f"{level} to stderr; log_library_debug is on: the libraries' lines may hold note text"
    return [Finding("logging", detail, "warn", "set log_library_debug = false once the debugging is done")]
