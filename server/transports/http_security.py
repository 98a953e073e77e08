"""DNS-rebinding protection for HTTP served on a loopback address.

A loopback server (especially one started with `--no-auth`) is reachable from any web page the
user opens: a hostile site can point its own DNS name at 127.0.0.1 and have the browser send
requests to us. The browser then names the hostile site in `Host` (and `Origin`), so we refuse
any request whose Host or Origin is not a loopback name.

The SDK switches this on by itself only for the literal hosts 127.0.0.1, localhost and ::1; we
bind whatever loopback address the user chose (all of 127.0.0.0/8 is loopback), so we build
the settings ourselves for every loopback host instead of relying on that string match.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_literal(host: str) -> str:
    """The bind address as it appears in a Host header (IPv6 in brackets)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare


def loopback_security(host: str, public_url: str | None = None) -> TransportSecuritySettings:
    """Allow only loopback names in Host (any port, or none) and Origin (http/https); and, behind
    a reverse proxy that forwards the public Host, `public_url`'s host."""
    names = list(dict.fromkeys((*LOOPBACK_NAMES, _host_literal(host))))
    hosts = [pattern for name in names for pattern in (name, f"{name}:*")]
    origins = [
        pattern
        for name in names
        for scheme in ("http", "https")
        for pattern in (f"{scheme}://{name}", f"{scheme}://{name}:*")
    ]
    if public_url is not None:
        public = urlsplit(public_url)
        netloc = _host_literal(public.hostname or "")
        if public.port is not None:
            netloc = f"{netloc}:{public.port}"
        hosts.append(netloc)
        origins.append(f"{public.scheme}://{netloc}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def transport_security(host: str, public_url: str | None = None) -> TransportSecuritySettings | None:
    """Loopback hosts get Host/Origin checks; other hosts require authentication instead, which a
    rebinding page cannot supply, and may sit behind proxies that rewrite Host."""
    if is_loopback(host):
        return loopback_security(host, public_url)
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
