"""The evaluation endpoints: judge a case, run a suite, read runs, feed the monitor.

Run the harness, record and get a baseline, a suite's history, every baseline: each route
calls one operation of :mod:`judge.app`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from ..app.runs.baselines import list_suite_baselines, record_baseline, show_baseline
from ..app.runs.jobs import RunView
from ..app.runs.pages import MAX_PAGE, Page, history_page
from ..app.runs.running import RunRequest
from ..app.workspace.suites_index import SUITE_ID_PATTERN
from ..core.formats.models import RunInfo
from ..core.outcomes.baseline import Baseline
from .problems import ProblemError, problem_responses
from .schemas import BaselineBody, BaselineItem, HarnessAccepted, HarnessBody, RecordedBaseline
from .state import Served, require_token

__all__ = ["SuiteId", "router", "shown"]

router = APIRouter(tags=["eval"], dependencies=[Depends(require_token)])
SuiteId = Annotated[str, Path(pattern=SUITE_ID_PATTERN,
                              description="A suite's id (GET /api/suites lists them).")]


def shown(path: FilePath, root: FilePath) -> str:
    """``path`` relative to the workspace when inside it."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


@router.post(
    "/api/suites/{suite_id}/eval/harness", status_code=202, response_model=None,
    responses={202: {"model": HarnessAccepted, "description": "The run started."},
               200: {"model": RunView, "description": "With ?wait=true: the run ended; "
                     "``regression`` is the gate's verdict (hasRegression, scoreDelta, ...)."},
               **problem_responses(401, 404, 409, 422, 502, 503)})
async def run_harness(suite_id: SuiteId, state: Served, response: Response,
                      body: HarnessBody | None = None,
                      wait: Annotated[bool, Query(
                          description="Answer when the run ends (200), not at once (202).")]
                      = False) -> HarnessAccepted | RunView:
    """Run the suite's harness: judge it, store the run, compare with its baseline."""
    entry = await asyncio.to_thread(state.index.find, suite_id)
    body = body or HarnessBody()
    workspace = state.workspace.with_overrides(body.overrides())
    request = RunRequest(suite=entry.path, tags=tuple(body.tags),
                         complexity=tuple(body.complexity), ids=tuple(body.cases),
                         check=body.check)
    job = await state.jobs.start(workspace, request, entry.id)
    assert job.run is not None
    location = f"/api/runs/{job.run.id}"
    if wait:
        view = await job.wait()
        if view.status == "failed":
            raise ProblemError(502, "judge-failed", "No judgment succeeded", view.reason,
                               run=view.id, suite=view.suite)
        response.status_code = 200
        return view
    response.headers["Location"] = location
    return HarnessAccepted(run=job.run.id, suite=entry.id, location=location,
                           events=f"{location}/events")


@router.post("/api/suites/{suite_id}/eval/baseline", status_code=201,
                      responses=problem_responses(401, 404, 422))
def record_suite_baseline(suite_id: SuiteId, state: Served, response: Response,
                          body: BaselineBody | None = None) -> RecordedBaseline:
    """Record a complete run (default: the suite's latest) as the suite's baseline."""
    entry = state.index.find(suite_id)
    done = record_baseline(state.workspace, entry.id, body.run if body else None)
    response.headers["Location"] = f"/api/suites/{entry.id}/eval/baseline"
    return RecordedBaseline(path=shown(done.path, state.workspace.root), changed=done.changed,
                            run=done.run, baseline=done.baseline)


@router.get("/api/suites/{suite_id}/eval/baseline", responses=problem_responses(404, 422))
def get_suite_baseline(suite_id: SuiteId, state: Served) -> Baseline:
    """The suite's baseline (404 when it has none)."""
    entry = state.index.find(suite_id)
    return show_baseline(state.workspace, entry.id)[1]


@router.get("/api/suites/{suite_id}/eval/history", responses=problem_responses(404))
def get_suite_history(suite_id: SuiteId, state: Served,
                      offset: Annotated[int, Query(ge=0)] = 0,
                      limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 20) -> Page[RunInfo]:
    """The suite's runs, newest first."""
    entry = state.index.find(suite_id)
    return history_page(state.workspace, entry.id, offset=offset, limit=limit)


@router.get("/api/eval/baselines")
def get_baselines(state: Served) -> list[BaselineItem]:
    """Every baseline file of the workspace (an unreadable one with its error)."""
    root = state.workspace.root
    return [BaselineItem(suite=e.suite, path=shown(e.path, root), baseline=e.baseline,
                         error=e.error) for e in list_suite_baselines(state.workspace)]
