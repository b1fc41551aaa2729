"""What one server holds for its workspace: the suite index, the runs, the monitor, metrics.

Requests share these and never close them: the process does, once, at shutdown
(:meth:`ServerState.aclose`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials

from ..app.judges.monitor_live import LiveMonitor
from ..app.runs.jobs import RunJobs
from ..app.workspace.suites_index import SuiteIndex
from ..app.workspace.workspace import Workspace
from ..cache.disk import JudgmentCache
from ..core.formats.rubric import Rubric
from ..core.text.secrets import Redactor
from ..llm.client import aclose_clients
from ..system.resources import find_rubric
from .metrics import Metrics
from .security import BEARER, WriteGuard

__all__ = ["Evaluations", "Served", "ServerState", "require_token", "served"]


class Evaluations:
    """What every ``POST /api/evaluate`` of the process shares: the cache and parsed rubrics.

    Opening the cache and parsing a rubric (its output schema derived) cost tens of
    milliseconds a request; a rubric is parsed again when its file changes (path, size and
    modification time). The cache is the workspace's, in its mode, closed at shutdown.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._cache: JudgmentCache | None = None
        self._opened = False
        self._rubrics: dict[tuple[str, int, int], Rubric] = {}

    def cache(self) -> JudgmentCache | None:
        """The workspace's cache (None: mode ``off``), opened at the first request."""
        if not self._opened:
            self._cache = self.workspace.open_cache()
            self._opened = True
        return self._cache

    def rubric(self, name: str | None) -> Rubric:
        """The rubric ``name`` (default: the workspace's), parsed once per file version."""
        ws = self.workspace
        path = find_rubric(name or ws.settings.rubric or "task-evaluation", ws.root)
        stat = Path(path).stat()
        key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
        found = self._rubrics.get(key)
        if found is None:
            found = self._rubrics[key] = ws.rubric(str(path))
            if len(self._rubrics) > 64:  # edited files leave old versions behind
                self._rubrics.pop(next(iter(self._rubrics)))
        return found

    def close(self) -> None:
        """Release the cache's connections."""
        if self._cache is not None:
            self._cache.close()


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
    evaluations: Evaluations
    _closed: bool = field(default=False, init=False)

    async def aclose(self) -> None:
        """Stop the runs (each stored), then close the model client's sessions, once.

        The sessions are the process's, shared by every request and run: closed here at
        shutdown, never by one request (:class:`judge.app.workspace.workspace.LiteLLMJudges`).
        """
        if self._closed:
            return
        self._closed = True
        await self.jobs.stop()
        self.evaluations.close()
        await aclose_clients()


def served(request: Request) -> ServerState:
    """The state of the app serving ``request``."""
    state = request.app.state.judge
    assert isinstance(state, ServerState)
    return state


Served = Annotated[ServerState, Depends(served)]


def require_token(request: Request, credentials: Annotated[
        HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> None:
    """The guard of the app serving ``request`` (a dependency of every guarded route)."""
    served(request).guard.check(request, credentials)
