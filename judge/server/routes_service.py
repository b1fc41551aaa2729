"""What a service around the harness needs besides it.

The workspace's suites, one-case evaluation, the production monitor, health, version and
Prometheus metrics.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from .. import __version__
from ..app.judges.monitor_live import IngestReport, MonitorView
from ..app.runs.evaluating import evaluate_case
from ..core.formats.models import CaseResult
from .metrics import CONTENT_TYPE
from .problems import problem_responses
from .routes_eval import SuiteId
from .schemas import EvaluateBody, Health, RecordsBody, SuiteItem, Version
from .state import Served, require_token

__all__ = ["router"]

router = APIRouter()
GUARDED = [Depends(require_token)]
"""Every route here but the probes needs the token when one is set."""


@router.get("/api/suites", tags=["suites"], dependencies=GUARDED)
def get_suites(state: Served) -> list[SuiteItem]:
    """The workspace's suites by id (the ``suites`` setting says where they are)."""
    ws = state.workspace
    return [SuiteItem(id=e.id, path=e.path.as_posix(), cases=e.cases, rubric=e.rubric,
                      error=e.error, baseline=ws.baseline_path(e.id).is_file(), kind=e.kind)
            for e in state.index.entries()]


@router.post("/api/evaluate", tags=["evaluate"], dependencies=GUARDED,
             responses=problem_responses(401, 422, 502))
async def evaluate(body: EvaluateBody, state: Served) -> CaseResult:
    """Judge one case and return its full result (``judge.evaluate``); nothing is stored."""
    ws = state.workspace.with_overrides({"model": [body.model] if body.model else None})
    shared = state.evaluations
    result = await evaluate_case(ws, body.case, rubric=shared.rubric(body.rubric),
                                 cache=shared.cache())
    state.metrics.evaluated(result)
    return result


@router.post("/api/monitor/{suite_id}/records", tags=["monitor"],
             dependencies=GUARDED,
             responses=problem_responses(401, 404, 422, 502))
async def post_monitor_records(suite_id: SuiteId, body: RecordsBody,
                               state: Served) -> IngestReport:
    """Live records in: sampled at ``monitor_rate`` (seeded), the sampled ones judged."""
    report = await state.monitor.ingest(suite_id, body.records)
    state.metrics.monitor_records.inc(report.received)
    for result in report.judged:
        state.metrics.evaluated(result)
    return report


@router.get("/api/monitor/{suite_id}", tags=["monitor"], dependencies=GUARDED,
            responses=problem_responses(404))
def get_monitor(suite_id: SuiteId, state: Served) -> MonitorView:
    """Healthy, warning below 0.85, critical below 0.70 — over the window it covers."""
    return state.monitor.status(suite_id)


@router.get("/healthz", tags=["service"])
async def healthz() -> Health:
    """The process answers (liveness); ``ready`` says whether the workspace is open yet."""
    return Health()


@router.get("/readyz", tags=["service"], responses=problem_responses(503))
async def readyz() -> Health:
    """200 once the workspace is open and every endpoint answers; 503 while starting."""
    return Health()


@router.get("/api/version", tags=["service"], dependencies=GUARDED)
async def version() -> Version:
    """The judgeflow version serving."""
    return Version(version=__version__)


@router.get("/metrics", tags=["service"], dependencies=GUARDED, response_class=Response,
            responses={200: {"content": {CONTENT_TYPE: {}},
                             "description": "The Prometheus text format."}})
def metrics(state: Served) -> Response:
    """Runs, judgments, cache hits, model calls, tokens and judge latency."""
    return Response(state.metrics.render(), media_type=CONTENT_TYPE)
