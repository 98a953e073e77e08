"""Arguments for a tool, made from its `inputSchema`: mostly well-formed, often hostile.

`arguments(schema, rng)` walks the JSON Schema (`$ref` into `$defs`, `anyOf`, enums, bounds) and
builds one argument object; with some probability each value is replaced by a hostile one (a
wrong type, null, a huge or control-laden string, deep nesting (as deep as the SDK client will
serialize; deeper is `malformed.py`'s), a boolean for an integer, a negative or huge number),
a required key is dropped, or an unknown key is added. Pure: the same
seed gives the same arguments, so a finding can be replayed.
"""

from __future__ import annotations

import random
from typing import Any

HUGE_TEXT = 200_000
CONTROLS = "\u0000\u0007\u001b[31m\u202e\u200b\ufeff\ud7ff\U0010ffff\r\n\t"


def nested(levels: int) -> Any:
    value: Any = "deep"
    for n in range(levels):
        value = {"a": value} if n % 2 else [value]
    return value


def hostile(rng: random.Random) -> Any:
    """One value no schema accepts as is (or that stresses what it does accept)."""
    choices: list[Any] = [
        None,
        True,
        False,
        -1,
        -(2**63),
        2**64,
        10**400,
        1e308,
        float("nan"),  # sent as NaN: not JSON, but Python's json writes it
        "",
        "x" * HUGE_TEXT,
        CONTROLS * 50,
        "\ufdfa" * 3000,
        "../../../../etc/passwd",
        "CON",
        "nul.txt",
        "ends in a dot.",
        "\u202eevil",
        "zero\u200bwidth",
        "\U0001f600" * 80,
        "é" * 200,
        "a/" * 40,
        "notes://../../x",
        "' OR 1=1 --",
        '"unbalanced AND (',
        "*",
        [],
        [None, 1, "a"],
        {},
        {"$ref": "#"},
        nested(60),
        nested(120),
        ["x"] * 5000,
    ]
    return rng.choice(choices)


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return resolve(dict(target), root)
    return schema


def well_formed(schema: dict[str, Any], root: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value the schema accepts (as far as types, enums and bounds say)."""
    schema = resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return well_formed(rng.choice(schema[key]), root, rng, depth)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 50)))
    if kind == "number":
        return rng.uniform(float(schema.get("minimum", 0)), float(schema.get("maximum", 10)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items", {})
        return [well_formed(items, root, rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "object":
        return an_object(schema, root, rng, depth + 1, hostility=0.0)
    words = ["sleep", "protein", "cell", "notes://1", "a b", "cancer*", '"gene expression"']
    return rng.choice(words)[: int(schema.get("maxLength", 100))]


def an_object(
    schema: dict[str, Any], root: dict[str, Any], rng: random.Random, depth: int, hostility: float
) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    result: dict[str, Any] = {}
    for name, sub in properties.items():
        if name not in required and rng.random() < 0.5:
            continue
        if rng.random() < hostility:
            result[name] = hostile(rng)
        elif depth < 4:
            result[name] = well_formed(sub, root, rng, depth)
    if hostility and required and rng.random() < hostility / 3:
        result.pop(rng.choice(sorted(required)), None)
    if hostility and rng.random() < hostility / 3:
        result[rng.choice(["unknown", "__proto__", "user_id", "x" * 300])] = hostile(rng)
    return result


def arguments(schema: dict[str, Any], rng: random.Random, hostility: float) -> dict[str, Any]:
    """One argument object for a tool with this `inputSchema`; `hostility`: the chance that
    any one value is hostile (0: well-formed only)."""
    return an_object(schema, schema, rng, 0, hostility)
