"""``judge workspace serve``'s process: listen first, open the workspace behind, lose nothing.

Start-up: uvicorn binds with a :class:`judge.server.readiness.Gate` as its app (``/healthz``
answers within a few hundred milliseconds of exec); right after the socket listens, a thread
imports FastAPI and the application layer, opens the workspace and its store and builds the
app, then hands it to the gate, which lets the waiting requests through. The same thread
then imports the model client library (litellm, seconds of CPU) so that the first run does
not pay for it on the event loop. Should opening fail (a bad ``judge.toml``, a store that
cannot be opened), the server stops and ``judge workspace serve`` exits with that error.

On SIGTERM (or Ctrl-C) uvicorn's shutdown is preceded by ours: stop accepting connections,
refuse new runs, cancel the active ones and wait until each has stored what it judged and
is recorded ``interrupted``; only then do open requests (a ``?wait=true``, an event stream,
both ending with the run) drain and the process exits. Restarted, the server reads those
runs from the store, and a new harness call resumes from the cache.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn

from ..core.text.secrets import Redactor, secret_values
from .readiness import Gate

if TYPE_CHECKING:
    from fastapi import FastAPI

    from .security import ReviewGrant
    from .state import ServerState

__all__ = ["GRACEFUL_SECONDS", "OPENING_SWITCH_INTERVAL", "serve", "url_of"]

GRACEFUL_SECONDS = 15
"""How long open requests may take to finish after the runs are stored."""
OPENING_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval (seconds; default 0.005) while the workspace opens."""


def url_of(host: str, port: int) -> str:
    """The URL of ``host:port``, an IPv6 address in brackets (``http://[::1]:8000``)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gate: Gate, root: Path,
                 env: Mapping[str, str], token: str | None,
                 review: ReviewGrant | None = None) -> None:
        super().__init__(config)
        self.gate, self.root, self.env, self.token = gate, root, env, token
        self.review = review
        self.judge: ServerState | None = None
        self.error: BaseException | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.started:
            return
        bound = self.servers[0].sockets[0].getsockname() if self.servers else None
        host, port = (bound[0], bound[1]) if bound else (self.config.host, self.config.port)
        host = str(host)
        print(f"judge workspace serve: {url_of(host, port)} (workspace {self.root})",
              file=sys.stderr, flush=True)
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._open, args=(loop,), name="judge-serve-open",
                         daemon=True).start()

    def _open(self, loop: asyncio.AbstractEventLoop) -> None:
        """In the thread: build the app, hand it over, then preload the model client."""
        interval = sys.getswitchinterval()
        # Hand the GIL back to the event loop often while this thread imports: /healthz
        # (and the gate's other answers) stay quick meanwhile.
        sys.setswitchinterval(OPENING_SWITCH_INTERVAL)
        try:
            # Off the critical path to /healthz: FastAPI and the application layer are
            # imported here, after the socket listens, not at the top of this module.
            from ..llm.client import preload
            from .app import open_app

            app = open_app(self.root, self.env, token=self.token, bind=self.config.host,
                           review=self.review)
        except BaseException as exc:  # handed to the main thread, re-raised by serve()
            self._in_loop(loop, self._failed, exc)
            return
        finally:
            sys.setswitchinterval(interval)
        if self._in_loop(loop, self._opened, app):
            preload()

    @staticmethod
    def _in_loop(loop: asyncio.AbstractEventLoop, call: Callable[[Any], None],
                 arg: Any) -> bool:
        try:
            loop.call_soon_threadsafe(call, arg)
        except RuntimeError:  # the loop already closed: the server stopped meanwhile
            return False
        return True

    def _opened(self, app: FastAPI) -> None:
        self.judge = app.state.judge
        self.gate.open(app)

    def _failed(self, exc: BaseException) -> None:
        self.error = exc
        self.gate.fail(Redactor(secret_values(self.env))(str(exc)))
        self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # stop accepting before the runs are stopped
        if self.judge is not None:
            await self.judge.aclose()
        await super().shutdown(sockets)


def serve(root: Path, host: str, port: int, *, env: Mapping[str, str],
          token: str | None = None, review: ReviewGrant | None = None) -> None:
    """Serve the workspace at ``root`` on ``host:port`` until SIGTERM or Ctrl-C.

    ``review``: a review page's token besides ``token`` (``judge review``). Raises what
    opening the workspace raised (after the server stopped), if it failed.
    """
    gate = Gate()
    config = uvicorn.Config(gate, host=host, port=port, log_level="warning", access_log=False,
                            lifespan="off", ws="none", http="h11",
                            timeout_graceful_shutdown=GRACEFUL_SECONDS)
    server = _Server(config, gate, root, env, token, review)
    server.run()
    if server.error is not None:
        raise server.error
