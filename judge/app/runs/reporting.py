"""Gather a report of a stored run: the operation behind ``judge report`` (and the HTTP API).

Reads the store, the suite's baseline and the suite file's human labels, cases and
transcripts; calls no model. The local cache directory is only read (never written, no
shared tier asked) for the prompts each judge was sent (the sample viewer).
Against another run, that run's headline results are made into a baseline (in memory, never
written) so each case's regression mark is the gate's own rule; against the baseline, the
file at ``baselines/<suite>.json`` is read with the gate's threshold. A judge swap
(``compare``) or a panel run gets the agreement statistics of :mod:`judge.core.stats.agreement`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from pydantic import model_validator

from ... import __version__
from ...cache.disk import JudgmentCache
from ...core.formats.evidence import build_bundle
from ...core.formats.models import CaseResult, JudgeMeta, RunInfo
from ...core.formats.rubric import DEFAULT_BANDS, Band, Rubric, rubric_hash
from ...core.formats.suite import Case, HumanLabel
from ...core.outcomes.baseline import Baseline, build_baseline
from ...core.scoring.check_signals import output_text
from ...core.scoring.panel import headline_of
from ...core.stats.agreement import compare_runs
from ...core.stats.raters import PeopleCategory
from ...core.stats.significance import statistical_compare
from ...core.text.errors import ConfigError, UsageError
from ...core.text.frozen import Frozen
from ...render.prompts import PromptRenderer, input_text
from ...report.data import (
    AgainstView,
    AgreementView,
    CategoryView,
    PairPoints,
    PeopleDisagreement,
    PeoplePoint,
    QualityRow,
    ReportData,
    RubricView,
    band_counts,
    case_moves,
    category_distributions,
    pair_points,
)
from ...report.review_page import review_link
from ...report.samples import CaseSample, PromptMessage, PromptSource, case_sample
from ...report.transcripts import transcripts
from ...store.runs import RunStore
from ...system.baseline_files import load_baseline
from ...system.clock import utc_now
from ...system.resources import open_suite
from ..judges.agreement_history import HISTORY_RUNS, agreement_op
from ..judges.comparing import short_ids
from ..judges.judge_quality import run_quality
from ..workspace.workspace import Workspace
from .gate import (
    compare_with_noise,
    headline_results,
    noise_of_run,
    resolve_threshold,
    side_noise,
)

__all__ = ["DIFF_FIELDS", "ReportData", "ReportRequest", "build_report"]

DIFF_FIELDS = ("suite", "rubric", "rubricHash", "templateId", "templateHash", "models",
               "panel", "seed", "samples", "temperature")
"""Run settings the report compares between the run and the other run."""

PEOPLE_DISAGREEMENTS = 10
"""Disagreements with the people the report lists per judge of the reported run."""


class ReportRequest(Frozen):
    """Which run to report, against what, and which runs' judges to compare with it."""

    run: str
    """Run id or unique prefix."""
    against: str | None = None
    """Another run (id or prefix): each case's move from it to ``run``."""
    baseline: bool = False
    """Each case's move from the suite's baseline to ``run``."""
    compare: tuple[str, ...] = ()
    """Runs of the same suite whose judges are compared with ``run``'s (a judge swap)."""

    @model_validator(mode="after")
    def _one_reference(self) -> ReportRequest:
        if self.against is not None and self.baseline:
            raise ValueError("give --against RUN or --baseline, not both")
        return self


def build_report(workspace: Workspace, request: ReportRequest, *,
                 now: str | None = None) -> ReportData:
    """Everything the report of ``request.run`` shows; UsageError/StoreError on bad input."""
    if request.against is not None and request.baseline:
        raise UsageError("give --against RUN or --baseline, not both",
                         fix="drop one of them")
    notes: list[str] = []
    with workspace.open_store() as store:
        run = store.get_run(request.run)
        results = headline_results(store, run)
        others = [store.get_run(r) for r in request.compare]
        against_run = store.get_run(request.against) if request.against else None
        against_results = (headline_results(store, against_run)
                           if against_run is not None else [])
        judged = _judges(store, run, others)
    if run.status != "complete":
        notes.append(f"run {run.id} is {run.status}: cases it did not reach are missing")
    rubric, bands = _rubric(workspace, run, notes)
    human = _human_labels(workspace, run, notes)
    cases = _suite_cases(workspace, run)
    shown_transcripts = transcripts(cases, results) if cases is not None else {}
    samples = _samples(workspace, run, results, cases)
    against = None
    if against_run is not None:
        against = _against_run(workspace, run, results, against_run, against_results, notes)
    elif request.baseline:
        against = _against_baseline(workspace, run, results)
    agreement = _agreement(judged, bands, human, workspace, notes) if len(judged) >= 2 else None
    people = _people(workspace, run)
    return ReportData(
        generated_at=now or utc_now(), version=__version__, run=run, rubric=rubric,
        headline=headline_of(run)[0], cases=tuple(results), human=human,
        bands=band_counts(results, bands),
        categories=category_distributions(results, [c.id for c in rubric.categories]),
        against=against, agreement=agreement, notes=tuple(notes),
        transcripts=shown_transcripts, samples=samples, judge_quality=run_quality(workspace, run),
        people=people.points, people_disagreements=people.disagreements, quality=people.quality,
        reviewers=people.reviewers)


# -- parts ---------------------------------------------------------------------------------


def _rubric(workspace: Workspace, run: RunInfo,
            notes: list[str]) -> tuple[RubricView, tuple[Band, ...]]:
    try:
        rubric = workspace.run_rubric(run)
    except ConfigError:
        notes.append(f"rubric {run.rubric!r} is not found: bands are read on the default "
                     f"scale")
        bands = tuple(sorted(DEFAULT_BANDS, key=lambda b: b.min))
        return RubricView(id=run.rubric, hash=run.rubric_hash, current_hash=None, bands=bands,
                          categories=()), bands
    current = rubric_hash(rubric)
    if current != run.rubric_hash:
        notes.append(f"rubric {run.rubric!r} changed since the run ({run.rubric_hash[:12]} → "
                     f"{current[:12]}): bands are read on the current file")
    bands = tuple(sorted(rubric.bands, key=lambda b: b.min))
    cats = tuple(CategoryView(id=c.id, weight=c.weight)
                 for c in rubric.categories)
    return RubricView(id=run.rubric, hash=run.rubric_hash, current_hash=current, bands=bands,
                      categories=cats), bands


def _human_labels(workspace: Workspace, run: RunInfo,
                  notes: list[str]) -> dict[str, HumanLabel]:
    if not run.suite_path:
        return {}
    path = workspace.path(run.suite_path)
    if not path.is_file():
        notes.append(f"suite file {run.suite_path} not found: no human labels shown")
        return {}
    try:
        source = open_suite(path, values=workspace.secret_pattern)
        if source.id != run.suite:
            notes.append(f"suite file {path} is now suite {source.id!r}: no human labels shown")
            return {}
        return {c.id: c.human for c in source.cases() if c.human is not None}
    except ConfigError as exc:
        notes.append(f"human labels not read: {exc.message}")
        return {}


class PeopleParts(NamedTuple):
    """The report's sections on agreement with people (empty: no labelled case scored)."""

    points: tuple[PeoplePoint, ...] = ()
    """A point per run and judge, over the suite's newest runs up to this one."""
    disagreements: tuple[PeopleDisagreement, ...] = ()
    """This run's largest, each linked to its case on the review page."""
    quality: tuple[QualityRow, ...] = ()
    """This run's judges against the people: r, ρ, τ (and κ) per score."""
    reviewers: tuple[PeopleCategory, ...] = ()
    """With two or more reviewers: their own agreement and the judge among them."""


def _people(workspace: Workspace, run: RunInfo) -> PeopleParts:
    """Agreement with people over the suite's newest runs up to this one (``judges agreement``).

    Nothing when no run of them scored a labelled case (the report then has no such section).
    """
    with workspace.open_store() as store:
        ids = [i.id for i in store.list_runs(suite=run.suite, limit=None)
               if (i.created_at, i.id) <= (run.created_at, run.id)][:HISTORY_RUNS]
    try:
        history = agreement_op(workspace, ids)
    except UsageError:
        return PeopleParts()
    points = []
    disagreements = [
        PeopleDisagreement(run_id=row.run_id, model=row.model, case_id=d.case_id,
                           category=d.category, human=d.human, judge=d.judge,
                           human_band=d.human_band, judge_band=d.judge_band, size=d.size,
                           link=review_link(row.run_id, d.case_id, d.category))
        for row in history.rows if row.run_id == run.id
        for d in row.agreement.disagreements[:PEOPLE_DISAGREEMENTS]]
    for row in history.rows:
        s = row.agreement.overall
        ci = s.intervals
        k = ci.weighted_kappa if ci else None
        m = ci.mean_abs_diff if ci else None
        points.append(PeoplePoint(
            run_id=row.run_id, model=row.model, rubric=row.rubric, rubric_hash=row.rubric_hash,
            template_id=row.template_id, template_hash=row.template_hash, n=s.n,
            kappa=s.weighted_kappa, kappa_low=k.low if k else None,
            kappa_high=k.high if k else None, mad=s.mean_abs_diff,
            mad_low=m.low if m else None, mad_high=m.high if m else None,
            same_band=s.exact_band_agreement))
    mine = [row for row in history.rows if row.run_id == run.id]
    quality = tuple(
        QualityRow(model=row.model, scores=label, n=s.n, kappa=s.weighted_kappa,
                   pearson_r=s.pearson_r, spearman_rho=s.spearman_rho,
                   kendall_tau=s.kendall_tau)
        for row in mine for label, s in (
            ("overall (final)", row.agreement.overall),
            *((f"{c.category} (AI)", c.ai) for c in row.agreement.categories)) if s.n)
    return PeopleParts(tuple(points), tuple(disagreements), quality,
                       tuple(p for row in mine for p in row.people))


def _suite_cases(workspace: Workspace, run: RunInfo) -> list[Case] | None:
    """The cases of the suite the run judged, from its file (None if it is gone or another)."""
    path = workspace.path(run.suite_path) if run.suite_path else None
    if path is None or not path.is_file():
        return None
    try:
        source = open_suite(path, values=workspace.secret_pattern)
        if source.id != run.suite:
            return None
        return list(source.cases())
    except ConfigError:
        return None


def _cached_prompt(cache: JudgmentCache | None,
                   meta: JudgeMeta) -> tuple[PromptMessage, ...] | None:
    """The messages of the run's own cache entry for this judgment, when it is still there."""
    if cache is None or not meta.cache_key:
        return None
    entry = cache.get(meta.cache_key)
    messages = entry.request.get("messages") if entry is not None else None
    if not isinstance(messages, list) or not messages:
        return None
    out = []
    for m in messages:
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            return None
        out.append(PromptMessage(role=str(m.get("role", "")), content=m["content"]))
    return tuple(out)


class _Rerender:
    """Re-render a case's prompt with the run's template and rubric, if they are unchanged."""

    def __init__(self, workspace: Workspace, run: RunInfo) -> None:
        self.workspace = workspace
        self.renderers: dict[str, PromptRenderer | None] = {}
        try:
            self.rubric: Rubric | None = workspace.run_rubric(run)
        except ConfigError:
            self.rubric = None
        self.rubric_hash = rubric_hash(self.rubric) if self.rubric is not None else None

    def _renderer(self, template_id: str) -> PromptRenderer | None:
        if template_id not in self.renderers:
            try:
                self.renderers[template_id] = self.workspace.renderer(template_id)
            except ConfigError:
                self.renderers[template_id] = None
        return self.renderers[template_id]

    def prompt(self, case: Case, meta: JudgeMeta) -> tuple[tuple[PromptMessage, ...], str]:
        """The messages (empty when they cannot be re-rendered faithfully) and why."""
        renderer = self._renderer(meta.template_id)
        if renderer is None or renderer.template_hash != meta.template_hash:
            return (), (f"the run's cache entry is not here and template {meta.template_id!r} "
                        "changed since the run (or is gone): the prompt cannot be re-rendered "
                        "as sent")
        if self.rubric is None or self.rubric_hash != meta.rubric_hash:
            return (), ("the run's cache entry is not here and the rubric changed since the "
                        "run (or is gone): the prompt cannot be re-rendered as sent")
        try:
            bundle = build_bundle(case.evidence, self.rubric.evidence)
            rendered = renderer.render(self.rubric, case, bundle)
        except (ConfigError, ValueError) as exc:
            return (), f"the prompt cannot be re-rendered: {exc}"
        return (tuple(PromptMessage(role=m["role"], content=m["content"])
                      for m in rendered.messages),
                "re-rendered from the suite file with the run's template and rubric (both "
                "hashes match the run's); the run's cache entry is not here to show the "
                "messages as sent")


def _samples(workspace: Workspace, run: RunInfo, results: Sequence[CaseResult],
             cases: Sequence[Case] | None) -> dict[str, CaseSample]:
    """Each case's bounded input and output and its judge's prompt (the sample viewer).

    The prompt is read back from the run's cache entry (read-only, the local directory only:
    a report asks no shared tier), else re-rendered when template and rubric are unchanged.
    """
    if cases is None:
        return {}
    by_id = {c.id: c for c in cases}
    cache = None
    if workspace.settings.cache_mode != "off":
        try:
            cache = JudgmentCache(workspace.path(workspace.settings.cache_dir), "read-only")
        except UsageError:  # a damaged cache: the prompts are re-rendered instead
            cache = None
    rerender = _Rerender(workspace, run)
    out: dict[str, CaseSample] = {}
    try:
        for r in results:
            case = by_id.get(r.id)
            if case is None:
                continue
            prompt: tuple[PromptMessage, ...] = ()
            source: PromptSource = "none"
            if r.judge is None:
                note = "judged without a model: no prompt"
            elif (cached := _cached_prompt(cache, r.judge)) is not None:
                prompt, source = cached, "cache"
                note = "the messages sent, read back from the run's cache entry"
            else:  # an aggregate has no cache entry of its own
                prompt, note = rerender.prompt(case, r.judge)
                source = "rendered" if prompt else "none"
                if r.judge.aggregate is not None and prompt:
                    note = (f"the {r.judge.aggregate} of {len(r.judge.members)} judgments, "
                            f"each sent these messages (a case's prompt does not depend on "
                            f"the judge or the sample): {note}")
            out[r.id] = case_sample(input_text(case.input), output_text(case.output),
                                    prompt, source, note)
    finally:
        if cache is not None:
            cache.close()
    return out


def _differs(a: RunInfo, b: RunInfo) -> dict[str, tuple[object, object]]:
    da, db = a.model_dump(mode="json"), b.model_dump(mode="json")
    return {k: (da.get(k), db.get(k)) for k in DIFF_FIELDS if da.get(k) != db.get(k)}


def _against_run(workspace: Workspace, run: RunInfo, results: Sequence[CaseResult],
                 other: RunInfo, other_results: Sequence[CaseResult],
                 notes: list[str]) -> AgainstView:
    if other.id == run.id:
        raise UsageError(f"--against names the reported run itself ({run.id})",
                         fix="name an earlier run of the suite (`judge runs list`)")
    if other.suite != run.suite:
        notes.append(f"run {other.id} judged suite {other.suite!r}, run {run.id} "
                     f"{run.suite!r}: only cases with the same id are compared")
    threshold = resolve_threshold(workspace, None)
    try:
        reference = build_baseline(other.suite, other.rubric, other.rubric_hash, other.models,
                                   other_results, run_id=other.id, threshold=threshold)
    except ValueError as exc:
        raise UsageError(f"run {other.id} cannot be compared with: {exc}",
                         fix="name a run with scored cases (`judge runs list`)") from None
    comparison = statistical_compare(reference, results, threshold=threshold,
                                     before=side_noise(noise_of_run(workspace, other)),
                                     after=side_noise(noise_of_run(workspace, run)))
    return AgainstView(kind="run", label=other.id, run=other, comparison=comparison,
                       moves=case_moves(reference, results, comparison),
                       differs=_differs(other, run))


def _against_baseline(workspace: Workspace, run: RunInfo,
                      results: Sequence[CaseResult]) -> AgainstView:
    path = workspace.baseline_path(run.suite)
    if not path.exists():
        raise UsageError(f"no baseline for suite {run.suite!r} at {path}",
                         fix=f"record one (`judge baseline record {run.suite}`), or use "
                             f"--against RUN")
    baseline: Baseline = load_baseline(path, sealer=workspace.sealer)
    comparison, _ = compare_with_noise(workspace, baseline, run, results)
    differs: dict[str, tuple[object, object]] = {}
    if baseline.rubric_hash != run.rubric_hash:
        differs["rubricHash"] = (baseline.rubric_hash, run.rubric_hash)
    if tuple(baseline.models) != tuple(run.models):
        differs["models"] = (list(baseline.models), list(run.models))
    return AgainstView(kind="baseline", label=baseline.baseline_id, baseline_path=str(path),
                       comparison=comparison, moves=case_moves(baseline, results, comparison),
                       differs=differs)


# -- agreement -----------------------------------------------------------------------------


_Judge = tuple[RunInfo, str, list[CaseResult]]


def _judges(store: RunStore, run: RunInfo, others: Sequence[RunInfo]) -> list[_Judge]:
    """Every (run, model) judge of the compared runs and the reported run, with its results."""
    seen = {run.id}
    for other in others:
        if other.id in seen:
            raise UsageError(f"run {other.id} is given twice", fix="give each run once")
        seen.add(other.id)
        if other.suite != run.suite:
            raise UsageError(f"run {other.id} judged suite {other.suite!r}, run {run.id} "
                             f"{run.suite!r}", fix="compare runs of one suite")
    judges: list[_Judge] = []
    for info in (*others, run):  # the compared runs first: "old → new", like --against
        stored = list(store.iter_results(info.id))
        for model in info.models:
            mine = [r for r in stored if r.judge is None or r.judge.model == model]
            judges.append((info, model, mine))
    return judges


def _names(judges: Sequence[_Judge]) -> list[str]:
    """The model when the models differ, else a short run id and the model."""
    models = [model for _, model, _ in judges]
    if len(set(models)) == len(models):
        return models
    prefix = short_ids(list(dict.fromkeys(info.id for info, _, _ in judges)))
    names = [f"{prefix[info.id]}:{model}" for info, model, _ in judges]
    if len(set(names)) < len(names):
        return [f"{info.id}:{model}" for info, model, _ in judges]
    return names


def _overall(results: Sequence[CaseResult]) -> dict[str, int]:
    """Scored model judgments by case id, each case's lowest sample.

    A ``--samples`` run's aggregate (sample -1) then: the score its agreement is computed on.
    """
    best: dict[str, tuple[int, int]] = {}
    for r in results:
        if (r.status == "scored" and r.overall_score is not None and r.judge is not None
                and r.judged_by == "llm"
                and (r.id not in best or r.judge.sample < best[r.id][0])):
            best[r.id] = (r.judge.sample, r.overall_score)
    return {case: score for case, (_, score) in best.items()}


def _agreement(judges: Sequence[_Judge], bands: Sequence[Band],
               human: Mapping[str, HumanLabel], workspace: Workspace,
               notes: list[str]) -> AgreementView:
    names = _names(judges)
    scales: dict[str, Sequence[Band]] = {}
    for name, (info, _, _) in zip(names, judges, strict=True):
        scales[name] = bands if info.rubric == judges[-1][0].rubric else _bands_of(
            workspace, info, bands, notes)
    comparison = compare_runs({n: j[2] for n, j in zip(names, judges, strict=True)}, bands,
                              human=human, judge_bands=scales)
    scores = {n: _overall(j[2]) for n, j in zip(names, judges, strict=True)}
    pairs: list[PairPoints] = []
    for pair in comparison.pairs:
        flips = [f.case_id for f in pair.band_flips]
        pairs.append(pair_points(pair.judge_a, scores[pair.judge_a], pair.judge_b,
                                 scores[pair.judge_b], flips))
    labels = {i: h.overall for i, h in human.items() if h.overall is not None}
    humans = tuple(pair_points("humans", labels, n, scores[n]) for n in names) if labels else ()
    return AgreementView(comparison=comparison, pairs=tuple(pairs),
                         human=tuple(h for h in humans if h.points))


def _bands_of(workspace: Workspace, info: RunInfo, fallback: Sequence[Band],
              notes: list[str]) -> Sequence[Band]:
    try:
        return workspace.run_rubric(info).bands
    except ConfigError:
        notes.append(f"rubric {info.rubric!r} of run {info.id} is not found: its bands are "
                     f"read on the reported run's scale")
        return fallback
