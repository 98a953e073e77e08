"""The bm25 postings of the PostgreSQL item store, packed in blocks per term (`blocks.py`)."""
