"""`{{var}}` placeholders of a prompt: its arguments, their defaults, and rendering. Pure.

A placeholder is a name in double braces (`{{topic}}`, `{{ topic }}`); names are letters,
digits, `_`, `.` and `-`, starting with a letter or `_`. SillyTavern's macros with arguments
(`{{random::a,b}}`) are not names and stay as they are.

A prompt file may declare its arguments under `arguments` (also `variables`, `inputs`, `args`):

- a table of name → default (`arguments: {tone: friendly}`),
- a table of name → `{description, default, required}`,
- a list of names, or of `{name, description, default, required}`.

An argument is required unless the file gives it a default (or says `required: false`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
DECLARED_KEYS = ("arguments", "variables", "inputs", "args")
DESCRIPTION_LIMIT = 200


@dataclass(frozen=True)
class Argument:
    name: str
    description: str | None = None
    default: str | None = None
    required: bool = True


def placeholders(texts: Iterable[str]) -> list[str]:
    """The placeholder names of `texts`, in order of first appearance, each once."""
    names: dict[str, None] = {}
    for text in texts:
        for match in PLACEHOLDER.finditer(text):
            names.setdefault(match.group(1), None)
    return list(names)


def render(text: str, values: Mapping[str, str]) -> str:
    """`text` with each placeholder named in `values` replaced by its value (others kept)."""

    def value(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return PLACEHOLDER.sub(value, text)


def rendered_length(text: str, values: Mapping[str, str]) -> int:
    """The length `render(text, values)` would have, found without rendering it (a value said
    in many placeholders is counted, not copied)."""
    length = len(text)
    for match in PLACEHOLDER.finditer(text):
        value = values.get(match.group(1))
        if value is not None:
            length += len(value) - len(match.group(0))
    return length


def declared(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The arguments a prompt object declares (see the module docstring), as plain JSON:
    name → {description?, default?, required?}; {} when it declares none or in another shape."""
    raw = next((obj[k] for k in DECLARED_KEYS if obj.get(k) is not None), None)
    if isinstance(raw, Mapping):
        entries = [(str(name), spec) for name, spec in raw.items()]
    elif isinstance(raw, list):
        entries = [_entry(spec) for spec in raw]
    else:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, spec in entries:
        if name and PLACEHOLDER.fullmatch("{{" + name + "}}"):
            out[name] = _spec(spec)
    return out


def _entry(spec: Any) -> tuple[str, Any]:
    if isinstance(spec, Mapping):
        return str(spec.get("name") or ""), spec
    return (str(spec), None) if isinstance(spec, str | int) else ("", None)


def _spec(spec: Any) -> dict[str, Any]:
    """One declared argument: a bare value is its default; a table gives the fields."""
    if not isinstance(spec, Mapping):
        return {} if spec is None else {"default": _text(spec)}
    out: dict[str, Any] = {}
    if spec.get("description") is not None:
        out["description"] = _text(spec["description"])[:DESCRIPTION_LIMIT]
    if spec.get("default") is not None:
        out["default"] = _text(spec["default"])
    if isinstance(spec.get("required"), bool):
        out["required"] = spec["required"]
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def arguments(names: Iterable[str], specs: Mapping[str, Mapping[str, Any]]) -> list[Argument]:
    """An argument for each placeholder name, described and defaulted by the declared `specs`;
    required unless it has a default or is declared `required: false`."""
    out = []
    for name in names:
        spec = specs.get(name, {})
        default = spec.get("default")
        required = bool(spec.get("required", default is None))
        out.append(Argument(name, spec.get("description"), default, required and default is None))
    return out


def missing(args: Iterable[Argument], given: Mapping[str, str]) -> list[str]:
    """The required arguments `given` lacks (an empty value counts as given)."""
    return [a.name for a in args if a.required and a.name not in given]


def values_for(args: Iterable[Argument], given: Mapping[str, str]) -> dict[str, str]:
    """The value of each argument: the one given, else its default (an optional argument
    without one renders empty)."""
    return {a.name: given.get(a.name, a.default or "") for a in args}
