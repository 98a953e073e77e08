"""The PostgreSQL backend (`database_url`): sessions, API keys, rate limits and, with
`item_store = "postgresql"`, the items, in one database for all workers (`backend.py`; chosen
by `server/backend`)."""
