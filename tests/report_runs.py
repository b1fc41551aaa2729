"""Stored runs for the report tests: real ones judged by the loopback fake judge, hostile ones
and large ones written to the store directly."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

from conftest import EXAMPLE_SUITE, load_fake_server

from judge.app.runs.baselines import record_baseline
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import (
    CaseResult,
    CategoryScore,
    CheckResult,
    CitedEvidence,
    JudgeMeta,
    RunInfo,
    RunTotals,
)
from judge.core.formats.rubric import rubric_hash
from judge.core.scoring.scoring import band_for
from judge.store.runs import RunStore
from judge.system.resources import load_rubric

HIGH = "hosted_vllm/fake-judge+40"
PLAIN = "hosted_vllm/fake-judge"

# Hostile text: markup, script, a script end inside JSON, javascript: URLs, an attribute
# break-out, a style that would hide the page, and bidi controls.
SCRIPT = "<script>window.__pwned = 1; alert(1)</script>"
IMG = "<img src=x onerror=\"window.__pwned = 2; alert(2)\">"
END = "</script><script>window.__pwned = 3; alert(3)</script>"
JS_URL = "javascript:window.__pwned = 4; alert(4)"
ATTR = "\" onmouseover=\"window.__pwned = 5\" x=\""
STYLE = "<style>/*PWNED*/ body { display: none }</style><div style=\"position:fixed;inset:0;" \
        "background:#f00\">PWNED</div>"
BIDI = "safe \u202eexe.tpircs\u202c \u2066isolated\u2069 end"
HOSTILE = (SCRIPT, IMG, END, JS_URL, ATTR, STYLE, BIDI)
EVIL_MODEL = f"evil/{END}"
EVIL_MODEL_B = f"evil-b/{SCRIPT}"
EVIL_CATEGORY = f"cat{END}"
LONG_ID = "case-" + "with-a-name-longer-than-its-column-" * 3


def _workspace(root: Path, **overrides: object) -> Workspace:
    return Workspace.open(root, dict(overrides), env={})


@cache
def example_runs() -> tuple[Path, str, str]:
    """The example suite judged by the +40 fake judge (recorded as the baseline), then by the
    plain one: (workspace, high run, plain run). Made once per test process."""
    root = Path(tempfile.mkdtemp(prefix="judge-report-"))
    atexit.register(shutil.rmtree, root, True)
    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    ids = []
    try:
        for model in (HIGH, PLAIN):
            ws = _workspace(root, model=[model], api_base=f"{server.base_url}/v1")
            report = run_suite(ws, RunRequest(suite=root / "suite.yaml", check=False))
            assert report.run.status == "complete", report
            ids.append(report.run.id)
    finally:
        server.stop()
    record_baseline(_workspace(root), "task-evaluation-example", ids[0])
    return root, ids[0], ids[1]


def _meta(model: str, key: str) -> JudgeMeta:
    return JudgeMeta(model=model, temperature=0.0, seed=42, template_id="judge",
                     template_hash="t" * 64, rubric_hash="r" * 64, cache_key=key, cached=False,
                     prompt_tokens=1200, completion_tokens=300, cost_usd=0.0012)


def _store_run(root: Path, run_id: str, model: str, results: list[CaseResult], *,
               suite: str = "hostile", rubric: str = "task-evaluation",
               suite_path: str | None = None) -> None:
    info = RunInfo(id=run_id, suite=suite, suite_path=suite_path, rubric=rubric,
                   rubric_hash=rubric_hash(load_rubric(rubric)), models=(model,), seed=42,
                   temperature=0.0, template_id="judge", template_hash="t" * 64,
                   created_at="2026-01-01T00:00:00.000000Z")
    with RunStore(_workspace(root).settings.store_url, workspace=root) as store:
        store.create_run(info)
        store.add_results(run_id, results)
        store.finish_run(run_id, status="complete", totals=RunTotals(
            cases=len(results), scored=sum(r.status == "scored" for r in results),
            unscored=sum(r.status == "unscored" for r in results), judgments=len(results),
            judged_anew=len(results), calls=len(results), prompt_tokens=1200 * len(results),
            completion_tokens=300 * len(results), cost_usd=0.0012 * len(results)))


def _case(index: int, model: str, shift: int, *, hostile: bool, excerpt_chars: int = 0,
          rationale_chars: int = 0) -> CaseResult:
    """A scored case (every fourth one unscored when hostile) with cited evidence."""
    case_id = f"case-{index:03d}"
    categories = ("agentPerformance", EVIL_CATEGORY if hostile else "taskOutcomeQuality",
                  "processCompliance")
    weights = (0.3, 0.45, 0.25)
    if hostile and index % 4 == 3:
        return CaseResult(id=case_id, status="unscored", judge=_meta(model, case_id),
                          reason=f"the judge said {SCRIPT} {BIDI}", tags=(IMG,))
    filler = "The agent fixed the bug, added tests and CI is green. " * 40
    items = []
    for k in range(3):
        text = " ".join(HOSTILE) if hostile else filler[:excerpt_chars]
        items.append(CitedEvidence(
            id=f"{ATTR}{k}" if hostile else f"commits:{index}-{k}",
            group="commits", title=SCRIPT if hostile else f"commit {k} of case {index}",
            excerpt=text, refs={"url": JS_URL if hostile else f"https://example.test/{k}",
                                "sha": "64803fb9ec6bc338d02b962dcbdf8d3e88aea9e0"}))
    scores = []
    for n, (name, weight) in enumerate(zip(categories, weights, strict=True)):
        det = (index * 7 + n * 11) % 81 + 10
        ai = min(100, max(0, (index * 13 + n * 5) % 91 + shift))
        final = round(0.7 * det + 0.3 * ai)
        rationale = (f"{BIDI} {SCRIPT} {STYLE}" if hostile
                     else (f"Category {name}: " + filler)[:rationale_chars])
        scores.append(CategoryScore(category=name, deterministic_score=det, ai_score=ai,
                                    final_score=final, weight=weight, band=band_for(final),
                                    rationale=rationale,
                                    evidence=(items[n].id, f"missing{END}" if hostile
                                              else items[0].id)))
    overall = round(sum(s.final_score * w for s, w in zip(scores, weights, strict=True)
                        if s.final_score is not None))
    checks = (CheckResult(type="regex", value=JS_URL, category=None, passed=False,
                          detail=STYLE),) if hostile else ()
    return CaseResult(id=case_id, status="scored", overall_score=overall,
                      band=band_for(overall), passed=overall >= 60,
                      category_scores=tuple(scores), judge=_meta(model, case_id),
                      evidence=tuple(items), checks=checks,
                      tags=(STYLE, BIDI) if hostile else ("bugfix", "backend"))


def hostile_runs(root: Path, suite_path: str | None = None) -> tuple[str, str]:
    """Two runs of a suite whose every text is hostile, by two hostile-named judges (their
    suite file, ``suite_path``, written by the caller if given)."""
    a, b = "20260101T000000-aaaaaa", "20260101T000001-bbbbbb"
    _store_run(root, a, EVIL_MODEL_B, [_case(i, EVIL_MODEL_B, 20, hostile=True)
                                       for i in range(8)], suite_path=suite_path)
    _store_run(root, b, EVIL_MODEL, [_case(i, EVIL_MODEL, 0, hostile=True) for i in range(8)],
               suite_path=suite_path)
    return a, b


def long_id_run(root: Path) -> str:
    """A run of four cases whose ids, tags and judge name are longer than any column (each
    case has a tag of one 120-character word)."""
    run_id, model = "20260103T000000-cccccc", "hosted_vllm/" + "a-judge-with-a-long-name-" * 3
    results = [_case(i, model, 0, hostile=False, excerpt_chars=80, rationale_chars=80)
               .model_copy(update={"id": f"{LONG_ID}{i}", "tags": ("x" * 120, "backend")})
               for i in range(4)]
    _store_run(root, run_id, model, results, suite="long")
    return run_id


def large_runs(root: Path, cases: int = 200) -> tuple[str, str]:
    """Two runs of ``cases`` cases with rationales and excerpts at their stored bounds."""
    a, b = "20260102T000000-aaaaaa", "20260102T000001-bbbbbb"
    for run_id, model, shift in ((a, "judge-a", 10), (b, "judge-b", 0)):
        _store_run(root, run_id, model, [
            _case(i, model, shift, hostile=False, excerpt_chars=500, rationale_chars=1000)
            for i in range(cases)], suite="large")
    return a, b
