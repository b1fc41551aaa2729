"""The embedded local judge's server for a workspace: start (or reuse), report, stop."""

from __future__ import annotations

from dataclasses import dataclass

from ...llm.local import ServerRecord, local_available, server_status, start_server, stop_server
from ..workspace.workspace import DEFAULT_LOCAL, Workspace

__all__ = ["LocalStatus", "ServeReport", "local_status", "serve_local", "stop_local"]


@dataclass(frozen=True)
class ServeReport:
    """The running server's record and whether it is new."""

    server: ServerRecord
    started: bool

    @property
    def state(self) -> str:
        """``started`` or ``already running``."""
        return "started" if self.started else "already running"


@dataclass(frozen=True)
class LocalStatus:
    """Whether the local engine is installed and the server runs (its record when it does)."""

    installed: bool
    server: ServerRecord | None

    @property
    def running(self) -> bool:
        """A server answers for this workspace."""
        return self.server is not None


def serve_local(workspace: Workspace, model: str = DEFAULT_LOCAL,
                port: int | None = None) -> ServeReport:
    """Start the model's server in the background, or report the one already running.

    Started as the workspace's runs need it: with log-probabilities where its score mode is
    ``expected`` (the embedded judge's default), so a run reuses it instead of starting one.
    """
    running = server_status(model, workspace.root)
    if running is not None:
        return ServeReport(server=running, started=False)
    started = start_server(model, workspace.root, port=port, detached=True,
                           logits=workspace.settings.score_mode == "expected")
    return ServeReport(server=started.record, started=True)


def local_status(workspace: Workspace, model: str = DEFAULT_LOCAL) -> LocalStatus:
    """The local engine's installation and the server's state."""
    return LocalStatus(installed=local_available(),
                       server=server_status(model, workspace.root))


def stop_local(workspace: Workspace, model: str = DEFAULT_LOCAL) -> bool:
    """Stop the server ``serve_local`` started; False when none was running."""
    return stop_server(model, workspace.root)
