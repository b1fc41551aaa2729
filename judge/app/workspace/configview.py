"""The effective settings as ``judge workspace config`` shows them: value, source, secrets masked.

A URL setting may carry a credential (``http://user:secret@host/v1``,
``postgresql://app:pw@db/judge``, ``…?api_key=…``); whatever shows settings shows them
through :func:`mask_url`, so a password or token never reaches a terminal, a CI log or a
JSON file.
"""

from __future__ import annotations

from typing import Any

from ...core.text.frozen import Frozen
from ...core.text.secrets import mask_url
from ...llm.local import LOCAL_TIMEOUT
from .workspace import Workspace

__all__ = ["ConfigView", "SettingView", "config_view", "local_timeout_view"]

class SettingView(Frozen):
    """One setting: its JSON value (credentials masked) and where it came from."""

    name: str
    value: Any
    source: str


class ConfigView(Frozen):
    """Every setting, in the order :class:`judge.app.workspace.settings.Settings` defines them."""

    settings: tuple[SettingView, ...]
    derived: tuple[SettingView, ...] = ()
    """Values a run derives from the settings (the local judge's timeout): shown by
    ``judge workspace config``, not settings themselves (``--json`` keeps to the settings)."""

    def public(self) -> dict[str, dict[str, Any]]:
        """The JSON ``judge workspace config --json`` prints: ``{name: {"value", "source"}}``."""
        return {s.name: {"value": s.value, "source": s.source} for s in self.settings}


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


def local_timeout_view(workspace: Workspace) -> SettingView:
    """The per-judgment timeout a ``local/`` judge gets (not the hosted 60 s)."""
    given = workspace.sources.get("timeout", "default") != "default"
    timeout = workspace.settings.timeout
    value = timeout if given else max(timeout, LOCAL_TIMEOUT)
    why = ("the timeout setting" if given else
           f"local judges: at least {LOCAL_TIMEOUT:g} s a judgment unless timeout is set")
    return SettingView(name="timeout (local/ judges)", value=value, source=why)


def config_view(workspace: Workspace) -> ConfigView:
    """The workspace's effective settings with their sources, every URL credential masked."""
    values = workspace.settings.model_dump(mode="json")
    return ConfigView(settings=tuple(
        SettingView(name=name, value=_masked(value),
                    source=workspace.sources.get(name, "default"))
        for name, value in values.items()), derived=(local_timeout_view(workspace),))
