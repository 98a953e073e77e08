"""The `knowledge-mcp` command line; `main` is the console script's entry point."""

from .dispatch import main

__all__ = ["main"]
