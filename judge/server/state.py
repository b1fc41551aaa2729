"""What one server holds for its workspace: the suite index, the runs, the monitor, metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials

from ..app.jobs import RunJobs
from ..app.live_monitor import LiveMonitor
from ..app.suites_index import SuiteIndex
from ..app.workspace import Workspace
from .metrics import Metrics
from .problems import Redactor
from .security import BEARER, WriteGuard

__all__ = ["Served", "ServerState", "require_writer", "served"]


@dataclass
class ServerState:
    """The server's long-lived objects, built once by :func:`judge.server.app.create_app`."""

    workspace: Workspace
    index: SuiteIndex
    jobs: RunJobs
    monitor: LiveMonitor
    metrics: Metrics
    guard: WriteGuard
    redact: Redactor


def served(request: Request) -> ServerState:
    """The state of the app serving ``request``."""
    state = request.app.state.judge
    assert isinstance(state, ServerState)
    return state


Served = Annotated[ServerState, Depends(served)]


def require_writer(request: Request, credentials: Annotated[
        HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> None:
    """The write guard of the app serving ``request`` (a dependency of every write)."""
    served(request).guard.check(request, credentials)
