"""Settings: defaults, then the config file, then KNOWLEDGE_MCP_<NAME> environment, then CLI flags."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator

from knowledge_mcp.sources.errors import KnowledgeError
from knowledge_mcp.sources.retrieval import Defaults

ENV_PREFIX = "KNOWLEDGE_MCP_"

# Pinned verification algorithms; "none" is not among them.
JwtAlgorithm = Literal["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512"]


def default_data_dir() -> Path:
    """The per-user platform data directory."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "knowledge-mcp"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "knowledge-mcp"
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "knowledge-mcp"


class Settings(BaseModel):
    # [server]
    data_dir: Path = Field(default_factory=default_data_dir)
    transport: Literal["stdio", "http", "ws"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    user: str = "local"
    no_auth: bool = False
    log_level: Literal["TRACE", "DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_library_debug: bool = False  # libraries' own loggers at log_level too (they may log content)
    tool_names: Literal["underscore", "dotted"] = "underscore"
    tool_profile: Literal["full", "compact"] = "full"
    public_url: str | None = None
    ws_idle_timeout_s: float = Field(default=300.0, gt=0, le=86_400)
    watch: bool = False  # re-index the imported folders live (serve --watch)
    workers: int = Field(default=1, ge=1, le=64)  # HTTP processes on one port; > 1 needs database_url
    # [search]
    snippet_length: int = Field(default=300, ge=50, le=1000)
    max_tokens: int = Field(default=4000, ge=50, le=32000)
    chars_per_token: int | None = Field(default=None, ge=1, le=10)  # None: real cl100k tokens
    sibling_window: int = Field(default=2, ge=0, le=20)
    order_by: Literal["relevance", "recent"] = "relevance"
    source_timeout_s: float = Field(default=5.0, gt=0, le=120)
    memory_index_max_chunks: int = Field(default=20_000, ge=0, le=1_000_000)
    memory_index_total_mb: float = Field(default=256.0, ge=0, le=1_000_000)  # item_store = postgresql
    import_max_file_mb: float = Field(default=200.0, gt=0, le=1_000_000)
    embed_in_background: bool = True
    load_model_in_background: bool = True  # serve loads the embedding model at start, not on first use
    rerank_model: Path | None = None
    rerank_tokenizer: Path | None = None  # None: tokenizer.json beside rerank_model
    rerank_timeout_s: float = Field(default=4.0, gt=0, le=60)
    glossary_file: Path | None = None
    # [resources]
    resource_max_chars: int = Field(default=100_000, ge=1_000, le=10_000_000)
    resource_list_limit: int = Field(default=50, ge=0, le=1_000)
    # [writing]
    read_only: bool = False
    notes_dir: Path | None = None
    duplicate_check_ms: int = Field(default=750, ge=0, le=60_000)
    max_note_bytes: int = Field(default=1_000_000, ge=1_000, le=1_000_000_000)
    notes_quota_mb: float = Field(default=1000.0, gt=0, le=100_000_000)
    # [deep_research]
    deep_research_aliases: Literal["auto", "always", "never"] = "auto"
    deep_research_clients: list[str] = Field(default_factory=list)
    # [storage]
    database_url: SecretStr | None = None  # None: per-user SQLite files under data_dir
    item_store: Literal["sqlite", "postgresql"] = "sqlite"  # where import writes and search reads items
    # [sessions]
    session_ttl_minutes: int = Field(default=60, ge=1, le=525_600)
    session_cache_size: int = Field(default=500, ge=1, le=1_000_000)
    # [limits]
    rate_limit_per_minute: int = Field(default=120, ge=0, le=1_000_000)
    rate_limits: dict[str, Annotated[int, Field(ge=0, le=1_000_000)]] = Field(default_factory=dict)
    research_rate_limit_per_minute: int = Field(default=30, ge=0, le=1_000_000)
    write_rate_limit_per_minute: int = Field(default=60, ge=0, le=1_000_000)
    quote_budget_s: float = Field(default=2.0, ge=0.001, le=60)
    # [auth]
    jwt_secret: SecretStr | None = None
    jwt_public_key_file: Path | None = None
    jwt_algorithms: list[JwtAlgorithm] | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    max_token_lifetime_s: int = Field(default=86_400, ge=60, le=31_536_000)
    credential_cache_s: float = Field(default=5.0, ge=0, le=5)  # a revoked key works at most this long

    @field_validator("deep_research_clients", "jwt_algorithms", mode="before")
    @classmethod
    def _list_from_env(cls, value: Any) -> Any:
        """An environment value is a JSON list (["a*", "b"]) or comma-separated (a*,b)."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value

    @field_validator(
        "jwt_secret",
        "jwt_issuer",
        "jwt_audience",
        "public_url",
        "rerank_model",
        "rerank_tokenizer",
        "glossary_file",
        "notes_dir",
        "database_url",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("rate_limits", mode="before")
    @classmethod
    def _table_from_env(cls, value: Any) -> Any:
        """An environment value is a JSON object: {"knowledge_search": 60}."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError('must be a JSON object such as {"knowledge_search": 60}') from exc
        return value

    @field_validator("public_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        """An absolute http(s) base URL without query or fragment; the trailing slash dropped."""
        if value is None:
            return None
        parts = urlsplit(value)
        extras = parts.username or parts.query or parts.fragment
        if parts.scheme not in ("http", "https") or not parts.hostname or extras:
            raise ValueError(
                "must be an absolute http(s) URL without credentials or query, "
                "such as https://knowledge.example.com"
            )
        return value.rstrip("/")

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        """A postgresql:// URL (the message never repeats it: it may hold a password)."""
        if value is not None and urlsplit(value.get_secret_value()).scheme not in ("postgresql", "postgres"):
            raise ValueError("must be a postgresql:// URL such as postgresql://user@host:5432/knowledge")
        return value

    @model_validator(mode="after")
    def _item_store_needs_url(self) -> Settings:
        if self.item_store == "postgresql" and self.database_url is None:
            raise ValueError("item_store = postgresql needs database_url (a postgresql:// URL)")
        return self

    def base_url(self) -> str:
        """Where clients reach this server: `public_url`, else the bind address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return self.public_url or f"http://{host}:{self.port}"

    def allowed_jwt_algorithms(self) -> list[str]:
        """`jwt_algorithms`, else HS256 with a secret and RS256/ES256 with a public key file."""
        if self.jwt_algorithms:
            return list(self.jwt_algorithms)
        allowed: list[str] = []
        if self.jwt_secret is not None:
            allowed.append("HS256")
        if self.jwt_public_key_file is not None:
            allowed += ["RS256", "ES256"]
        return allowed

    def defaults(self) -> Defaults:
        return Defaults(
            snippet_length=self.snippet_length,
            max_tokens=self.max_tokens,
            chars_per_token=self.chars_per_token,
            sibling_window=self.sibling_window,
            order_by=self.order_by,
            glossary_file=self.glossary_file,
        )


class ConfigError(KnowledgeError):
    pass


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(value)
        else:
            flat[key] = value
    return flat


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Read settings in precedence order; unknown file keys are an error, naming the key."""
    values: dict[str, Any] = {}
    path = config_file or (
        Path(os.environ[ENV_PREFIX + "CONFIG"]) if ENV_PREFIX + "CONFIG" in os.environ else None
    )
    if path is not None:
        try:
            values.update(_flatten(tomllib.loads(path.read_text(encoding="utf-8"))))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"config file {path}: {exc}") from exc
        unknown = sorted(set(values) - set(Settings.model_fields))
        if unknown:
            raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(unknown)}")
    for name in Settings.model_fields:
        env = os.environ.get(ENV_PREFIX + name.upper())
        if env is not None:
            values[name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        if not field:  # a rule across settings: its message names them
            raise ConfigError(str(first["msg"]).removeprefix("Value error, ")) from exc
        raise ConfigError(f"setting {field}: {first['msg']}") from exc
