r"""The HTTP door's limits, checked before the app reads a byte of the body.

In order, for every request: the ``Host`` header names this server (the bind address, a
loopback name when bound to loopback, or a name of the ``server_hosts`` setting), else 421 —
a page whose DNS name was rebound to 127.0.0.1 sends its own name, and is refused; the
method is one the path has (``OPTIONS`` answers 204 with ``Allow``; another method 405 with
``Allow`` listing the methods the OpenAPI documents for the path, across all its routes);
the token check (:meth:`judge.server.security.Access.refusal`: 401 without the token, 403
for a review token off its run, and without a token no write from a web page); the body at most
``server_max_body`` bytes: a larger ``Content-Length`` gets 413 unread, a body without one
is read up to the limit and refused as it crosses it; a JSON body holding a lone surrogate
(``"\ud800"``, or its bytes) gets 422 naming the field — it is not text, and the first write
of it as UTF-8 (a cache entry, a row) would fail. Only then does the app parse anything.
Every refusal is a problem+json answer, and docs/openapi.json lists them
(:func:`judge.server.problems.document_problems`).

Threats, each a test in ``tests/server/test_door.py``: ten 100 MB unauthenticated POSTs used
to be parsed before the 401 (3.6 GB resident); reads were open with a token set; a rebinding
page could read runs.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.routing import compile_path

from ..core.text.strict_json import text_problem_at
from .security import WRITES, Access

__all__ = ["DoorLimits", "DoorPolicy", "allowed_hosts"]

_PROBLEM = "urn:judgeflow:problem:"
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def allowed_hosts(bind: str | None, names: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` names this server answers to, lower case, without port or brackets.

    The bind address itself; ``localhost`` and both loopback addresses when it binds
    loopback (or when no bind is known: an app built in process); the configured ``names``.
    A wildcard bind (``0.0.0.0``, ``::``) adds no name: any IP literal is then accepted
    (an address is not a DNS name, so it cannot have been rebound), names only if listed.
    """
    hosts = {n.strip().lower().strip("[]") for n in names if n.strip()}
    host = (bind or "").lower().strip("[]")
    if host and host not in _WILDCARDS:
        hosts.add(host)
    if not host or _is_loopback(host):
        hosts |= {"localhost", "127.0.0.1", "::1"}
    return frozenset(hosts)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """``value`` of a Host header without its port: ``[::1]:8000`` → ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


@dataclass(frozen=True)
class DoorPolicy:
    """What :class:`DoorLimits` enforces."""

    access: Access
    """The tokens, and who may call what (:meth:`Access.refusal`)."""
    hosts: frozenset[str]
    """:func:`allowed_hosts`."""
    any_address: bool
    """Bound to a wildcard address: every IP literal is a valid ``Host``."""
    max_body: int
    """The largest request body, in bytes."""

    def host_ok(self, header: str | None) -> bool:
        """The ``Host`` header names this server."""
        if header is None:
            return False
        name = _host_name(header)
        if name in self.hosts:
            return True
        if not self.any_address:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


class DoorLimits:
    """Pure ASGI middleware: the checks above, then the app (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, policy: DoorPolicy,
                 spec: Callable[[], dict[str, Any]]) -> None:
        self.app = app
        self.policy = policy
        self.spec = spec
        """The OpenAPI of the app: its paths and their methods are what ``Allow`` lists."""
        self._paths: list[tuple[re.Pattern[str], set[str]]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request with a problem, or pass it on (its body bounded)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _answer(send, scope, *refusal)
            return
        if scope["method"] not in WRITES:
            await self.app(scope, receive, send)
            return
        await self._bounded(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str, str, str | None, dict[str, str]] | None:
        policy = self.policy
        headers = _headers(scope)
        if not policy.host_ok(headers.get("host")):
            return (421, "misdirected", "Misdirected request",
                    "the Host header does not name this server; add the name to the "
                    "server_hosts setting if it should", {})
        path, method = scope.get("path", ""), scope["method"]
        methods = self._methods(scope)
        if methods and method == "OPTIONS":
            return (204, "", "", "", {"Allow": ", ".join(sorted(methods | {"OPTIONS"}))})
        if methods and method not in methods:
            return (405, "method-not-allowed", "Method not allowed",
                    f"{path} answers {', '.join(sorted(methods))}",
                    {"Allow": ", ".join(sorted(methods | {"OPTIONS"}))})
        refused = policy.access.refusal(method, path, headers.get("authorization"),
                                        headers.get("origin"))
        if refused is not None:
            return (refused.status, refused.slug, refused.title, refused.detail,
                    dict(refused.headers))
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return (422, "invalid-request", "Invalid request",
                        "Content-Length is not a number", {})
            if int(length) > policy.max_body:
                return _too_large(policy.max_body)
        return None

    def _methods(self, scope: Scope) -> set[str]:
        """The methods the schema documents for the path (HEAD with GET); empty: unknown."""
        if self._paths is None:
            self._paths = [(compile_path(template)[0],
                            {m.upper() for m in ops} | ({"HEAD"} if "get" in ops else set()))
                           for template, ops in self.spec().get("paths", {}).items()]
        path = scope.get("path", "")
        found: set[str] = set()
        for pattern, methods in self._paths:
            if pattern.match(path):
                found |= methods
        return found

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body up to the limit first, then hand it to the app as it came.

        Read here, not counted as the app reads: FastAPI turns an error raised while it
        reads into a 400, and a refusal must be a 413 sent before anything is parsed.
        """
        limit, seen, messages = self.policy.max_body, 0, []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break  # the client went away: the app sees that as it would
            seen += len(message.get("body", b""))
            if seen > limit:
                await _answer(send, scope, *_too_large(limit))
                return
            if not message.get("more_body", False):
                break
        found = _surrogate(scope, b"".join(m.get("body", b"") for m in messages))
        if found is not None:
            where, why = found
            await _answer(send, scope, 422, "invalid-request", "Invalid request",
                          f"{where}: {why}", {}, where=where)
            return
        queued = iter(messages)

        async def replay() -> Message:
            return next(queued, None) or await receive()

        await self.app(scope, replay, send)


def _too_large(limit: int) -> tuple[int, str, str, str | None, dict[str, str]]:
    return (413, "too-large", "Request body too large",
            f"the body is larger than {limit} bytes (the server_max_body setting)",
            {"Connection": "close"})


def _surrogate(scope: Scope, body: bytes) -> tuple[str, str] | None:
    r"""Where (``body.case.output``) and why a JSON body holds a lone surrogate, or None.

    Parsed only when it may hold one: an escape ``\uD800``-``\uDFFF`` or such a code point's
    bytes in UTF-8 (a pair is fine: the walk finds no lone half), or another encoding. A body
    that is not JSON is left to the app, which answers for it.
    """
    kind = (_headers(scope).get("content-type") or "application/json").split(";")[0].strip()
    if not body or not (kind.lower() == "application/json" or kind.lower().endswith("+json")):
        return None
    if json.detect_encoding(body) == "utf-8" and _MAYBE_SURROGATE.search(body) is None:
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    found = text_problem_at(value)
    return None if found is None else ("body." + found[0] if found[0] else "body", found[1])


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if name not in out:  # the first one counts, as Starlette reads them
            out[name] = value.decode("latin-1")
    return out


async def _answer(send: Send, scope: Scope, status: int, slug: str, title: str,
                  detail: str | None, headers: dict[str, str], **members: str) -> None:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    if status == 204:
        await send({"type": "http.response.start", "status": 204, "headers": raw})
        await send({"type": "http.response.body", "body": b""})
        return
    body = {"type": _PROBLEM + slug, "title": title, "status": status, "detail": detail,
            "instance": scope.get("path", ""), **members}
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    raw += [(b"content-type", b"application/problem+json"),
            (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})
