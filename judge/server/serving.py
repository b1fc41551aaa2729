"""``judge serve``'s process: uvicorn serving the app, and a shutdown that loses nothing.

On SIGTERM (or Ctrl-C) uvicorn's shutdown is preceded by ours: stop accepting connections,
refuse new runs, cancel the active ones and wait until each has stored what it judged and
is recorded ``interrupted``; only then do open requests (a ``?wait=true``, an event stream,
both ending with the run) drain and the process exits. Restarted, the server reads those
runs from the store, and a new harness call resumes from the cache.
"""

from __future__ import annotations

import socket
import sys

import uvicorn

from ..app.workspace import Workspace
from .app import create_app
from .state import ServerState

__all__ = ["serve"]

GRACEFUL_SECONDS = 15
"""How long open requests may take to finish after the runs are stored."""


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self.judge = state

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            bound = self.servers[0].sockets[0].getsockname() if self.servers else None
            host, port = (bound[0], bound[1]) if bound else (self.config.host, self.config.port)
            print(f"judge serve: http://{host}:{port} (workspace {self.judge.workspace.root})",
                  file=sys.stderr, flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # stop accepting before the runs are stopped
        await self.judge.jobs.stop()
        await super().shutdown(sockets)


def serve(workspace: Workspace, host: str, port: int, *, token: str | None = None) -> None:
    """Serve ``workspace`` on ``host:port`` until SIGTERM or Ctrl-C."""
    app = create_app(workspace, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=GRACEFUL_SECONDS)
    _Server(config, app.state.judge).run()
