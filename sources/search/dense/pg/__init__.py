"""The dense stage over the PostgreSQL item store: retriever (the dense stage and the fuser over
the store's vectors), indexing (embed what is missing into the store)."""
