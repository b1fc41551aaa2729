"""A run as a service: status and progress, results page by page, events, cancel.

Events are server-sent (``text/event-stream``): ``progress`` while judging, then ``summary``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from ..app.runs.jobs import ActiveRun, RunView, stored_view
from ..app.runs.pages import MAX_PAGE, Page, results_page
from ..core.formats.models import CaseResult
from .problems import ProblemError, problem_responses
from .state import Served, require_token

__all__ = ["RunId", "router"]

router = APIRouter(tags=["runs"], dependencies=[Depends(require_token)])
RunId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$",
                            description="A run id, or a unique prefix of one.")]


@dataclass(frozen=True)
class _Found:
    job: ActiveRun | None
    view: RunView


async def _find(run_id: RunId, state: Served) -> _Found:
    """The run in this process (live) or in the store; 404 when neither knows it."""
    job = state.jobs.get(run_id)
    if job is not None and job.run is not None:
        return _Found(job, job.view())
    return _Found(None, await asyncio.to_thread(stored_view, state.workspace, run_id))


Found = Annotated[_Found, Depends(_find)]


@router.get("/api/runs/{run_id}", responses=problem_responses(404))
async def get_run(found: Found) -> RunView:
    """The run's status, progress, and once it ended its summary and regression verdict."""
    return found.view


@router.get("/api/runs/{run_id}/cases", responses=problem_responses(404))
def get_run_cases(run_id: RunId, state: Served,
                  offset: Annotated[int, Query(ge=0)] = 0,
                  limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100) -> Page[CaseResult]:
    """The run's stored results in case order (each judge's, each sample's, aggregates)."""
    return results_page(state.workspace, run_id, offset=offset, limit=limit)


@router.get("/api/runs/{run_id}/events", response_class=EventSourceResponse,
            responses=problem_responses(404))
async def get_run_events(found: Found, state: Served) -> AsyncIterable[ServerSentEvent]:
    """``progress`` events while the run judges, then one ``summary`` (the run's view).

    A run that already ended sends its ``summary`` at once.
    """
    redact = state.redact
    if found.job is None:
        yield ServerSentEvent(event="summary", raw_data=redact(found.view.model_dump_json()))
        return
    n = 0
    async for view in found.job.changes():
        n += 1
        if view.active:
            data = view.model_dump_json(include={"id", "status", "progress"})
            yield ServerSentEvent(event="progress", id=str(n), raw_data=redact(data))
        else:
            yield ServerSentEvent(event="summary", id=str(n),
                                  raw_data=redact(view.model_dump_json()))


@router.delete("/api/runs/{run_id}",
               responses=problem_responses(401, 404, 409))
async def cancel_run(found: Found, state: Served) -> RunView:
    """Cancel an active run; answers once it is stored.

    What was judged is kept, the run is ``interrupted``, a new harness call resumes from the
    cache.
    """
    job = state.jobs.cancel(found.view.id)
    if job is None:
        view = found.view
        raise ProblemError(409, "run-not-active", "The run is not active",
                           f"run {view.id} is {view.status}: only an active run can be "
                           "cancelled", run=view.id, suite=view.suite)
    return await job.wait()
