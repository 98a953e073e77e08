"""What a host reads of our tools: the tool profile, and schemas without the generator's padding.

A host sends the whole `tools/list` to its model on every turn, so each token of it is paid for
again and again. The schemas pydantic generates carry a `title` on every property, an
`anyOf [X, null]` with `default: null` for every optional argument, and docstrings keep their
source indentation. `publish_tools` removes that padding once, after every tool is registered
(validation still runs on the full argument models), and drops the tools the `tool_profile`
leaves out: `compact` keeps the cross-source tools, verify_quote and the session tools only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ListToolsResult, TextContent

ToolProfile = Literal["full", "compact"]

# The tools a compact profile keeps (by their underscore names; `tool_names = "dotted"` publishes
# knowledge.search for knowledge_search): every source is still
# reachable through knowledge_search's `sources` and `filters`, and knowledge_get.
COMPACT_TOOLS = frozenset(
    {
        "knowledge_search",
        "knowledge_get",
        "session_info",
        "session_cite",
        "session_set_defaults",
        "session_reset",
        "session_start",
        "session_list",
        "session_note",
        "session_export",
        "verify_quote",
        "search",
        "fetch",
    }
)
# The tools that change the user's knowledge: listed, and callable, only for callers who may
# write (`auth/refusal.write_refusal`). Not in the compact profile: it is the read path at the
# least cost, and a host that saves notes pays for two more tools on every turn.
WRITE_TOOLS = frozenset({"notes_create", "notes_update"})
# Keys of a schema object that name things rather than describe them: their values are maps
# of names to schemas, so a property called `title` is kept.
NAMED_SCHEMAS = ("properties", "$defs", "patternProperties")
NULL = {"type": "null"}


def publish_tools(mcp: MCPServer, profile: ToolProfile) -> None:
    """Apply `profile` and lean every tool's description, input and output schema in place."""
    manager = mcp._tool_manager  # the SDK has no public way to edit a registered tool
    for tool in list(manager.list_tools()):
        if profile == "compact" and tool.name.replace(".", "_", 1) not in COMPACT_TOOLS:
            mcp.remove_tool(tool.name)
            continue
        tool.description = inspect.cleandoc(tool.description or "")
        tool.parameters = lean_schema(tool.parameters)
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = inline_refs(lean_schema(tool.fn_metadata.output_schema))
            if builds_own_result(tool.fn):
                tool.fn_metadata.output_model = None  # published, not checked again (below)


def builds_own_result(fn: Callable[..., Any]) -> bool:
    """`fn` returns a `CallToolResult` it built (`tooling.tool_result`: the wire form of a
    validated response model): the SDK would validate its structured content against the output
    model once more on every call (0.2 ms of a top-100 page's serialisation, docs/performance.md),
    which a schema published without a model skips. The host's client still checks it against the
    published schema."""
    hint = get_type_hints(inspect.unwrap(fn), include_extras=True).get("return")
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint is CallToolResult


def lean_schema(schema: Any) -> Any:
    """`schema` without titles, and an optional field's `anyOf [X, null]` + `default: null` as
    just X (it is simply not required: we never send null for it); descriptions dedented. A
    required field that may be null keeps its `anyOf`. Pure: returns a new schema."""
    if isinstance(schema, list):
        return [lean_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean: dict[str, Any] = {}
    optional = "default" in schema and schema["default"] is None
    for key, value in schema.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key == "additionalProperties" and value is True:  # what JSON Schema assumes anyway
            continue
        if key in NAMED_SCHEMAS and isinstance(value, dict):
            lean[key] = {name: lean_schema(sub) for name, sub in value.items()}
        elif key == "description" and isinstance(value, str):
            lean[key] = inspect.cleandoc(value)
        else:
            lean[key] = lean_schema(value)
    options = lean.get("anyOf")
    if optional and isinstance(options, list) and NULL in options and len(options) == 2:
        (kept,) = [option for option in options if option != NULL]
        del lean["anyOf"]
        lean = {**kept, **lean}
    return lean


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema with each `$ref` to its `$defs` replaced by the definition: a client
    checks every result against it, and a reference is looked up again for every value it
    describes (a page of 100 hits: 100 lookups, most of the official client's check). Our
    output models do not nest themselves; a schema whose definitions do is returned as it is."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema

    def inlined(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [inlined(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise RecursionError(name)
            return inlined({**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}, seen | {name})
        return {key: inlined(value, seen) for key, value in node.items() if key != "$defs"}

    try:
        return dict(inlined(schema, frozenset()))
    except RecursionError:
        return schema


def is_write_tool(name: object) -> bool:
    return isinstance(name, str) and name.replace(".", "_", 1) in WRITE_TOOLS


class WriteGate:
    """Server middleware: write tools are left out of tools/list for a caller who may not
    write, and a call of one answers why not (one sentence) without running it."""

    def __init__(self, refusal: Callable[[ServerRequestContext[Any, Any]], str | None]) -> None:
        self.refusal = refusal

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and is_write_tool((ctx.params or {}).get("name")):
            reason = self.refusal(ctx)
            if reason is not None:
                return CallToolResult(content=[TextContent(type="text", text=reason)], is_error=True)
            return await call_next(ctx)
        result = await call_next(ctx)
        if ctx.method != "tools/list" or self.refusal(ctx) is None:
            return result
        if isinstance(result, ListToolsResult):
            return result.model_copy(update={"tools": [t for t in result.tools if not is_write_tool(t.name)]})
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            return {**result, "tools": [t for t in result["tools"] if not is_write_tool(t.get("name"))]}
        return result
