"""The effective settings as ``judge config`` shows them: value and source, credentials masked.

A URL setting may carry a credential (``http://user:secret@host/v1``,
``postgresql://app:pw@db/judge``, ``…?api_key=…``); whatever shows settings shows them
through :func:`mask_url`, so a password or token never reaches a terminal, a CI log or a
JSON file.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..core.secrets import mask_url
from .workspace import Workspace

__all__ = ["ConfigView", "SettingView", "config_view"]

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
