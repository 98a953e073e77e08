"""`public_url`: the base URL clients see behind a proxy, in the auth metadata and the Host check.

The 401 challenge over a real server is in test_isolation.py (its server sets public_url).
"""

from __future__ import annotations

import pytest

from knowledge_mcp.server.auth.tokens import auth_settings
from knowledge_mcp.server.config import ConfigError, Settings, load_settings
from knowledge_mcp.server.transports.http_security import transport_security


def test_without_public_url_the_resource_is_the_bind_address() -> None:
    assert str(auth_settings(Settings(host="127.0.0.1", port=8123)).resource_server_url) == (
        "http://127.0.0.1:8123/mcp"
    )
    assert Settings(host="::1", port=9000).base_url() == "http://[::1]:9000"
    security = transport_security("127.0.0.1")
    assert security is not None and security.enable_dns_rebinding_protection
    assert "knowledge.example.com" not in " ".join(security.allowed_hosts or [])


def test_public_url_becomes_the_resource_and_loses_its_trailing_slash() -> None:
    settings = Settings(public_url="https://knowledge.example.com/kb/", port=8123)
    assert settings.public_url == "https://knowledge.example.com/kb"
    assert str(auth_settings(settings).resource_server_url) == "https://knowledge.example.com/kb/mcp"


def test_on_loopback_the_public_host_passes_the_dns_rebinding_guard() -> None:
    settings = Settings(public_url="https://knowledge.example.com:8443")
    security = transport_security(settings.host, settings.public_url)
    assert security is not None and security.enable_dns_rebinding_protection
    assert "knowledge.example.com:8443" in security.allowed_hosts
    assert "127.0.0.1:*" in security.allowed_hosts
    assert "https://knowledge.example.com:8443" in security.allowed_origins
    elsewhere = transport_security("0.0.0.0", "https://k.example.com")
    assert elsewhere is not None and not elsewhere.enable_dns_rebinding_protection  # auth guards it


@pytest.mark.parametrize(
    "bad",
    [
        "knowledge.example.com",
        "ftp://knowledge.example.com",
        "https://user:pw@k.example.com",
        "https://k/?a=1",
    ],
)
def test_public_url_must_be_an_absolute_http_url(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_PUBLIC_URL", bad)
    with pytest.raises(ConfigError, match="public_url"):
        load_settings()


def test_an_empty_public_url_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWLEDGE_MCP_PUBLIC_URL", "")
    assert load_settings().public_url is None
