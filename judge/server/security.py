"""Who may do what over HTTP: the one token check, and the one definition of a write.

With ``JUDGE_SERVER_TOKEN`` set, a request needs ``Authorization: Bearer <token>`` (compared
in constant time), else 401 — reads too: runs, results and baselines are the workspace's
data. Only the probes, the schema and the review page's shell are open. Without one —
possible on loopback only, ``judge workspace serve`` refuses other binds — requests are open
to local programs, but no write comes from a web page's script: a write carrying an ``Origin``
header (every browser's cross-site POST does) is refused, so a page the user visits cannot
start paid runs on their machine.

A review grant (``judge review RUN``) adds a second token, the one the review page holds:
it reads that run's cases and labels them, and nothing else (403): not the other runs, not
the export, not a run, not the metrics. A page script that obtains it (another tab of the
origin asking for it) can label one run, not drive the API.

:meth:`Access.refusal` is the check. :class:`judge.server.door.DoorLimits` applies it to
every request before the body is read; :class:`WriteGuard` applies the same to each guarded
route as its dependency, which is also what declares the scheme in the OpenAPI.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

__all__ = ["BEARER", "PUBLIC_PAGES", "PUBLIC_PATHS", "WRITES", "Access", "Refusal",
           "ReviewGrant", "WriteGuard"]

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The methods that may change something: every other (GET, HEAD, OPTIONS) only reads."""
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json"})
"""Routes open without the token: liveness and readiness probes (an orchestrator's, which
carries no credentials; they say nothing but "up"), and the API's schema (the contract, the
same for every workspace). Everything else needs it when one is set."""
PUBLIC_PAGES = ("/review/",)
"""Pages whose GET is the page's shell alone (no run data: its script asks the API for that,
with the token it reads from the address's fragment, which browsers never send)."""

BEARER = HTTPBearer(auto_error=False, scheme_name="bearer",
                    description="JUDGE_SERVER_TOKEN, for every route but /healthz, /readyz "
                                "and the schema, when the server has one.")
"""The OpenAPI security scheme; the check itself is :meth:`Access.refusal`."""


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: its status, problem slug, title, detail and headers."""

    status: int
    slug: str
    title: str
    detail: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReviewGrant:
    """A token that can read one run's review data and label it, and nothing else."""

    run_id: str
    """The run under review (its whole id: a prefix is another path, refused)."""
    token: str

    def allows(self, method: str, path: str) -> bool:
        """Whether the grant covers ``method path``: the run's review data and its labels."""
        base = f"/api/review/{self.run_id}"
        return (method in ("GET", "HEAD") and path == base) or \
            (method == "POST" and path == base + "/labels")


_UNAUTHORIZED = Refusal(401, "unauthorized", "A bearer token is required (JUDGE_SERVER_TOKEN)",
                        headers={"WWW-Authenticate": "Bearer"})


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class Access:
    """The server's tokens: the full one (None: none) and a review page's grant."""

    token: str | None
    review: ReviewGrant | None = None

    def refusal(self, method: str, path: str, authorization: str | None,
                origin: str | None) -> Refusal | None:
        """Why ``method path`` with these headers is refused, or None when it may go on."""
        if self.token is None and self.review is None:
            if method in WRITES and origin:
                return Refusal(403, "forbidden", "Writes from a web page need "
                                                 "JUDGE_SERVER_TOKEN")
            return None
        if path in PUBLIC_PATHS or (method == "GET" and path.startswith(PUBLIC_PAGES)):
            return None
        scheme, _, given = (authorization or "").partition(" ")
        given = given.strip() if scheme.lower() == "bearer" else ""
        if self.token is not None and _same(given, self.token):
            return None
        if self.review is None or not _same(given, self.review.token):
            return _UNAUTHORIZED
        if self.review.allows(method, path):
            return None
        return Refusal(403, "forbidden", "The review token only reads and labels its run",
                       f"this token labels run {self.review.run_id} on its review page; "
                       "everything else needs JUDGE_SERVER_TOKEN")


class WriteGuard:
    """A FastAPI dependency that lets a request through or answers as :class:`Access` says."""

    def __init__(self, access: Access) -> None:
        self.access = access

    def check(self, request: Request, credentials: HTTPAuthorizationCredentials | None) -> None:
        """Let the request through, or raise the refusal's status (401 or 403).

        ``credentials`` is what declares the scheme; the header itself is read as the door
        reads it, so both apply one check to the same bytes.
        """
        del credentials
        refusal = self.access.refusal(request.method, request.url.path,
                                      request.headers.get("authorization"),
                                      request.headers.get("origin"))
        if refusal is not None:
            raise HTTPException(refusal.status, refusal.title, headers=dict(refusal.headers))
