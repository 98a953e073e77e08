"""The PostgreSQL item store's tables (component `items`), partitioned by user.

The five sources share one set of tables with a `source` column (a source's rows are its
SQLite database's rows): a new source needs no DDL, and one user's data of every source sits
in the same partitions. Every table but `pg_corpus_stats` is `PARTITION BY LIST (user_id)`:
a user's partition is created on their first write (`ensure_user`), so a search reads only
that user's rows (a shared table filtered by user was several times slower:
`docs/performance.md`, "PostgreSQL").

- `pg_items`, `pg_chunks`: as SQLite's `<p>_items` / `<p>_chunks` (ids from one sequence).
- `pg_posting_blocks` (migration 4; `pg_postings` before): a term's postings (FTS5's tokens,
  `tokens.py`) in blocks of up to BLOCK chunks (`postings/blocks.py`), found by the `(source, lexeme,
  block)` btree. It has no user_id: the searches read a user's postings partition by its name
  (`on_postings`), whose own policy compares the transaction's user with the partition's once
  per statement (`POSTINGS_POLICY_SQL`), not a filter on every row.
- `pg_term_docs`: how many chunks of a user's source hold each term (bm25's df).
- `pg_corpus_stats`: a user's source's chunk count and token count (bm25's N and avgdl), and
  its generation (migration 5), moved by every write transaction.
- `pg_files`: each imported file's hash (the content-hash skip and `--prune`).
- `pg_chunk_vectors`: the chunks' dense vectors (`vectors.py`; pgvector where available).

The statistics are written in the same transaction as the item (`writing.py`). Row-level
security, FORCEd even for the tables' owner, is a second line of defence beside the user id
every statement binds: a row is visible only while `knowledge.user_id` (set per transaction
by `as_user`) names its user; each partition has the same policy, as a query naming a
partition directly does not pass through its parent's. A superuser bypasses it: the server
should log in as a plain role.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..db import validate_user_id
from .migrations import PgMigration
from .pool import SET_USER_SQL
from .postings.positions import LIMIT
from .tokens import TITLE_BASE

COMPONENT = "items"
PARTITIONED = ("pg_items", "pg_chunks", "pg_posting_blocks", "pg_term_docs", "pg_files", "pg_chunk_vectors")
"""The tables each user has a partition of (made by `ensure_user`)."""
SECURED_V2 = ("pg_items", "pg_chunks", "pg_postings", "pg_term_docs", "pg_files", "pg_corpus_stats")
BLOCK = 128
"""Chunks per posting block at most (`postings/blocks.py`): a full block's arrays (~5 KB) are compressed;
appending to a term's last block rewrites it, so a larger block costs every write more."""
DIM = 384
"""The dense vectors' size: the bundled MiniLM's."""

TABLES_V1 = """
CREATE SEQUENCE pg_item_ids;
CREATE SEQUENCE pg_chunk_ids;
CREATE TABLE pg_items (
    user_id text NOT NULL,
    source text NOT NULL,
    id bigint NOT NULL DEFAULT nextval('pg_item_ids'),
    item_id text NOT NULL,
    origin text NOT NULL,
    source_path text NOT NULL,
    title text NOT NULL,
    content text NOT NULL,
    content_hash text NOT NULL,
    created_at text NOT NULL,
    last_modified text NOT NULL,
    version integer NOT NULL DEFAULT 1,
    tags jsonb NOT NULL DEFAULT '[]',
    meta jsonb NOT NULL DEFAULT '{}',
    imported_at text NOT NULL,
    PRIMARY KEY (user_id, id),
    UNIQUE (user_id, source, origin),
    UNIQUE (user_id, source, item_id)
) PARTITION BY LIST (user_id);
CREATE INDEX pg_items_path ON pg_items (source, source_path);
CREATE TABLE pg_chunks (
    user_id text NOT NULL,
    source text NOT NULL,
    id bigint NOT NULL DEFAULT nextval('pg_chunk_ids'),
    item bigint NOT NULL,
    chunk_index integer NOT NULL,
    chunk_uuid text NOT NULL,
    field text,
    start_offset integer NOT NULL,
    end_offset integer NOT NULL,
    title text NOT NULL,
    body text NOT NULL,
    meta jsonb NOT NULL DEFAULT '{}',
    tokens integer NOT NULL,
    PRIMARY KEY (user_id, id),
    UNIQUE (user_id, item, chunk_index)
) PARTITION BY LIST (user_id);
CREATE TABLE pg_postings (
    user_id text NOT NULL,
    source text NOT NULL,
    lexeme text COLLATE "C" NOT NULL,
    chunk bigint NOT NULL,
    item bigint NOT NULL,
    tf_title integer NOT NULL,
    tf_body integer NOT NULL,
    dl integer NOT NULL,
    positions text NOT NULL
) PARTITION BY LIST (user_id);
CREATE INDEX pg_postings_term ON pg_postings (source, lexeme, chunk)
    INCLUDE (item, tf_title, tf_body, dl);
CREATE INDEX pg_postings_item ON pg_postings (item);
CREATE TABLE pg_term_docs (
    user_id text NOT NULL,
    source text NOT NULL,
    lexeme text COLLATE "C" NOT NULL,
    docs bigint NOT NULL,
    PRIMARY KEY (user_id, source, lexeme)
) PARTITION BY LIST (user_id);
CREATE TABLE pg_corpus_stats (
    user_id text NOT NULL,
    source text NOT NULL,
    chunks bigint NOT NULL DEFAULT 0,
    tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, source)
);
CREATE TABLE pg_files (
    user_id text NOT NULL,
    source text NOT NULL,
    path text NOT NULL,
    file_hash text NOT NULL,
    item_count integer NOT NULL,
    imported_at text NOT NULL,
    size bigint,
    mtime_ns bigint,
    PRIMARY KEY (user_id, source, path)
) PARTITION BY LIST (user_id);
"""

POSTINGS_POLICY_SQL = """
ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {t} FORCE ROW LEVEL SECURITY;
CREATE POLICY {t}_own ON {t}
    USING (current_setting('knowledge.user_id', true) = {user})
    WITH CHECK (current_setting('knowledge.user_id', true) = {user});
"""
"""A user's postings partition's policy: every row of it is that user's (the partition's
bound), so the policy compares the transaction's user with theirs once per statement (a
one-time filter, no column read) and the postings index needs no user column."""
POLICY_SQL = """
ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {t} FORCE ROW LEVEL SECURITY;
CREATE POLICY {t}_own ON {t}
    USING (user_id = current_setting('knowledge.user_id', true))
    WITH CHECK (user_id = current_setting('knowledge.user_id', true));
"""

NO_PGVECTOR = (
    "pgvector is installed but this role may not create it: vectors are ranked exactly (no HNSW "
    "index). To use it, as an admin run CREATE EXTENSION vector; in this database before the "
    "first start of the server"
)
"""The migration's warning (logged by `migrations.migrate`) when CREATE EXTENSION is refused."""

VECTORS_V3 = f"""
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')
            AND NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        BEGIN
            CREATE EXTENSION vector;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE WARNING '{NO_PGVECTOR}';
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        CREATE TABLE pg_chunk_vectors (
            user_id text NOT NULL, source text NOT NULL, chunk bigint NOT NULL, item bigint NOT NULL,
            window_index integer NOT NULL, embedding vector({DIM}) NOT NULL,
            PRIMARY KEY (user_id, chunk, window_index)
        ) PARTITION BY LIST (user_id);
        CREATE INDEX pg_chunk_vectors_hnsw ON pg_chunk_vectors USING hnsw (embedding vector_cosine_ops);
    ELSE
        CREATE TABLE pg_chunk_vectors (
            user_id text NOT NULL, source text NOT NULL, chunk bigint NOT NULL, item bigint NOT NULL,
            window_index integer NOT NULL, embedding real[] NOT NULL,
            PRIMARY KEY (user_id, chunk, window_index)
        ) PARTITION BY LIST (user_id);
    END IF;
END $$;
CREATE INDEX pg_chunk_vectors_source ON pg_chunk_vectors (source, item);
{POLICY_SQL.format(t="pg_chunk_vectors")}
"""
"""Dense vectors (`vectors.py`): pgvector's `vector` under HNSW where the extension is
created (here, if this role may: a superuser's, as pgvector is not a trusted extension), else
`real[]` (searched exactly), with one warning (`NO_PGVECTOR`) when only the privilege was
missing."""

BLOCKS_V4 = f"""
CREATE TABLE pg_posting_blocks (
    user_id text NOT NULL,
    source text NOT NULL,
    lexeme text COLLATE "C" NOT NULL,
    block integer NOT NULL,
    n integer NOT NULL,
    first_chunk bigint,
    last_chunk bigint,
    chunks bigint[],
    items bigint[],
    tf_titles integer[],
    tf_bodies integer[],
    dls integer[],
    positions text[]
) PARTITION BY LIST (user_id);
CREATE INDEX pg_posting_blocks_term ON pg_posting_blocks (source, lexeme, block);
{POLICY_SQL.format(t="pg_posting_blocks")}
DO $$
DECLARE
    bound text;
    uid text;
    part text;
BEGIN
    FOR bound IN SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i
            JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pg_postings'::regclass LOOP
        uid := replace(substring(bound FROM $re$IN [(]'(.*)'[)]$re$), $q$''$q$, $q$'$q$);
        part := 'pg_posting_blocks_u' || left(encode(sha256(convert_to(uid, 'UTF8')), 'hex'), 20);
        EXECUTE format('CREATE TABLE %I (LIKE pg_posting_blocks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
            part);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', part);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', part);
        EXECUTE format($f$CREATE POLICY %I ON %I
            USING (current_setting('knowledge.user_id', true) = %L)
            WITH CHECK (current_setting('knowledge.user_id', true) = %L)$f$, part || '_own', part, uid, uid);
        EXECUTE format('ALTER TABLE pg_posting_blocks ATTACH PARTITION %I FOR VALUES IN (%L)', part, uid);
        PERFORM set_config('knowledge.user_id', uid, true);
        INSERT INTO pg_posting_blocks (user_id, source, lexeme, block, n, first_chunk, last_chunk,
                chunks, items, tf_titles, tf_bodies, dls, positions)
            SELECT uid, p.source, p.lexeme, p.block, count(*), min(p.chunk), max(p.chunk),
                array_agg(p.chunk ORDER BY p.chunk), array_agg(p.item ORDER BY p.chunk),
                array_agg(p.tf_title ORDER BY p.chunk), array_agg(p.tf_body ORDER BY p.chunk),
                array_agg(p.dl ORDER BY p.chunk), array_agg(btrim(p.positions, '{{}}') ORDER BY p.chunk)
            FROM (SELECT *, ((row_number() OVER (PARTITION BY source, lexeme ORDER BY chunk) - 1)
                    / {BLOCK})::int AS block FROM pg_postings WHERE user_id = uid) AS p
            GROUP BY p.source, p.lexeme, p.block;
    END LOOP;
    PERFORM set_config('knowledge.user_id', '', true);
END $$;
DROP TABLE pg_postings;
"""
"""Postings in blocks (`postings/blocks.py`): each user's `pg_postings` rows (users from its partitions'
bounds, read as that user) rebuilt as blocks, then `pg_postings` dropped."""

GENERATION_V5 = "ALTER TABLE pg_corpus_stats ADD COLUMN generation bigint NOT NULL DEFAULT 0"
"""A version of each user's source that every write transaction moves (`writing.LOCK_STATS_SQL`):
the in-memory copy of a small source's index (`store/memory.py`) is used only at its own."""

PLACES_V6 = f"""
ALTER TABLE pg_posting_blocks ADD COLUMN places bytea;
ALTER TABLE pg_posting_blocks ALTER COLUMN places SET STORAGE EXTERNAL;
DO $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i
            JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pg_posting_blocks'::regclass LOOP
        PERFORM set_config('knowledge.user_id',
            replace(substring(part.bound FROM $re$IN [(]'(.*)'[)]$re$), $q$''$q$, $q$'$q$), true);
        EXECUTE format($u$UPDATE %I AS b SET places = (
            SELECT CASE WHEN max(q.p) >= {LIMIT}
                THEN '\\x04'::bytea || string_agg(int4send(q.p), ''::bytea ORDER BY q.o, q.k)
                ELSE coalesce(string_agg(substring(int4send(q.p) FROM 3 FOR 2), ''::bytea
                    ORDER BY q.o, q.k), '') END
            FROM (SELECT a.o, c.k, CASE WHEN c.s < 0 THEN c.s - ({TITLE_BASE}) ELSE c.s END AS p
                FROM unnest(b.positions) WITH ORDINALITY AS a(t, o),
                    unnest(string_to_array(a.t, ',')::int[]) WITH ORDINALITY AS c(s, k)) AS q)$u$, part.name);
    END LOOP;
    PERFORM set_config('knowledge.user_id', '', true);
END $$;
ALTER TABLE pg_posting_blocks DROP COLUMN positions;
"""
"""The blocks' word positions as bytes (`postings/positions.py`: big-endian 16-bit places, or
the byte 4 and 32-bit ones), not text: read without parsing. Kept out of line and uncompressed
(EXTERNAL): a phrase reads a common word's places whole, and decompressing them cost more than
reading them."""

MIGRATIONS = (
    PgMigration(1, "items, chunks, postings and bm25 statistics, by user", TABLES_V1),
    PgMigration(2, "row-level security", "".join(POLICY_SQL.format(t=t) for t in SECURED_V2)),
    PgMigration(3, "dense vectors", VECTORS_V3),
    PgMigration(4, "postings packed in blocks of chunks per term", BLOCKS_V4),
    PgMigration(5, "a generation of each source, moved by every write", GENERATION_V5),
    PgMigration(6, "word positions as bytes", PLACES_V6),
)

PARTITION_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('knowledge_partition'), hashtext(%s))"
HAS_PARTITION_SQL = "SELECT to_regclass(%s) IS NOT NULL AS found"
CREATE_PARTITION_SQL = (
    "CREATE TABLE {part} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)"
)
ATTACH_PARTITION_SQL = "ALTER TABLE {table} ATTACH PARTITION {part} FOR VALUES IN ({user})"
"""A partition is made apart and attached: ATTACH locks the parent SHARE UPDATE EXCLUSIVE, so
other users' reads and writes go on, where CREATE TABLE … PARTITION OF locks it exclusively
(waiting for, and stopping, every query of every user). The parent's indexes are built on the
new (empty) table as it is attached."""


def partition_name(table: str, user_id: str) -> str:
    """The partition of `table` holding `user_id`'s rows: a digest, so any valid user id (dots,
    @) makes a plain identifier."""
    return f"{table}_u{hashlib.sha256(user_id.encode()).hexdigest()[:20]}"


def on_postings(sql: str, user_id: str) -> str:
    """`sql` reading `user_id`'s postings partition where it says `{postings}`: the postings are
    read by their partition's name, whose index has no user column (`TABLES_V1`)."""
    return sql.replace("{postings}", partition_name("pg_posting_blocks", user_id))


async def has_postings(conn: Any, user_id: str) -> bool:
    """Whether `user_id` has a postings partition (made on their first write)."""
    row = await (
        await conn.execute(HAS_PARTITION_SQL, (partition_name("pg_posting_blocks", user_id),))
    ).fetchone()
    return bool(row[0])


async def as_user(conn: Any, user_id: str) -> None:
    """Make `user_id`'s rows visible (and writable) for the rest of `conn`'s transaction."""
    await conn.execute(SET_USER_SQL, (user_id,))


async def ensure_user(db: Any, user_id: str) -> None:
    """Create `user_id`'s partitions if they are missing: idempotent, and safe when several
    workers write a new user's first item at once (an advisory lock per user)."""
    known: set[str] = db.caches.setdefault("pg_partitions", set())
    user_id = validate_user_id(user_id)
    if user_id in known:
        return
    async with db.transaction() as conn:
        await conn.execute(PARTITION_LOCK_SQL, (user_id,))
        for table in PARTITIONED:
            part = partition_name(table, user_id)
            row = await (await conn.execute(HAS_PARTITION_SQL, (part,))).fetchone()
            if not row[0]:
                literal = "'" + user_id.replace("'", "''") + "'"
                await conn.execute(CREATE_PARTITION_SQL.format(part=part, table=table))
                # a partition read by its own name skips the parent's policy: it has its own
                policy = POSTINGS_POLICY_SQL if table == "pg_posting_blocks" else POLICY_SQL
                await conn.execute(policy.format(t=part, user=literal))
                await conn.execute(ATTACH_PARTITION_SQL.format(part=part, table=table, user=literal))
    known.add(user_id)


async def drop_user(db: Any, user_id: str) -> None:
    """Remove every row of `user_id` at once: their partitions are dropped (no row-by-row delete)."""
    user_id = validate_user_id(user_id)
    async with db.transaction() as conn:
        await conn.execute(PARTITION_LOCK_SQL, (user_id,))
        for table in PARTITIONED:
            await conn.execute(f"DROP TABLE IF EXISTS {partition_name(table, user_id)}")
        await as_user(conn, user_id)
        await conn.execute("DELETE FROM pg_corpus_stats WHERE user_id = %s", (user_id,))
    db.caches.get("pg_partitions", set()).discard(user_id)
