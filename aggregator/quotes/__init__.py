"""Quotes checked against the items they claim to come from: `verify_quote` and its bounded work."""
