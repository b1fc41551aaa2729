"""The ASGI app ``judge workspace serve`` binds first: ``/healthz`` at once, the rest when ready.

Importing FastAPI, the workspace and the store costs more than a second of CPU, so the
process listens before it has them: a thread builds the real app (the workspace opened,
its store reachable) while this gate answers. Until then ``/healthz`` says
``{"status": "ok", "ready": false}`` (the process is alive), ``/readyz`` answers 503, and
every other request waits until the app is ready, then goes to it: no request ever sees a
half-opened workspace. Should opening fail, waiting requests get a 503 naming why and the
server stops. Light on purpose: only the standard library is imported here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["READY_WAIT_SECONDS", "ASGIApp", "Gate"]

READY_WAIT_SECONDS = 120.0
"""How long a request waits for the app to be ready before it gets a 503."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_PROBLEM = "urn:judgeflow:problem:"


class Gate:
    """Answers health at once and holds every other request until :meth:`open` (or :meth:`fail`)."""

    def __init__(self, wait_seconds: float = READY_WAIT_SECONDS) -> None:
        self.app: ASGIApp | None = None
        self.failure: str | None = None
        self.wait_seconds = wait_seconds
        self._settled = asyncio.Event()

    def open(self, app: ASGIApp) -> None:
        """The app is ready: waiting and later requests go to it (call in the event loop)."""
        self.app = app
        self._settled.set()

    def fail(self, reason: str) -> None:
        """The app cannot be built: waiting and later requests get a 503 with ``reason``."""
        self.failure = reason
        self._settled.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection: through to the app once ready, else as above."""
        if self.app is not None:
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets, and uvicorn runs with lifespan off
        path = scope.get("path", "")
        if path == "/healthz" and self.failure is None:
            await _answer(send, 200, "application/json", {"status": "ok", "ready": False})
            return
        if path != "/readyz" and self.failure is None:
            try:
                await asyncio.wait_for(self._settled.wait(), self.wait_seconds)
            except TimeoutError:
                pass
            if self.app is not None:
                await self.app(scope, receive, send)
                return
        if self.failure is not None:
            body = {"type": _PROBLEM + "not-ready", "title": "The workspace could not be opened",
                    "status": 503, "detail": self.failure, "instance": path}
        else:
            body = {"type": _PROBLEM + "starting", "title": "Starting", "status": 503,
                    "detail": "the workspace is being opened; retry shortly", "instance": path}
        await _answer(send, 503, "application/problem+json", body, retry=self.failure is None)


async def _answer(send: Send, status: int, media: str, body: dict[str, Any], *,
                  retry: bool = False) -> None:
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = [(b"content-type", media.encode()), (b"content-length", str(len(data)).encode())]
    if retry:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
