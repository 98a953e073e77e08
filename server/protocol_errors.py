"""Protocol errors with the code the spec gives them (DESIGN §10).

The SDK answers a `prompts/get` for a prompt that does not exist with error code 0 and logs the
request, parameters included, with a traceback at ERROR. A name the client sent that names
nothing, or a prompt called without an argument it needs, is invalid params (-32602): the
prompts handler (`resources/prompts.py`) raises these, each one plain sentence, and the request
log line records it like any other protocol error.

Any other exception escaping a handler, the SDK answers with error code 0 and its text (`tools/call`
with `"name": ["x"]` answered `unhashable type: 'list'`). `protocol_guard` answers those: a
`tools/call` whose name is not text is invalid params; anything else unexpected is internal error
(-32603) with a fixed sentence, logged once with its code locations only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loguru import logger
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import ValidationError

from knowledge_mcp.sources.errors import InvalidArgumentError, KnowledgeError, NotFoundError

INTERNAL = "Internal error: the server could not answer this request (its log says where it failed)"


async def protocol_guard(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: every request gets a JSON-RPC error with the spec's code, never code 0."""
    if ctx.method == "tools/call":
        problem = call_shape_problem(ctx.params or {})
        if problem is not None:
            raise MCPError(INVALID_PARAMS, problem)
    try:
        return await call_next(ctx)
    except (MCPError, ValidationError):  # the SDK gives these their codes (-32602 for the latter)
        raise
    except KnowledgeError as exc:  # a sentence written for the client, escaping outside a tool
        raise protocol_error(exc) from None
    except Exception as exc:
        logger.opt(exception=exc).error("{} failed unexpectedly", _method(ctx.method))
        raise MCPError(INTERNAL_ERROR, INTERNAL) from None


def call_shape_problem(params: Mapping[str, Any]) -> str | None:
    """What makes a `tools/call` unreadable before any tool is looked up, in one sentence."""
    name = params.get("name")
    if "name" in params and not isinstance(name, str):
        return "Invalid params: params.name must be text, the name of a tool (tools/list gives them)"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return "Invalid params: params.arguments must be an object of named arguments"
    return None


def protocol_error(error: KnowledgeError) -> MCPError:
    """A KnowledgeError as a protocol error with its sentence: -32602 for what the caller can fix
    (a field it got wrong, an id that names nothing), else -32603 (a damaged database…)."""
    code = INVALID_PARAMS if isinstance(error, InvalidArgumentError | NotFoundError) else INTERNAL_ERROR
    return MCPError(code, str(error))


def _method(method: object) -> str:
    return method if isinstance(method, str) and method.isascii() and len(method) <= 64 else "request"


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
