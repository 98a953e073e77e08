"""Protocol errors with the code the spec gives them (DESIGN §10).

The SDK answers a `prompts/get` for a prompt that does not exist with error code 0 and logs the
request, parameters included, with a traceback at ERROR. A name the client sent that names
nothing, or a prompt called without an argument it needs, is invalid params (-32602): the
prompts handler (`resources/prompts.py`) raises these, each one plain sentence, and the request
log line records it like any other protocol error.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

NAMES_SHOWN = 20


def unknown_prompt(name: object, known: Sequence[str]) -> MCPError:
    """-32602 for a prompt name the caller has no prompt of, naming (some of) those it has."""
    if not known:
        allowed = "none: this server has no prompts for you (import some: knowledge-mcp import prompts DIR)"
    else:
        allowed = ", ".join(known[:NAMES_SHOWN]) + (", …" if len(known) > NAMES_SHOWN else "")
    return MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; the prompts are: {allowed}")


def missing_arguments(name: str, missing: Sequence[str]) -> MCPError:
    """-32602 for a prompt called without arguments it requires, naming them."""
    listed = ", ".join(repr(m) for m in missing)
    noun, it = ("argument", "it") if len(missing) == 1 else ("arguments", "them")
    return MCPError(INVALID_PARAMS, f"prompt {name!r} needs the {noun} {listed}; pass {it} in arguments")


def unknown_resource(uri: str, hint: str) -> MCPError:
    """-32602 for a resource uri that names nothing the caller has."""
    return MCPError(INVALID_PARAMS, f"no resource {uri!r}; {hint}", data={"uri": uri})
