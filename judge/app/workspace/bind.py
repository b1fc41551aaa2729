"""Who may reach ``judge workspace serve``: loopback by default, any address only behind a token.

The token (``JUDGE_SERVER_TOKEN``) guards every write; without one, the server would let
anyone who can reach it start paid runs, so only a loopback bind is allowed then.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from ...core.text.errors import UsageError

__all__ = ["TOKEN_ENV", "is_loopback", "server_token"]

TOKEN_ENV = "JUDGE_SERVER_TOKEN"
"""The environment variable holding the bearer token of ``judge workspace serve``'s writes."""


def is_loopback(host: str) -> bool:
    """``host`` names this machine only (127.0.0.0/8, ::1, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def server_token(host: str, env: Mapping[str, str]) -> str | None:
    """The token from ``env`` (None: none); UsageError for a non-loopback bind without one."""
    token = env.get(TOKEN_ENV) or None
    if token is None and not is_loopback(host):
        raise UsageError(f"refusing to bind {host} without a token: anyone who can reach it "
                         "could start runs and write baselines",
                         fix=f"set {TOKEN_ENV}, or bind 127.0.0.1")
    return token
