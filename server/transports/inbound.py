"""One JSON-RPC message off the wire: read and checked, or the error that answers it.

The SDK's transports parse a line or a body with pydantic and, when that fails, drop the
message with a DEBUG line: a client whose request holds a lone surrogate, 500 levels of nesting
or a 5,000-digit number, or whose `params` is an array, waits for an answer that never comes.
Every transport reads its messages here first, so each of those gets the answer the JSON-RPC
2.0 spec gives it:

- text that is not JSON → -32700 (id null: nobody can know it);
- JSON that is not a request, notification or response (an array, no `"jsonrpc": "2.0"`, a
  `method` that is not a string, `params` that is not an object, an `id` that is neither a
  string nor an integer) → -32600, with the id when it is readable;
- a valid request whose params hold what no tool can take (a lone surrogate, which is not
  Unicode; nesting deeper than MAX_DEPTH; a number of more than MAX_DIGITS digits or beyond
  a float's range) → -32602; the same things outside `params` → -32600.

A well-formed notification is never answered (the spec forbids it), even when its params are
refused. The messages say where and what, never the value.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from loguru import logger
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

MAX_DEPTH = 64  # levels of objects/arrays in one message; a tool's arguments need a handful
NULL_ARGUMENTS = "params.arguments must be an object of the tool's arguments ({} for none), not null"
"""`tools/call` with `"arguments": null`: the SDK would run the tool and answer the validation
library's dump (its model name, a docs URL) for its missing arguments."""
MAX_DIGITS = 100  # digits of one integer; ids and tool arguments need at most 20
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')


@dataclass(frozen=True)
class Refusal:
    """A message not passed on: the error that answers it (None: a notification, unanswered)
    and what was wrong in a few words, for the log (never the message's content)."""

    answer: JSONRPCError | None
    kind: str


class _Oversized:
    """Stands in for a number that is too long or too large, so the rest still parses."""

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _int(text: str) -> Any:
    return int(text) if len(text.lstrip("-")) <= MAX_DIGITS else _Oversized(text)


def _float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _Oversized(text)


def _constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _error(request_id: RequestId | None, code: int, text: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text))


def read_message(raw: str | bytes) -> JSONRPCMessage | Refusal:
    """The message in `raw` (one line, frame or body), or the Refusal that answers it."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        request_id = _top_level_id(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        text = f"Invalid Request: the message is nested more than {MAX_DEPTH} levels deep"
        return Refusal(_error(request_id, INVALID_REQUEST, text), "nesting")
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return Refusal(_error(None, PARSE_ERROR, "Parse error: the message is not valid JSON"), "parse error")
    return _check(data)


def _check(data: Any) -> JSONRPCMessage | Refusal:
    if not isinstance(data, dict):
        text = "Invalid Request: a message must be one JSON object (batches are not supported)"
        return Refusal(_error(None, INVALID_REQUEST, text), "invalid request")
    request_id = _readable_id(data.get("id"))
    notification = "id" not in data and isinstance(data.get("method"), str) and data.get("jsonrpc") == "2.0"

    def refuse(code: int, text: str, kind: str) -> Refusal:
        return Refusal(None if notification else _error(request_id, code, text), kind)

    shape = _shape_problem(data)
    if shape is not None:
        return refuse(INVALID_REQUEST, shape, "invalid request")
    params = data.get("params", {})
    if data.get("method") == "tools/call" and "arguments" in params and params["arguments"] is None:
        return refuse(INVALID_PARAMS, f"Invalid params: {NULL_ARGUMENTS}", "null arguments")
    problem = _value_problem(data)
    if problem is not None:
        path, what, kind = problem
        if path[:1] == ("params",):
            return refuse(INVALID_PARAMS, f"Invalid params: {_where(path)} {what}", kind)
        return refuse(INVALID_REQUEST, f"Invalid Request: {_where(path)} {what}", kind)
    try:
        return jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        text = "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
        return refuse(INVALID_REQUEST, text, "invalid request")


def _readable_id(value: Any) -> RequestId | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    if isinstance(value, str) and not _is_unicode(value):
        return None
    return value


def _shape_problem(data: dict[str, Any]) -> str | None:
    """What makes `data` no JSON-RPC message at all, in one sentence (None: the shape is right)."""
    if data.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    if "id" in data and _readable_id(data["id"]) is None:
        return 'Invalid Request: "id" must be a string or an integer'
    if "method" in data:
        if not isinstance(data["method"], str):
            return 'Invalid Request: "method" must be a string'
        if "params" in data and not isinstance(data["params"], dict):
            return 'Invalid Request: "params" must be an object'
    elif "result" not in data and "error" not in data:
        return 'Invalid Request: a message needs a "method" (or a "result" or "error" answering a request)'
    return None


def _value_problem(data: dict[str, Any]) -> tuple[tuple[str, ...], str, str] | None:
    """The first value no handler can take: (its path, what is wrong, kind), walking without recursion."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return path, f"is nested more than {MAX_DEPTH} levels deep", "nesting"
        if isinstance(value, str):
            if not _is_unicode(value):
                return path, "holds a lone surrogate, which is not Unicode text", "lone surrogate"
        elif isinstance(value, _Oversized):
            return path, _too_large(value), "oversized number"
        elif isinstance(value, dict):
            for key, item in value.items():
                if not _is_unicode(key):
                    return (
                        path,
                        "has a key holding a lone surrogate, which is not Unicode text",
                        "lone surrogate",
                    )
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, f"[{index}]")) for index, item in enumerate(value))
    return None


def _too_large(value: _Oversized) -> str:
    if value.digits > MAX_DIGITS:
        return f"is a number of {value.digits} digits; numbers may have at most {MAX_DIGITS}"
    return "is a number beyond the range of a 64-bit float"


def _is_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _where(path: tuple[str, ...]) -> str:
    """`params.arguments.query`: the first few keys only (never a value), each cut short."""
    shown = [part if len(part) <= 40 else part[:40] + "…" for part in path[:6]]
    dotted = ".".join(shown).replace(".[", "[")
    return (dotted + ".…" if len(path) > 6 else dotted) or "the message"


def _top_level_id(text: str) -> RequestId | None:
    """The `id` of a message too deep to parse, read off its tokens at the top level (or None)."""
    depth, last_key = 0, None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == "{" or token == "[":
            depth += 1
        elif token == "}" or token == "]":
            depth -= 1
        elif token == ":" and depth == 1 and last_key == '"id"':
            return _scalar_after(text, match.end())
        elif token.startswith('"'):
            last_key = token
    return None


def _scalar_after(text: str, start: int) -> RequestId | None:
    found = re.match(r'\s*(-?\d{1,20}|"(?:[^"\\]|\\.){0,200}")\s*[,}]', text[start : start + 256])
    if found is None:
        return None
    try:
        return _readable_id(json.loads(found.group(1)))
    except ValueError:
        return None


def log_refusal(refusal: Refusal, transport: str) -> None:
    """One INFO line for a refused message: the code and the kind, never the content."""
    answer = refusal.answer
    if answer is None:
        logger.info("{} notification refused ({}), not answered", transport, refusal.kind)
    else:
        logger.info(
            "{} message refused rpc={} code={} ({})", transport, answer.id, answer.error.code, refusal.kind
        )
