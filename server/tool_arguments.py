"""Tool arguments a model got wrong are answered in one plain sentence it can act on.

The SDK answers a `tools/call` whose arguments fail validation with the validation library's
dump (its model name, error codes, a link to its docs) and silently ignores an argument it does
not know (`limt: 5` ran with the default limit). This middleware checks the arguments first:
an unknown name is a tool error listing the tool's arguments; a bad value is a tool error
naming the field, what was given and what is allowed. `true`/`false` where a number is expected
is a bad value too (validation would take `expected_version: true` as 1). Valid calls go on
untouched.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

GIVEN_CHARS = 40


def plain_argument_errors(mcp: MCPServer) -> Any:
    """Server middleware: unknown arguments and invalid values answer a plain tool error."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {}
        name, arguments = params.get("name"), params.get("arguments", {})
        is_call = ctx.method == "tools/call" and isinstance(name, str)
        tool = mcp._tool_manager.get_tool(str(name)) if is_call else None
        if tool is None or not isinstance(arguments, dict):
            return await call_next(ctx)  # the SDK answers an unknown tool or a malformed call
        problem = argument_problem(tool.name, tool.parameters, arguments)
        if problem is None:
            try:
                parsed = tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as exc:
                problem = value_problem(tool.parameters, exc)
            else:
                problem = boolean_problem(tool.parameters, arguments, parsed)
        if problem is None:
            return await call_next(ctx)
        return CallToolResult(content=[TextContent(type="text", text=problem)], is_error=True)

    return middleware


def argument_problem(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """A sentence about the first argument `tool` does not take, or None."""
    known = list(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return None
    return f"{tool} has no argument {unknown[0]!r}; its arguments are: {', '.join(known)}."


def value_problem(schema: dict[str, Any], error: ValidationError) -> str:
    """One sentence for the first invalid value: the field, what was given, what is allowed."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "arguments"
    if first["type"] == "missing":
        return f"{field} is required."
    given = repr(first.get("input"))
    if len(given) > GIVEN_CHARS:
        given = given[: GIVEN_CHARS - 1] + "…"
    allowed = _allowed(schema.get("properties", {}).get(str(first["loc"][0]), {})) if first["loc"] else None
    reason = str(first["msg"])
    reason = reason[:1].lower() + reason[1:]
    sentence = f"{field}: {reason} (got {given})"
    return f"{sentence}; allowed: {allowed}." if allowed and len(first["loc"]) == 1 else f"{sentence}."


def boolean_problem(schema: dict[str, Any], given: dict[str, Any], parsed: dict[str, Any]) -> str | None:
    """A sentence for the first true/false that validation turned into a number, or None."""
    for name, value in given.items():
        found = _coerced(value, parsed.get(name), name)
        if found is not None:
            field, number = found
            what = "a whole number" if isinstance(number, int) else "a number"
            sentence = f"{field}: must be {what}, not true or false"
            allowed = _allowed(schema.get("properties", {}).get(name, {})) if field == name else None
            return f"{sentence}; allowed: {allowed}." if allowed else f"{sentence}."
    return None


def _coerced(given: Any, parsed: Any, path: str) -> tuple[str, int | float] | None:
    """Where (path, number) `given` held a boolean that `parsed` holds as a number."""
    if isinstance(given, bool):
        number = isinstance(parsed, int | float) and not isinstance(parsed, bool)
        return (path, parsed) if number else None
    if isinstance(given, dict):
        for key, value in given.items():
            inner = parsed.get(key) if isinstance(parsed, dict) else getattr(parsed, str(key), None)
            found = _coerced(value, inner, f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(given, list) and isinstance(parsed, list | tuple) and len(given) == len(parsed):
        for index, (value, inner) in enumerate(zip(given, parsed, strict=True)):
            found = _coerced(value, inner, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _allowed(prop: dict[str, Any]) -> str | None:
    """What a top-level property allows, in words, when its schema says it simply."""
    options = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    if len(options) != 1:
        return None
    option = options[0]
    if "enum" in option:
        return "one of " + ", ".join(str(v) for v in option["enum"])
    kind = option.get("type")
    if kind in ("integer", "number"):
        low, high = option.get("minimum"), option.get("maximum")
        what = "a whole number" if kind == "integer" else "a number"
        if low is not None and high is not None:
            return f"{what} from {low} to {high}"
        return what
    if kind == "string":
        return "text"
    if kind == "array":
        return "a list"
    if kind == "boolean":
        return "true or false"
    return None
