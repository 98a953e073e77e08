"""The PostgreSQL schema of the shared state: one component (and migration list) per store.

Every table has a `user_id` column and every statement of the stores filters by it. Sessions,
their timelines and API keys are logged tables (a PostgreSQL crash must not lose a research
session's timeline or a key). Rate-limit buckets are UNLOGGED: a crash loses at most a minute of
counting (a bucket idle for a minute is full again anyway), and they are written on every call.

Row-level security is the second line of defence on the per-user tables: a policy admits only
rows whose `user_id` is the transaction's `knowledge.user_id` setting, which the stores set in
the same statement batch as the statement itself (`postgres/state.py`). It binds roles that are
neither superusers nor BYPASSRLS (run the server as such a role); the table owner is bound too
(FORCE). API keys are looked up by their hash before any user is known, so `api_keys` has no
policy: that lookup is cross-user by nature, and the CLI that manages keys is an administrator's.
Rate-limit buckets hold counters only and are purged across users, so they have none either.
"""

from __future__ import annotations

from knowledge_mcp.sources.storage.postgres.migrations import PgMigration

# The ordered set of viewed/cited URIs (and a folded seen log): the new ones moved (or added) to
# the end, in their order, the last `lim` kept (SessionState.record_results and .mark in SQL).
APPEND_FUNCTION = """
CREATE FUNCTION knowledge_append(old text[], new text[], lim integer) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(merged[greatest(cardinality(merged) - lim + 1, 1):], '{}') FROM (
        SELECT ARRAY(
            SELECT u FROM unnest(old) WITH ORDINALITY AS o(u, pos) WHERE u <> ALL(new) ORDER BY pos
        ) || ARRAY(
            SELECT u FROM unnest(new) WITH ORDINALITY AS n(u, pos) GROUP BY u ORDER BY max(pos)
        ) AS merged
    ) AS m
$$;
CREATE FUNCTION knowledge_tail(old text[], new text[], lim integer) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (old || new)[greatest(coalesce(cardinality(old || new), 0) - lim + 1, 1):]
$$;
"""


def _own_rows(table: str) -> str:
    return f"""
    ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
    ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
    CREATE POLICY {table}_own_rows ON {table}
        USING (user_id = current_setting('knowledge.user_id', true))
        WITH CHECK (user_id = current_setting('knowledge.user_id', true));
    """


SESSIONS = (
    PgMigration(
        1,
        "sessions, research sessions and their event logs, per user",
        APPEND_FUNCTION
        + """
        CREATE TABLE knowledge_sessions (
            user_id text NOT NULL,
            session_id text NOT NULL,
            seen text[] NOT NULL DEFAULT '{}',
            viewed text[] NOT NULL DEFAULT '{}',
            cited text[] NOT NULL DEFAULT '{}',
            recent_queries text[] NOT NULL DEFAULT '{}',
            defaults jsonb NOT NULL DEFAULT '{}',
            current text,
            expires_at timestamptz NOT NULL,
            PRIMARY KEY (user_id, session_id)
        );
        CREATE INDEX knowledge_sessions_expires_at ON knowledge_sessions (expires_at);
        -- up to 5000 URIs rewritten on every search: uncompressed TOAST is cheaper to rewrite
        -- (docs/performance.md, "PostgreSQL")
        ALTER TABLE knowledge_sessions ALTER COLUMN seen SET STORAGE EXTERNAL;
        CREATE TABLE knowledge_research (
            user_id text NOT NULL,
            session_id text NOT NULL,
            name text NOT NULL,
            created_at text NOT NULL,
            updated_at text NOT NULL,
            PRIMARY KEY (user_id, session_id)
        );
        CREATE INDEX knowledge_research_name ON knowledge_research (user_id, name);
        CREATE TABLE knowledge_session_events (
            id bigserial PRIMARY KEY,
            user_id text NOT NULL,
            session_id text NOT NULL,
            kind text NOT NULL,
            payload text NOT NULL,
            created_at text NOT NULL
        );
        CREATE INDEX knowledge_session_events_session ON knowledge_session_events (user_id, session_id, id);
        """
        + _own_rows("knowledge_sessions")
        + _own_rows("knowledge_research")
        + _own_rows("knowledge_session_events"),
    ),
    PgMigration(
        2,
        "sessions: the seen URIs as a log, one row per search, instead of one array rewritten by each",
        """
        CREATE TABLE knowledge_session_seen (
            user_id text NOT NULL,
            session_id text NOT NULL,
            seq bigserial,
            n integer NOT NULL,
            uris text[] NOT NULL
        );
        CREATE INDEX knowledge_session_seen_session ON knowledge_session_seen (user_id, session_id, seq);
        -- the sessions' own lists move over whoever runs the migration (the policies bind the owner)
        ALTER TABLE knowledge_sessions NO FORCE ROW LEVEL SECURITY;
        INSERT INTO knowledge_session_seen (user_id, session_id, n, uris)
            SELECT user_id, session_id, cardinality(seen), seen FROM knowledge_sessions
            WHERE cardinality(seen) > 0;
        ALTER TABLE knowledge_sessions FORCE ROW LEVEL SECURITY;
        ALTER TABLE knowledge_sessions DROP COLUMN seen;
        """
        + _own_rows("knowledge_session_seen"),
    ),
)

KEYS = (
    PgMigration(
        1,
        "api keys, hashed (looked up across users by hash: no row policy)",
        """
        CREATE TABLE api_keys (
            id bigserial PRIMARY KEY,
            key_hash text NOT NULL UNIQUE,
            prefix text NOT NULL UNIQUE,
            user_id text NOT NULL,
            created_at text NOT NULL,
            revoked boolean NOT NULL DEFAULT false,
            scopes text NOT NULL DEFAULT ''
        );
        CREATE INDEX api_keys_user ON api_keys (user_id);
        """,
    ),
)

LIMITS = (
    PgMigration(
        1,
        "rate-limit token buckets per (user, tool), unlogged",
        """
        CREATE UNLOGGED TABLE knowledge_rate_buckets (
            user_id text NOT NULL,
            tool text NOT NULL,
            tokens double precision NOT NULL,
            allowed boolean NOT NULL,
            updated_at timestamptz NOT NULL,
            PRIMARY KEY (user_id, tool)
        );
        """,
    ),
)

COMPONENTS = {"sessions": SESSIONS, "keys": KEYS, "limits": LIMITS}
