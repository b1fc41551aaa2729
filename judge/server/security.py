"""Who may write: a bearer token for every ``POST`` and ``DELETE``.

With ``JUDGE_SERVER_TOKEN`` set, a write needs ``Authorization: Bearer <token>`` (compared in
constant time), else 401. Without one — possible on loopback only, ``judge serve`` refuses
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
                    description="JUDGE_SERVER_TOKEN, for every POST and DELETE.")
"""The OpenAPI security scheme of the writes; the check itself is :class:`WriteGuard`'s."""


class WriteGuard:
    """A FastAPI dependency that lets a write through or answers 401/403."""

    def __init__(self, token: str | None) -> None:
        self.token = token or None

    def check(self, request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
        """Let the write through, or raise 401 (no or wrong token) / 403 (a web page)."""
        if self.token is None:
            if request.headers.get("origin"):
                raise HTTPException(403, "writes from a web page need JUDGE_SERVER_TOKEN")
            return
        given = credentials.credentials if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise HTTPException(401, "a bearer token is required (JUDGE_SERVER_TOKEN)",
                                headers={"WWW-Authenticate": "Bearer"})
