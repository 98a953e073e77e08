"""Storage: per-user SQLite databases, the shared table layout, chunking and the import runner."""
