"""Shared state in PostgreSQL (`database_url`): sessions, API keys and rate limits, one for all
workers."""
