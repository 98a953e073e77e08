"""The PostgreSQL item store as the search and get tools read it (item_store = postgresql)."""
