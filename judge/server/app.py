"""The FastAPI app of one workspace: its state, its routes, its error answers.

Runs execute in the app's own event loop (:class:`judge.app.runs.jobs.RunJobs`); when the app
stops (its lifespan ends, or ``judge workspace serve`` gets SIGTERM) the active runs are
cancelled and stored ``interrupted`` before it exits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from .. import __version__
from ..app.judges.monitor_live import LiveMonitor
from ..app.runs.jobs import RunJobs
from ..app.workspace.bind import TOKEN_ENV
from ..app.workspace.suites_index import SuiteIndex
from ..app.workspace.workspace import LiteLLMJudges, Workspace
from . import routes_eval, routes_review, routes_runs, routes_service
from .door import DoorLimits, DoorPolicy, allowed_hosts
from .metrics import Metrics
from .problems import document_problems, install_handlers, redacted_responses, server_redactor
from .security import Access, ReviewGrant, WriteGuard
from .state import Evaluations, ServerState

__all__ = ["DESCRIPTION", "create_app", "open_app"]

DESCRIPTION = (
    "judgeflow's harness over HTTP: run a suite and get the regression result, record and "
    "read baselines, a suite's history; runs with progress, server-sent events and cancel; "
    "one-case evaluation; the production monitor. Every route but /healthz, /readyz and "
    "the schema needs `Authorization: Bearer $JUDGE_SERVER_TOKEN` when the server has a "
    "token. The Host header must name the server; bodies are limited (server_max_body, "
    "413). Errors are `application/problem+json` (RFC 9457).")


def create_app(workspace: Workspace, *, token: str | None = None, bind: str | None = None,
               review: ReviewGrant | None = None) -> FastAPI:
    """The app serving ``workspace`` on ``bind`` (None: loopback, in process).

    ``token`` (default: ``JUDGE_SERVER_TOKEN``) guards every route but the probes and the
    schema; ``review`` adds the review page's token, which only reads and labels its run
    (:class:`judge.server.security.Access`). :class:`judge.server.door.DoorLimits` checks
    them, the ``Host`` and the body's size before anything is parsed. No API docs page is
    served (``/docs``, ``/redoc``: their scripts come from a CDN, and a page of this origin
    could ask the review page for its token); ``/openapi.json`` is the contract. The server
    judges runs, so its store is made (or migrated) here, before any request: its reads then
    find it (StoreError when it cannot be opened).
    """
    with workspace.open_store(create=True):
        pass  # created or migrated, and this host's dead runs marked, before any request
    if isinstance(workspace.judges, LiteLLMJudges) and not workspace.judges.process_owned:
        # Many requests and runs at once share LiteLLM's sessions: none may close them.
        workspace = replace(workspace, judges=LiteLLMJudges(process_owned=True))
    redact = server_redactor(workspace.env)
    token = token if token is not None else workspace.env.get(TOKEN_ENV)
    access = Access(token or None, review)
    jobs_box: list[RunJobs] = []
    metrics = Metrics(lambda: len(jobs_box[0].active()) if jobs_box else 0)
    jobs = RunJobs([metrics])
    jobs_box.append(jobs)
    index = SuiteIndex(workspace)
    state = ServerState(workspace=workspace, index=index, jobs=jobs,
                        monitor=LiveMonitor(index), metrics=metrics,
                        guard=WriteGuard(access),
                        redact=redact, evaluations=Evaluations(workspace))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await state.aclose()

    app = FastAPI(title="judgeflow", version=__version__, description=DESCRIPTION,
                  lifespan=lifespan, default_response_class=redacted_responses(redact),
                  docs_url=None, redoc_url=None)
    app.state.judge = state
    policy = DoorPolicy(access=access,
                        hosts=allowed_hosts(bind, workspace.settings.server_hosts),
                        any_address=(bind or "").strip("[]") in {"0.0.0.0", "::"},
                        max_body=workspace.settings.server_max_body)
    app.add_middleware(DoorLimits, policy=policy, spec=lambda: app.openapi())
    install_handlers(app, workspace.root, redact)
    app.include_router(routes_eval.router)
    app.include_router(routes_runs.router)
    app.include_router(routes_service.router)
    app.include_router(routes_review.router)
    plain_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        """JSON door: the OpenAPI document (FastAPI's), with every problem answer in it."""
        if app.openapi_schema is None:
            app.openapi_schema = document_problems(plain_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def open_app(root: Path, env: Mapping[str, str], *, token: str | None = None,
             bind: str | None = None, review: ReviewGrant | None = None) -> FastAPI:
    """The app of the workspace at ``root``, ready: settings read, store opened once.

    What ``judge workspace serve`` builds behind its gate; it raises what opening raises (a bad
    ``judge.toml``: ``ConfigError``; a store that cannot be opened: ``StoreError``).
    """
    return create_app(Workspace.open(root, env=env), token=token, bind=bind, review=review)
