"""The approximate dense index of a large source: store (the usearch file beside the source's
database, synced from its SQLite vectors), synced (the index searches use while the next sync
runs in a thread), hits (one query's nearest items)."""
