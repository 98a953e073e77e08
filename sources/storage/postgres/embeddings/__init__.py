"""The vectors of the PostgreSQL item store: the pgvector or exact vector statements (vectors),
and the switch to exact vectors when pgvector crashes the server (vector_mode)."""
