"""Lexical retrieval: an exact in-memory copy of a small source's FTS5 index, or FTS5 under a plan."""
