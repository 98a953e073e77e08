"""The PostgreSQL item store measured: eval --database-url (evaluation) and its write cost (writes)."""
