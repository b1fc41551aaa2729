"""Errors as ``application/problem+json`` (RFC 9457), and the one place secrets are masked.

Which error is which answer: bad input of a file or a value (``ConfigError``: a suite, a
rubric, a template, a setting) 422 with ``file``, ``where`` and ``fix``; an unknown suite or
run 404; a run of that suite already going 409 naming it; a judge that cannot work 502; the
server stopping 503. Paths inside the workspace are shown relative to it.

Keys never appear in a response: every JSON body (and every server-sent event) is rendered
through :func:`server_redactor` (a :class:`judge.core.text.secrets.Redactor`), which masks the
values of the provider keys and of the server token found in the environment, wherever a
provider's message might have echoed one.
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

from ..app.runs.jobs import StoppingError
from ..app.workspace.bind import TOKEN_ENV
from ..core.text.errors import (
    AmbiguousRunError,
    ConfigError,
    JudgeError,
    NoBaselineError,
    RunActiveError,
    StoreError,
    UnknownRunError,
    UnknownSuiteError,
)
from ..core.text.secrets import Redactor, secret_values

__all__ = [
    "PROBLEM_JSON",
    "Problem",
    "ProblemError",
    "document_problems",
    "install_handlers",
    "problem_responses",
    "redacted_responses",
    "server_redactor",
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


def server_redactor(env: Mapping[str, str]) -> Redactor:
    """The masker of text about to leave the server: every credential of the environment.

    Provider keys, the server token, URL passwords. ``TOKEN_ENV`` ends in ``_TOKEN``, so
    :func:`judge.core.text.secrets.secret_values` finds it; it is named again to be sure.
    """
    return Redactor(secret_values(env, extra=[env.get(TOKEN_ENV)]))


def redacted_responses(redact: Redactor) -> type[JSONResponse]:
    """A JSON response class whose bodies pass through ``redact``."""

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


def _no_store(exc: StoreError) -> str:
    text = str(exc)
    return text.replace(exc.store, "the run store") if exc.store else text


def install_handlers(app: FastAPI, root: Path, redact: Redactor) -> None:
    """Answer every error of ours, of FastAPI and of routing as problem+json.

    No answer shows where the workspace is: its absolute path becomes ``<workspace>``, and
    the store's URL "the run store".
    """
    resolved = root.resolve()

    def answer(request: Request, status: int, slug: str, title: str, detail: str | None,
               headers: Mapping[str, str] | None = None, **members: Any) -> Response:
        body = {"type": _TYPE + slug, "title": title, "status": status, "detail": detail,
                "instance": request.url.path,
                **{k: v for k, v in members.items() if v is not None}}
        text = redact(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        text = text.replace(json.dumps(str(resolved))[1:-1], "<workspace>")
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
            return answer(request, 404, "unknown-run", "Unknown run", _no_store(exc))
        if isinstance(exc, AmbiguousRunError):
            return answer(request, 422, "ambiguous-run", "Ambiguous run id prefix",
                          _no_store(exc), fix="give more characters of the run id")
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
            return answer(request, 500, "store", "Run store error", _no_store(exc))
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
        if exc.status_code == 400:  # FastAPI could not read the body: invalid, as a 422
            return answer(request, 422, "invalid-request", "Invalid request", str(exc.detail))
        slug = {401: "unauthorized", 403: "forbidden", 404: "not-found",
                405: "method-not-allowed"}.get(exc.status_code, "http")
        return answer(request, exc.status_code, slug, str(exc.detail), None,
                      headers=exc.headers)

    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(JudgeError, on_judge_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http)


_ALWAYS = {421: "The Host header does not name this server (DNS rebinding)."}
_NAMED = {
    401: "No token, or the wrong one (the server has JUDGE_SERVER_TOKEN).",
    403: "A write from a web page (Origin) to a server without a token.",
    404: "No such suite, run or baseline.",
    409: "A conflict: a run of the suite is active, or the run is not.",
    413: "The body is larger than the server_max_body setting; it was not read.",
    421: _ALWAYS[421],
    422: "The request is invalid (a parameter, the body, a suite, rubric or setting it "
         "names; an ambiguous run id prefix).",
    500: "The run store failed.",
    502: "The judge failed.",
    503: "The server is starting or shutting down.",
}


def document_problems(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with every error answer documented as it is sent: problem+json.

    JSON door: the OpenAPI document, edited as the JSON it is.

    FastAPI documents its 422 as ``application/json`` (``HTTPValidationError``); every
    answer of this server at 400 or above is a :class:`Problem`. Every operation gains the
    refusals of :class:`judge.server.door.DoorLimits`: 421, 413 with a body, 401 with
    the bearer scheme; 422 wherever it takes parameters or a body.
    """
    ref = {"$ref": "#/components/schemas/Problem"}
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            codes = {int(c) for c in responses if c.isdigit() and int(c) >= 400}
            codes |= set(_ALWAYS)
            if "requestBody" in operation:
                codes |= {413, 422}
            if operation.get("parameters"):
                codes.add(422)
            if operation.get("security"):
                codes.add(401)
            for code in sorted(codes):
                old = responses.get(str(code), {})
                responses[str(code)] = {
                    "description": _NAMED.get(code, old.get("description", "A problem.")),
                    "content": {PROBLEM_JSON: {"schema": ref}}}
            operation["responses"] = dict(sorted(responses.items()))
    return spec
