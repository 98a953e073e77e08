"""The `knowledge-mcp` command line; `main` is the console script's entry point."""

import gc

# Loading the command line (and, through it, pydantic, the sources' classes, asyncio) makes
# objects that live as long as the process: the cyclic garbage collector would walk them over and
# over meanwhile and find nothing to free. It waits, and then leaves them out of its walks.
gc.disable()
try:
    from .dispatch import main
finally:
    gc.freeze()
    gc.enable()

__all__ = ["main"]
