"""``judge judges import``: judgments recorded elsewhere, stored as runs of their judges.

Each judge named in the file becomes one complete run of the suite, marked imported
(settings ``imported``, the file's name and sha256 and the scale; template ``imported`` with
the file's digest), so ``judge judges agreement``, ``compare``, ``calibrate`` and ``report`` read it
as any run, offline. The core scores each case from the imported AI scores and the suite's
deterministic signals, as it scores a live verdict; with raw samples each is stored as a
sample and the run's sample aggregate (``sample_aggregate``) heads the case, as a
``--samples K`` run. Nothing enters the judgment cache: an imported judgment has no request
behind it, so it can never be served to a live run. The whole file is read and checked
before anything is stored (exit 2 naming the line and the field, nothing written).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Final

from ...core.formats.limits import MAX_RECORDED_BYTES
from ...core.formats.models import (
    AdvisoryScore,
    CaseResult,
    JudgeMeta,
    RunInfo,
    RunSettings,
    RunTotals,
)
from ...core.formats.recorded import Recorded, Scale, parse_recorded, parse_scale
from ...core.formats.rubric import Rubric, rubric_hash
from ...core.formats.suite import Case
from ...core.scoring.check_signals import deterministic_signals
from ...core.scoring.panel import SAMPLE_AGGREGATE, aggregate
from ...core.scoring.scoring import level_score, score_case
from ...core.text.errors import UsageError
from ...system.clock import new_run_id, utc_now
from ...system.input_files import read_input
from ...system.resources import open_suite
from ..workspace.workspace import Workspace

__all__ = ["IMPORTED_TEMPLATE", "ImportedRun", "import_judgments"]

IMPORTED_TEMPLATE: Final = "imported"
"""The template id of an imported run: no prompt of ours produced it."""


@dataclass(frozen=True)
class ImportedRun:
    """One judge's run made from the file."""

    run: RunInfo
    cases: int
    """Cases of the suite the judge scored."""
    missing: int
    """LLM-judged cases of the suite the file has no judgment of."""


def _meta(judge: str, digest: str, rubric_digest: str, sample: int) -> JudgeMeta:
    return JudgeMeta(model=judge, output_mode=IMPORTED_TEMPLATE, temperature=0.0, seed=None,
                     sample=sample, template_id=IMPORTED_TEMPLATE, template_hash=digest,
                     rubric_hash=rubric_digest, cache_key="", cached=False)


def _scored(case: Case, rubric: Rubric, scores: dict[str, int], rationale: str,
            meta: JudgeMeta) -> CaseResult:
    """One sample's result: the core's score of the imported AI scores and the signals."""
    signals, checks = deterministic_signals(case, rubric)
    level = {c: next((lv.name for lv in rubric.levels if level_score(rubric, lv.name) == s),
                     None) for c, s in scores.items()} if rubric.style == "levels" else {}
    advisory = {c: AdvisoryScore(score=s, level=level.get(c), rationale=rationale)
                for c, s in scores.items()}
    score = score_case(rubric, signals, advisory)
    return CaseResult(id=case.id, status=score.status, overall_score=score.overall_score,
                      band=score.band, passed=score.passed,
                      category_scores=score.category_scores, reason=score.reason,
                      judged_by="llm", judge=meta, checks=tuple(checks), tags=case.tags,
                      complexity=case.complexity)


def _results(record: Recorded, case: Case, rubric: Rubric, digest: str, samples: int,
             method: str) -> list[CaseResult]:
    """A case's stored results: each sample, then (K >= 2) their aggregate."""
    rubric_digest = rubric_hash(rubric)
    rationale = record.rationale or "imported judgment"
    own = [_scored(case, rubric, dict(s), rationale, _meta(record.judge, digest, rubric_digest,
                                                            k))
           for k, s in enumerate(record.samples)]
    if samples < 2:
        return own
    signals, _ = deterministic_signals(case, rubric)
    base = _meta(record.judge, digest, rubric_digest, SAMPLE_AGGREGATE)
    head = aggregate([("", r) for r in own], rubric, signals, base, model=record.judge,
                     sample=SAMPLE_AGGREGATE, method=method,
                     what=f"{len(own)} samples", samples_spread=True)
    return [*own, head]


def _check_cases(records: Sequence[Recorded], cases: dict[str, Case], source: str,
                 suite: str) -> None:
    for record in records:
        case = cases.get(record.case)
        if case is None:
            raise UsageError(f"case {record.case!r} is not in suite {suite!r}", file=source,
                             where=f"line {record.line}: case",
                             fix="import judgments of the suite's cases (or pass its suite)")
        if case.judged_by != "llm":
            raise UsageError(f"case {record.case!r} is judged deterministically in suite "
                             f"{suite!r}: no judge scores it", file=source,
                             where=f"line {record.line}: case",
                             fix="leave the case out of the file")


def import_judgments(workspace: Workspace, file: Path, suite_file: Path, *,
                     scale: str | None = None,
                     now: Callable[[], str] = utc_now) -> list[ImportedRun]:
    """Store the file's judgments as one imported run per judge; the runs, in file order."""
    path, suite_path = workspace.path(file), workspace.path(suite_file)
    source = open_suite(suite_path)
    rubric = workspace.rubric(default=source.rubric)
    scale_of = parse_scale(scale) if scale else Scale(Fraction(0), Fraction(100))
    text = read_input(path, UsageError, MAX_RECORDED_BYTES)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    records = parse_recorded(text.splitlines(), rubric, scale_of, str(file))
    cases = {c.id: c for c in source.cases()}
    _check_cases(records, cases, str(file), source.id)
    judges = list(dict.fromkeys(r.judge for r in records))
    method = workspace.settings.sample_aggregate
    llm_cases = sum(c.judged_by == "llm" for c in cases.values())
    made: list[ImportedRun] = []
    with workspace.open_store(create=True) as store:
        for judge in judges:
            mine = [r for r in records if r.judge == judge]
            samples = max(len(r.samples) for r in mine)
            results = [res for r in mine
                       for res in _results(r, cases[r.case], rubric, digest, samples, method)]
            run = _run_info(source.id, suite_file, rubric, judge, samples, method, digest,
                            file, scale_of, now)
            store.create_run(run)
            store.add_results(run.id, results)
            heads = [r for r in results if r.judge is not None
                     and r.judge.sample == (SAMPLE_AGGREGATE if samples >= 2 else 0)]
            scored = sum(r.status == "scored" for r in heads)
            finished = store.finish_run(run.id, status="complete", totals=RunTotals(
                cases=len(heads), scored=scored, unscored=len(heads) - scored,
                judgments=sum(len(r.samples) for r in mine)))
            made.append(ImportedRun(run=finished, cases=len(mine),
                                    missing=llm_cases - len(mine)))
    return made


def _run_info(suite: str, suite_path: Path, rubric: Rubric, judge: str, samples: int,
              method: str, digest: str, file: Path, scale: Scale,
              now: Callable[[], str]) -> RunInfo:
    created = now()
    return RunInfo(
        id=new_run_id(created), suite=suite, suite_path=str(suite_path), rubric=rubric.id,
        rubric_hash=rubric_hash(rubric), models=(judge,), seed=None, temperature=0.0,
        samples=samples, template_id=IMPORTED_TEMPLATE, template_hash=digest,
        created_at=created, settings=RunSettings(
            imported=True, source=file.name, source_sha256=digest, scale=str(scale), llm=True,
            sample_aggregate=method if samples >= 2 else None))
