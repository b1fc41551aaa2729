"""OpenAI-style files and batches endpoints for the fake model server (fake_server.py).

Routes, all under ``/v1`` as OpenAI's::

    POST /v1/files                    multipart upload (``purpose``, ``file``) -> file object
    GET  /v1/files/{id}/content       the file's bytes (an input, output or error file)
    POST /v1/batches                  {"input_file_id", "endpoint", "completion_window",
                                       "metadata"} -> batch object, status ``validating``
    GET  /v1/batches                  list (newest first)
    GET  /v1/batches/{id}             the batch; every retrieve moves it on (see below)
    POST /v1/batches/{id}/cancel      -> ``cancelling``; the next retrieve ``cancelled``
    GET|POST /_batch_control          read or change the knobs below
    GET  /_batch_stats                files, batches, lines answered, retrieves

A batch answers each line with exactly the completion a live call of the same body gets
(the server's :meth:`answer_body`, which counts no chat completion in ``/_stats``). Its
status moves ``validating`` -> ``in_progress`` -> ``completed`` over ``polls`` retrieves
each. Knobs (``POST /_batch_control``, a JSON object):

- ``polls``: retrieves spent in each of validating and in_progress (default 1)
- ``error_every``: every Nth line (1-based) fails with HTTP 500 in the error file
- ``invalid_every``: every Nth line gets a reply that violates the schema (``badschema``)
- ``expire_after``: the job ends ``expired`` after answering its first N lines; the rest
  are in the error file with code ``batch_expired``
- ``cancel_keeps``: lines a cancelled job has answered (default: half)
- ``fail``: the job ends ``failed`` with a job-level error and no output
- ``create_delay``: seconds ``POST /v1/batches`` waits after creating the job before it
  answers (a client killed meanwhile has a job it never heard of)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

__all__ = ["BatchEndpoints"]

CREATED = 1_700_000_000
_KNOBS: dict[str, Any] = {"polls": 1, "error_every": 0, "invalid_every": 0,
                          "expire_after": None, "cancel_keeps": None, "fail": False,
                          "create_delay": 0.0}


class _Answers(Protocol):
    def answer_body(self, body: Any, fault: str | None = None) -> tuple[int, dict[str, Any]]:
        ...


@dataclass
class _Batch:
    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    metadata: dict[str, Any]
    knobs: dict[str, Any]
    status: str = "validating"
    retrieves: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, Any]] | None = None
    cancel: bool = False


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data, separators=(",", ":")).encode("utf-8"),
                        status=status, content_type="application/json")


def _error(message: str, status: int = 400, code: str = "invalid_request") -> web.Response:
    return _json({"error": {"message": message, "type": "invalid_request_error",
                            "param": None, "code": code}}, status)


class BatchEndpoints:
    """Files and batches over the answers of one fake server."""

    def __init__(self, server: _Answers) -> None:
        self.server = server
        self.files: dict[str, tuple[str, bytes]] = {}
        self.batches: dict[str, _Batch] = {}
        self.knobs = dict(_KNOBS)
        self.stats = {"files": 0, "batches": 0, "lines": 0, "retrieves": 0, "cancels": 0}

    def routes(self) -> list[tuple[str, str, Callable[[web.Request], Any]]]:
        """``(method, path, handler)`` for the server's router."""
        return [
            ("POST", "/v1/files", self._upload),
            ("GET", "/v1/files/{id}/content", self._content),
            ("POST", "/v1/batches", self._create),
            ("GET", "/v1/batches", self._list),
            ("GET", "/v1/batches/{id}", self._retrieve),
            ("POST", "/v1/batches/{id}/cancel", self._cancel),
            ("GET", "/_batch_control", self._control),
            ("POST", "/_batch_control", self._control),
            ("GET", "/_batch_stats", self._stats),
        ]

    # -- files

    def _file(self, purpose: str, data: bytes, name: str) -> dict[str, Any]:
        file_id = f"file-fake-{len(self.files) + 1}"
        self.files[file_id] = (purpose, data)
        self.stats["files"] += 1
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": CREATED,
                "filename": name, "purpose": purpose, "status": "processed"}

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if purpose != "batch" or not isinstance(upload, web.FileField):
            return _error("expected multipart fields purpose=batch and file")
        return _json(self._file("batch", upload.file.read(), upload.filename))

    async def _content(self, request: web.Request) -> web.Response:
        found = self.files.get(request.match_info["id"])
        if found is None:
            return _error("no such file", 404, "not_found")
        return web.Response(body=found[1], content_type="application/octet-stream")

    # -- batches

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        found = self.files.get(str(body.get("input_file_id")))
        if found is None:
            return _error("no such input file", 404, "not_found")
        if body.get("endpoint") != "/v1/chat/completions":
            return _error("only /v1/chat/completions is supported by the fake server")
        lines = []
        for number, raw in enumerate(found[1].splitlines(), start=1):
            if raw.strip():
                try:
                    lines.append(json.loads(raw))
                except ValueError:
                    return _error(f"line {number} of the input file is not JSON")
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
            return _error("every line needs a unique custom_id")
        batch = _Batch(id=f"batch_fake_{len(self.batches) + 1}",
                       input_file_id=str(body["input_file_id"]), lines=lines,
                       metadata=dict(body.get("metadata") or {}), knobs=dict(self.knobs),
                       counts={"total": len(lines), "completed": 0, "failed": 0})
        self.batches[batch.id] = batch
        self.stats["batches"] += 1
        if float(self.knobs["create_delay"] or 0) > 0:
            await asyncio.sleep(float(self.knobs["create_delay"]))
        return _json(self._view(batch))

    async def _list(self, _request: web.Request) -> web.Response:
        data = [self._view(b) for b in reversed(self.batches.values())]
        return _json({"object": "list", "data": data, "has_more": False,
                      "first_id": data[0]["id"] if data else None,
                      "last_id": data[-1]["id"] if data else None})

    async def _retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error("no such batch", 404, "not_found")
        self.stats["retrieves"] += 1
        self._advance(batch)
        return _json(self._view(batch))

    async def _cancel(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error("no such batch", 404, "not_found")
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return _error(f"cannot cancel a batch that is {batch.status}", 409, "conflict")
        self.stats["cancels"] += 1
        batch.cancel, batch.status = True, "cancelling"
        return _json(self._view(batch))

    async def _control(self, request: web.Request) -> web.Response:
        if request.method == "POST":
            changes = await request.json()
            unknown = sorted(set(changes) - set(_KNOBS))
            if unknown:
                return _error(f"unknown batch knob(s): {', '.join(unknown)}")
            self.knobs.update(changes)
        return _json(self.knobs)

    async def _stats(self, _request: web.Request) -> web.Response:
        return _json(self.stats)

    # -- the job

    def _advance(self, batch: _Batch) -> None:
        batch.retrieves += 1
        polls = max(0, int(batch.knobs["polls"]))
        if batch.status == "cancelling":
            keeps = batch.knobs["cancel_keeps"]
            self._finish(batch, "cancelled", len(batch.lines) // 2 if keeps is None
                         else int(keeps), "batch_cancelled")
        elif batch.status == "validating" and batch.retrieves > polls:
            batch.status = "in_progress"
        elif batch.status == "in_progress" and batch.retrieves > 2 * polls:
            if batch.knobs["fail"]:
                batch.status = "failed"
                batch.errors = [{"code": "invalid_file", "message": "the fake server was told "
                                 "to fail this batch", "param": None, "line": None}]
            elif batch.knobs["expire_after"] is not None:
                self._finish(batch, "expired", int(batch.knobs["expire_after"]),
                             "batch_expired")
            else:
                self._finish(batch, "completed", len(batch.lines), "")

    def _finish(self, batch: _Batch, status: str, answered: int, left_code: str) -> None:
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        error_every = int(batch.knobs["error_every"] or 0)
        invalid_every = int(batch.knobs["invalid_every"] or 0)
        for number, line in enumerate(batch.lines, start=1):
            item: dict[str, Any] = {"id": f"batch_req_{batch.id}_{number}",
                                    "custom_id": line["custom_id"]}
            if number > answered:
                err.append({**item, "response": None, "error": {
                    "code": left_code, "message": f"this request was not executed ({status})"}})
                continue
            if error_every and number % error_every == 0:
                err.append({**item, "error": None, "response": {
                    "status_code": 500, "request_id": f"req_{number}", "body": {"error": {
                        "message": "The server had an error (fake).", "type": "server_error",
                        "param": None, "code": "internal_error"}}}})
                continue
            fault = "badschema" if invalid_every and number % invalid_every == 0 else None
            code, body = self.server.answer_body(line.get("body"), fault)
            self.stats["lines"] += 1
            (out if code == 200 else err).append(
                {**item, "error": None,
                 "response": {"status_code": code, "request_id": f"req_{number}",
                              "body": body}})
        batch.status = status
        batch.counts = {"total": len(batch.lines), "completed": len(out), "failed": len(err)}
        if out:
            batch.output_file_id = self._jsonl(out, f"{batch.id}_output.jsonl")
        if err:
            batch.error_file_id = self._jsonl(err, f"{batch.id}_error.jsonl")

    def _jsonl(self, rows: list[dict[str, Any]], name: str) -> str:
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
        return str(self._file("batch_output", data.encode("utf-8"), name)["id"])

    @staticmethod
    def _view(batch: _Batch) -> dict[str, Any]:
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": batch.status, "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id, "created_at": CREATED,
            "in_progress_at": None, "expires_at": CREATED + 86_400, "finalizing_at": None,
            "completed_at": None, "failed_at": None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None,
            "request_counts": dict(batch.counts), "metadata": batch.metadata,
        }
