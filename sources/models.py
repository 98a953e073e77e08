"""The result models every source returns (DESIGN §5).

`ResultItem` is the shared shape; each source subclasses it with its type-aware fields.
Fields that do not apply are left as None and dropped from the wire (`dump`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

if TYPE_CHECKING:
    from .search.describe.details import Details

SourceName = str
"""A registered source's name (`registry.SOURCE_NAMES`); a tool argument takes
`registry.SourceChoice`, which publishes the registered names as an enum."""
ScoreType = Literal["fts", "hybrid", "dense", "rerank"]
OrderBy = Literal["relevance", "recent"]
RetrievalMode = Literal["snippet", "chunk", "chunk_with_siblings", "full", "auto"]


class Loc(BaseModel):
    """Where in an item a hit is: pass it back to the matching get tool to read around it."""

    model_config = ConfigDict(extra="ignore")

    chunk_index: int | None = Field(default=None, ge=0, description="Ordinal of the chunk in the item.")
    chunk_uuid: str | None = Field(default=None, description="Stable id of the chunk.")
    approx_offset: int | None = Field(default=None, ge=0, description="Character offset in the item.")
    media_id: str | None = None
    conversation_id: str | None = None
    message_id: str | None = None
    message_index: int | None = Field(default=None, ge=0)
    field: str | None = Field(default=None, description="Field of a prompt or character card.")


class ResultItem(BaseModel):
    """One search hit: enough to decide whether to read the item, and where."""

    id: str
    source: SourceName = Field(description="The source's name, the scheme of `uri`.")
    uri: str = Field(description="<source>://<id> (notes://<id>, chats://<id>…), for the get tools.")
    title: str
    snippet: str = Field(description="Plain text around the first match.")
    score: float = Field(ge=0.0, le=1.0, description="0..1, higher is better; comparable across sources.")
    score_type: ScoreType = "fts"
    rank: int = Field(ge=1, description="1-based position in the whole result list.")
    matched_terms: list[str] = Field(default_factory=list)
    match_count: int = Field(default=1, ge=0, description="How many chunks of the item matched.")
    created_at: str
    last_modified: str
    version: int = 1
    tags: list[str] = Field(default_factory=list)
    loc: Loc | None = None
    thread_hits: int | None = Field(
        default=None, description="More hits of the same e-mail thread, folded into this one."
    )
    duplicates: list[str] | None = Field(default=None, description="URIs of items with the same content.")
    content: str | None = Field(default=None, description="The hit chunk's full text (fields: content).")
    reason: str | None = Field(default=None, description="Why it matched (fields: reason).")
    _details: Details | None = PrivateAttr(default=None)
    """What its snippet and matched terms are made of, when a search left them for later
    (`search/describe/details.fill_details`; a copy keeps it: `model_copy` shares it)."""
    _content_key: tuple[str, str] | None = PrivateAttr(default=None)
    _keep: frozenset[str] = PrivateAttr(default=frozenset())
    """The search's `fields`: what its wire form keeps beyond the compact default (`wire.brief`)."""
    _passage: bool = PrivateAttr(default=False)
    """A further passage of an item listed before it (`per_item`)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _private_defaults_once(cls)

    @property
    def private(self) -> dict[str, Any]:
        """The private attributes above as one dict (`_keep`, `_details`…), for the loops over a
        page's every hit: `result._keep` goes through pydantic's `__getattr__`, about 4 µs a read
        or a write."""
        return cast(dict[str, Any], self.__pydantic_private__)

    def lead(self, matched: bool) -> tuple[str, Loc] | None:
        """The text a search snippet shows, and where it is, in place of the hit chunk's:
        `matched` says whether the query matched that chunk's text (else only the item's title).
        None (the default) keeps the hit chunk."""
        return None


IMMUTABLE_DEFAULTS = (type(None), bool, int, float, str, frozenset, tuple)


def _private_defaults_once(cls: type[BaseModel]) -> None:
    """`cls`'s private attributes set to their defaults once per result built: pydantic sets them
    once per model class of the chain that declares any (a source's result model, a subclass
    of `ResultItem`: twice), each default copied; immutable defaults are shared instead. A class
    with another default (a factory, a list) keeps pydantic's way."""
    defaults = {name: attr.default for name, attr in cls.__private_attributes__.items()}
    if not all(isinstance(value, IMMUTABLE_DEFAULTS) for value in defaults.values()):
        return

    def model_post_init(self: BaseModel, context: Any, /) -> None:
        if getattr(self, "__pydantic_private__", None) is None:
            object.__setattr__(self, "__pydantic_private__", defaults.copy())

    model_post_init.private_defaults = defaults  # type: ignore[attr-defined]  # for `trusted`
    cls.model_post_init = model_post_init  # type: ignore[method-assign]


_private_defaults_once(ResultItem)


M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """`cls` made from `values` without validating them: each a field's name and a value of its
    type, as our own code makes them (a result from its item's row and its source's `fields()`,
    a `Loc` from a chunk's row). The model is the one `cls.model_validate(values)` makes (the
    same fields, fields set and private attributes) at about half its cost, what a top-100 page
    pays 100 times; pydantic's `model_construct` is slower than validation here (it looks up
    each default factory's signature on every call, ~100 µs a result). Nothing is checked
    (types, constraints, required fields): `tests/sources/test_trusted_models.py` holds every
    source's results to `model_validate`'s. A model `trusted` cannot make as pydantic does (extra
    fields kept, a mutable default) is validated."""
    plan = _plan(cls)
    if plan is None:
        return cls.model_validate(values)
    template, factories, private = plan
    data = template.copy()
    for name, factory in factories:
        data[name] = factory()
    data.update(values)
    model = cls.__new__(cls)
    _set(model, "__dict__", data)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    if private is None:
        _set(model, "__pydantic_private__", None)
        if cls.__pydantic_post_init__:
            model.model_post_init(None)
    else:
        _set(model, "__pydantic_private__", private.copy())
    return model


@functools.cache
def _plan(
    cls: type[BaseModel],
) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...], dict[str, Any] | None] | None:
    """`cls`'s fields at their defaults in field order (a required field, or one with a factory:
    None until set), its default factories, and its private attributes' defaults when
    `_private_defaults_once` sets them. None when `trusted` cannot make `cls` as pydantic
    does."""
    if cls.model_config.get("extra") == "allow" or cls.__pydantic_root_model__:
        return None
    template: dict[str, Any] = {}
    factories = []
    for name, field in cls.model_fields.items():
        if field.is_required():
            template[name] = None
        elif field.default_factory is not None:
            if field.default_factory_takes_validated_data:
                return None
            template[name] = None
            factories.append((name, field.default_factory))
        elif isinstance(field.default, IMMUTABLE_DEFAULTS):
            template[name] = field.default
        else:
            return None  # pydantic copies a mutable default
    # the defaults `_private_defaults_once` sets (None: pydantic's `model_post_init`, if any)
    private = getattr(cls.model_post_init, "private_defaults", None)
    return template, tuple(factories), private


class NoteResult(ResultItem):
    headings: list[str] | None = Field(default=None, description="The note's first five headings.")


R = TypeVar("R", bound=ResultItem)


class SearchResponse(BaseModel, Generic[R]):
    results: list[R]
    count: int
    has_more: bool
    next_offset: int | None = Field(description="Pass as `offset` for the next page; null on the last page.")
    total_estimated: int
    top_score: float | None = None
    warnings: list[str] = Field(default_factory=list)
    session_applied: bool = False
    expanded_terms: list[str] | None = None
    query_type: str | None = None
    degraded: bool | None = None
    provider_hint: str | None = None


class Retrieval(BaseModel):
    """How much to return; sizes out of range are clamped (see `warnings`)."""

    model_config = ConfigDict(extra="forbid")

    mode: RetrievalMode = Field(
        default="snippet",
        description="snippet (default); chunk: the chunk at loc; chunk_with_siblings: it and its neighbours "
        "within max_tokens; full: the whole item, paged (follow `next`); auto: chunk_with_siblings when "
        "max_tokens is given, else snippet.",
    )
    snippet_length: int | None = Field(default=None, description="Characters, 50..1000.")
    max_tokens: int | None = Field(
        default=None, description="Token budget (cl100k), 50..32000, held by text and structured result."
    )
    chars_per_token: int | None = Field(
        default=None, description="Count chars / this, 1..10, not real tokens."
    )
    chunk_size_tokens: int | None = None
    chunk_overlap_tokens: int | None = None
    sibling_window: int | None = Field(default=None, description="Chunks each side, 0..20.")
    prefer_prechunked: bool = True


class NextStep(BaseModel):
    """How to continue reading: call the same get tool again with these arguments."""

    loc: Loc
    retrieval: dict[str, Any]


class GetResponse(BaseModel, Generic[R]):
    meta: R
    content: Any = Field(description="Text, or structured content for chats and transcripts.")
    attachments: list[dict[str, Any]] = Field(default_factory=list)
    mode_used: RetrievalMode
    estimated_tokens: int = Field(description="Tokens of the larger rendering (text or structured).")
    tokenizer: Literal["cl100k", "chars"] = Field(
        default="cl100k", description="How tokens were counted: cl100k, or chars / chars_per_token."
    )
    truncated: bool
    next: NextStep | None = None
    warnings: list[str] = Field(default_factory=list)
