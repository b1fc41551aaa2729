"""The review page and its API: a run's cases to review, people's labels in and out.

``GET /review/{run}`` is the page (:mod:`judge.report.review_page`); it reads
``GET /api/review/{run}`` and writes ``POST /api/review/{run}/labels`` through the server's
write guard (a bearer token; no cross-origin write), as ``/api/review/{run}/export`` does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field, ValidationError

from ..app.judges.reviewing import export_labels, review_page_data, save_labels
from ..core.formats.labels import GivenLabel
from ..core.text.errors import ConfigError
from ..report.review_page import review_csp, review_html
from .problems import ProblemError, problem_responses
from .routes_runs import RunId
from .state import Served, require_token

__all__ = ["LabelsIn", "router"]

router = APIRouter(tags=["review"])


class LabelsIn(BaseModel):
    """Labels one reviewer gives: per case and category a score or level, agree, a note."""

    reviewer: str = Field(min_length=1, max_length=100)
    labels: list[GivenLabel] = Field(min_length=1, max_length=500)


@router.get("/review/{run_id}", response_class=HTMLResponse, include_in_schema=False)
def review_page(run_id: RunId) -> HTMLResponse:
    """The review page of a run."""
    return HTMLResponse(review_html(run_id), headers={
        "Content-Security-Policy": review_csp(), "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"})


@router.get("/api/review/{run_id}", dependencies=[Depends(require_token)],
            responses=problem_responses(404))
async def review_data(run_id: RunId, state: Served) -> dict[str, Any]:
    """The run's cases as the review page shows them, and the suite's labels so far (JSON)."""
    return await asyncio.to_thread(review_page_data, state.workspace, run_id)


@router.post("/api/review/{run_id}/labels", dependencies=[Depends(require_token)],
             responses=problem_responses(401, 404, 422))
async def post_labels(run_id: RunId, body: LabelsIn, state: Served) -> dict[str, Any]:
    """Store the reviewer's labels (each replaces their earlier one of that category).

    Answers the labels stored, as JSON.
    """
    try:
        saved = await asyncio.to_thread(save_labels, state.workspace, run_id, body.labels,
                                        reviewer=body.reviewer)
    except (ValidationError, ConfigError) as exc:
        raise ProblemError(422, "bad-label", "The label is not valid",
                           _message(exc), run=run_id) from None
    return {"labels": [lb.model_dump(mode="json") for lb in saved]}


@router.post("/api/review/{run_id}/export", dependencies=[Depends(require_token)],
             responses=problem_responses(401, 404))
async def post_export(run_id: RunId, state: Served) -> dict[str, str]:
    """Write the suite's labels to the labels file beside the suite."""
    path = await asyncio.to_thread(export_labels, state.workspace, run_id)
    return {"file": str(path)}


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)


