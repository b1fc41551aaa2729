"""The effective settings as ``judge config`` shows them: value and source, credentials masked.

A URL setting may carry a credential (``http://user:secret@host/v1``,
``postgresql://app:pw@db/judge``, ``…?api_key=…``); whatever shows settings shows them
through :func:`mask_url`, so a password or token never reaches a terminal, a CI log or a
JSON file.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from .workspace import Workspace

__all__ = ["MASK", "ConfigView", "SettingView", "config_view", "mask_url"]

MASK = "***"

# The user information of a URL: from "scheme://" to the last "@" before the host ends.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s]*)@")
# A query parameter whose name says it holds a secret.
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&][^=&#\s]*(?:key|token|secret|password|passwd|pwd|auth|sig)[^=&#\s]*)"
    r"=[^&#\s]*", re.IGNORECASE)


class SettingView(BaseModel):
    """One setting: its JSON value (credentials masked) and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: Any
    source: str


class ConfigView(BaseModel):
    """Every setting, in the order :class:`judge.app.settings.Settings` defines them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: tuple[SettingView, ...]

    def public(self) -> dict[str, dict[str, Any]]:
        """The JSON ``judge config --json`` prints: ``{name: {"value", "source"}}``."""
        return {s.name: {"value": s.value, "source": s.source} for s in self.settings}


def mask_url(text: str) -> str:
    """``text`` with a URL's password (or a lone user token) and secret query values masked.

    ``http://user:secret@host/v1`` → ``http://user:***@host/v1``;
    ``https://TOKEN@host`` → ``https://***@host``; ``…?api_key=k`` → ``…?api_key=***``.
    Everything else is kept byte for byte (text that is not a URL is returned as it is).
    """
    def userinfo(match: re.Match[str]) -> str:
        user, colon, _secret = match["info"].partition(":")
        return f"{match['scheme']}{user}:{MASK}@" if colon else f"{match['scheme']}{MASK}@"

    masked = _USERINFO.sub(userinfo, text)
    return _SECRET_QUERY.sub(lambda m: f"{m['name']}={MASK}", masked)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


def config_view(workspace: Workspace) -> ConfigView:
    """The workspace's effective settings with their sources, every URL credential masked."""
    values = workspace.settings.model_dump(mode="json")
    return ConfigView(settings=tuple(
        SettingView(name=name, value=_masked(value),
                    source=workspace.sources.get(name, "default"))
        for name, value in values.items()))
