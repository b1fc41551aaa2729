"""Who may read and write: a bearer token for every route but the probes and the schema.

With ``JUDGE_SERVER_TOKEN`` set, a request needs ``Authorization: Bearer <token>`` (compared
in constant time), else 401 — reads too: runs, results and baselines are the workspace's
data. The check runs before the body is read, in :class:`judge.server.door.DoorLimits`;
:class:`WriteGuard` repeats it as each route's dependency, which is also what declares the
scheme in the OpenAPI. Without one — possible on loopback only, ``judge serve`` refuses
other binds — writes are open to local programs, but not to a web page's script: a request
carrying an ``Origin`` header (every browser's cross-site POST does) is refused, so a page
the user visits cannot start paid runs on their machine.
"""

from __future__ import annotations

import hmac

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

__all__ = ["BEARER", "WriteGuard"]

BEARER = HTTPBearer(auto_error=False, scheme_name="bearer",
                    description="JUDGE_SERVER_TOKEN, for every route but /healthz, /readyz "
                                "and the schema, when the server has one.")
"""The OpenAPI security scheme; the check itself is :class:`WriteGuard`'s."""


class WriteGuard:
    """A FastAPI dependency that lets a request through or answers 401/403."""

    def __init__(self, token: str | None) -> None:
        self.token = token or None

    def check(self, request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
        """Let the request through, or raise 401 (no or wrong token) / 403 (a page's write)."""
        if self.token is None:
            if request.method not in {"GET", "HEAD"} and request.headers.get("origin"):
                raise HTTPException(403, "writes from a web page need JUDGE_SERVER_TOKEN")
            return
        given = credentials.credentials if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise HTTPException(401, "a bearer token is required (JUDGE_SERVER_TOKEN)",
                                headers={"WWW-Authenticate": "Bearer"})
