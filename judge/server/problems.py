"""Errors as ``application/problem+json`` (RFC 9457), and the one place secrets are masked.

Which error is which answer: bad input of a file or a value (``ConfigError``: a suite, a
rubric, a template, a setting) 422 with ``file``, ``where`` and ``fix``; an unknown suite or
run 404; a run of that suite already going 409 naming it; a judge that cannot work 502; the
server stopping 503. Paths inside the workspace are shown relative to it.

Keys never appear in a response: every JSON body (and every server-sent event) is rendered
through :class:`Redactor`, which masks the values of the provider keys and of the server
token found in the environment, wherever a provider's message might have echoed one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException

from ..app.bind import TOKEN_ENV
from ..app.jobs import StoppingError
from ..core.errors import (
    ConfigError,
    JudgeError,
    NoBaselineError,
    RunActiveError,
    StoreError,
    UnknownRunError,
    UnknownSuiteError,
)
from ..core.secrets import Redactor as _Redactor
from ..core.secrets import secret_values

__all__ = [
    "PROBLEM_JSON",
    "Problem",
    "ProblemError",
    "Redactor",
    "install_handlers",
    "problem_responses",
]

PROBLEM_JSON = "application/problem+json"
_TYPE = "urn:judgeflow:problem:"


class Problem(BaseModel):
    """An RFC 9457 problem, with judgeflow's members for bad input and runs."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    file: str | None = None
    """The file at fault (bad input), relative to the workspace when inside it."""
    where: str | None = None
    """The place in that file: a case id and field, a line."""
    fix: str | None = None
    run: str | None = None
    suite: str | None = None


class ProblemError(Exception):
    """Raised by a route to answer with a problem (besides the mapped ``JudgeError``s)."""

    def __init__(self, status: int, slug: str, title: str, detail: str | None = None,
                 **members: Any) -> None:
        self.status, self.slug, self.title, self.detail = status, slug, title, detail
        self.members = members
        super().__init__(detail or title)


class Redactor:
    """Masks secrets in text about to leave the server (one :class:`judge.core.redact.Redactor`).

    Every credential of the environment: provider keys, the server token, URL passwords.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        # TOKEN_ENV ends in _TOKEN, so secret_values finds it; named again to be sure.
        self._redact = _Redactor(secret_values(env, extra=[env.get(TOKEN_ENV)]))

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        return self._redact(text)

    def response_class(self) -> type[JSONResponse]:
        """A JSON response class whose bodies pass through this redactor."""
        redact = self

        class RedactedJSON(JSONResponse):
            def render(self, content: Any) -> bytes:
                text = json.dumps(content, ensure_ascii=False, allow_nan=False,
                                  separators=(",", ":"))
                return redact(text).encode("utf-8")

        return RedactedJSON


def problem_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these problem statuses."""
    return {code: {"model": Problem, "content": {PROBLEM_JSON: {}}} for code in codes}


def _shown(file: str | None, root: Path) -> str | None:
    if not file:
        return file
    path = Path(file)
    if path.is_absolute():
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            return file
    return file


def install_handlers(app: FastAPI, root: Path, redact: Redactor) -> None:
    """Answer every error of ours, of FastAPI and of routing as problem+json."""

    def answer(request: Request, status: int, slug: str, title: str, detail: str | None,
               headers: Mapping[str, str] | None = None, **members: Any) -> Response:
        body = {"type": _TYPE + slug, "title": title, "status": status, "detail": detail,
                "instance": request.url.path,
                **{k: v for k, v in members.items() if v is not None}}
        text = redact(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        return Response(text, status_code=status, media_type=PROBLEM_JSON,
                        headers=dict(headers or {}))

    async def on_problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProblemError)
        return answer(request, exc.status, exc.slug, exc.title, exc.detail, **exc.members)

    async def on_judge_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, UnknownSuiteError):
            return answer(request, 404, "unknown-suite", "Unknown suite", exc.message,
                          fix=exc.fix)
        if isinstance(exc, NoBaselineError):
            return answer(request, 404, "no-baseline", "No baseline", exc.message, fix=exc.fix)
        if isinstance(exc, UnknownRunError):
            return answer(request, 404, "unknown-run", "Unknown run", str(exc))
        if isinstance(exc, RunActiveError):
            return answer(request, 409, "run-active", "A run of this suite is active",
                          str(exc), run=exc.run, suite=exc.suite,
                          headers={"Location": f"/api/runs/{exc.run}"})
        if isinstance(exc, StoppingError):
            return answer(request, 503, "stopping", "Shutting down", str(exc))
        if isinstance(exc, ConfigError):
            return answer(request, 422, "bad-input", "Bad input", exc.message,
                          file=_shown(exc.file, root), where=exc.where, fix=exc.fix)
        if isinstance(exc, StoreError):
            return answer(request, 500, "store", "Run store error", str(exc))
        return answer(request, 502, "judge", type(exc).__name__, str(exc))

    async def on_invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""),
                   "type": e.get("type", "")} for e in exc.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return answer(request, 422, "invalid-request", "Invalid request",
                      f"{where}: {first['msg']}" if where else str(first["msg"]),
                      where=where or None, errors=errors)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        slug = {401: "unauthorized", 403: "forbidden", 404: "not-found",
                405: "method-not-allowed"}.get(exc.status_code, "http")
        return answer(request, exc.status_code, slug, str(exc.detail), None,
                      headers=exc.headers)

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(JudgeError, on_judge_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http)
