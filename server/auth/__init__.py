"""Authentication and its limits: JWTs and API keys verified per request, the key store, rate limits."""
