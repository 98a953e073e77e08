"""JSON text of what an import stores (tags, meta, the payload of an item's content hash).

`json_encoder(...)` is `json.JSONEncoder(ensure_ascii=False, ...).encode`: the same text for every
value, made by the same C encoder, which is built once instead of at every call (its building and
the Python layers around it cost more than encoding a note's small tags and meta: a folder import
encodes three values per note). A value that holds itself is refused (RecursionError) rather than
named as a circular reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _json
from typing import Any

ITEM_SEPARATOR, KEY_SEPARATOR = ", ", ": "
"""`json.dumps`'s separators (no indent): the stored text and the hashes depend on them."""


def _string(text: str) -> str:
    """A JSON string as `ensure_ascii=False` writes it: for ASCII text (but DEL, which only the
    ASCII escaper escapes) the same as the ASCII escaper's, which is about three times faster."""
    if text.isascii() and "\x7f" not in text:
        return _json.encode_basestring_ascii(text)
    return _json.encode_basestring(text)


def json_encoder(
    *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> Callable[[Any], str]:
    """`json.JSONEncoder(ensure_ascii=False, sort_keys=..., default=...).encode`."""
    make = getattr(_json, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, sort_keys=sort_keys, default=default).encode
    fallback = json.JSONEncoder(sort_keys=sort_keys).default  # raises TypeError, as json does
    encode = make(
        None,  # no table of containers being encoded (circular references: RecursionError)
        default or fallback,
        _string,
        None,  # no indent
        KEY_SEPARATOR,
        ITEM_SEPARATOR,
        sort_keys,
        False,  # skipkeys
        True,  # allow_nan
    )

    def encoded(value: Any) -> str:
        return "".join(encode(value, 0))

    return encoded
