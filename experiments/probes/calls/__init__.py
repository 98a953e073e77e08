"""Probes that call the server: tool fuzz (arguments from each schema), hostile prompts and
resources, raw malformed messages on every transport."""
