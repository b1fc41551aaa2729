"""The one regression gate: every door decides regression here, by one precedence and rule.

The doors are ``judge run``, ``judge check``, the Python API, the HTTP API and the pytest
plugin.

Threshold precedence, highest first: a door's flag (``--threshold``) > the environment
(``JUDGE_THRESHOLD``) > the config file (``judge.toml`` / ``[tool.judge]``) > the baseline
file's own ``threshold`` > the default 0.05. A baseline records the threshold it was made
with so that a suite can carry its own tolerance; anything the user set explicitly wins.
Block-on-regression: flag > environment > config file > default on.

Statistics (issue 28, docs/statistics.md): the verdict comes from
:func:`judge.core.significance.statistical_compare`, given the judge's noise on each side:
the baseline's embedded noise model (or the stored one of the run it was recorded from) and
the current run's stored model (``<baselines>/noise/<key>.json``), measured from the run
itself when it was judged with ``--samples K``. A pure replay compares exactly; re-asked
cases with no noise estimate fall back to the exact rule with a loud notice; a baseline file
from before judgments were recorded compares as it always did, with a notice.

What may become a baseline: only a *complete* run in which every case was scored. A run
with unscored, missing (cache-miss) or interrupted cases would hide those cases from the
gate forever, so it is refused with the reason.

A baseline is the suite's *under its judge* (issue 33): a run judged by another judge
(other models) is not compared with it — the move would be the judges' disagreement, not a
regression — and the verdict says so and how to compare anyway (``--across-judges``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from ..core.baseline import Baseline, BaselineComparison, build_baseline, compare, pick_primary
from ..core.errors import ConfigError, JudgeError, UsageError
from ..core.frozen import FrozenView
from ..core.models import CaseResult, RunInfo
from ..core.noise import NoiseModel, SideNoise, measure_noise, noise_key
from ..core.panel import headline_of
from ..core.significance import statistical_compare
from ..store.runs import RunStore
from ..system.baseline_files import load_baseline, save_baseline
from ..system.noise_files import load_noise
from .fingerprints import fingerprint_notice
from .workspace import Workspace

__all__ = [
    "GateVerdict",
    "baseline_refusal",
    "compare_with_noise",
    "gate",
    "headline_results",
    "judge_mismatch",
    "make_baseline",
    "measured_spreads",
    "noise_of_run",
    "resolve_threshold",
    "side_noise",
]


class GateVerdict(FrozenView):
    """The gate's answer for one run: compared, or a baseline recorded, or skipped (why)."""

    run: str
    suite: str
    baseline_path: str = Field(alias="baselinePath")
    comparison: BaselineComparison | None
    """None when nothing was compared (a baseline was just recorded, or the run cannot be
    compared: see ``skipped``)."""
    baseline_recorded: bool = Field(False, alias="baselineRecorded")
    baseline_id: str | None = Field(None, alias="baselineId")
    skipped: str | None = None
    """Why there is no comparison and no baseline was recorded."""
    notices: tuple[str, ...] = ()
    """What changed since the baseline (rubric, judge, suite) — context, not a verdict."""
    blocking: bool = True

    @property
    def has_regression(self) -> bool:
        """A regression was found."""
        return self.comparison is not None and self.comparison.has_regression

    @property
    def blocked(self) -> bool:
        """A regression while blocking: the door exits 1."""
        return self.blocking and self.has_regression

    def public(self) -> dict[str, Any]:
        """The one JSON shape every door prints: the wire's fields in camelCase, flat."""
        body: dict[str, Any] = {
            "hasRegression": self.has_regression, "scoreDelta": None, "previousScore": None,
            "currentScore": None, "baselineId": self.baseline_id, "blockedReasons": [],
        }
        if self.comparison is not None:
            body.update(self.comparison.model_dump(mode="json"))
        body.update({"run": self.run, "suite": self.suite, "baselinePath": self.baseline_path,
                     "baselineRecorded": self.baseline_recorded, "skipped": self.skipped,
                     "notices": list(self.notices), "blocked": self.blocked})
        return body


def resolve_threshold(workspace: Workspace, baseline: Baseline | None) -> float:
    """The threshold by the documented precedence (see the module docstring)."""
    if workspace.sources.get("threshold", "default") != "default" or baseline is None:
        return workspace.settings.threshold
    return baseline.threshold


def headline_results(store: RunStore, run: RunInfo) -> list[CaseResult]:
    """One result per case: the run's headline (panel, a judge's sample median, or its one)."""
    return pick_primary(store.iter_results(run.id), headline_of(run)[0])


def measured_spreads(results: Iterable[CaseResult]) -> dict[str, int]:
    """Each case's measured judge noise, from a run judged with ``--samples K``."""
    return {r.id: r.spread for r in results if r.spread is not None}


def baseline_refusal(run: RunInfo, results: Sequence[CaseResult]) -> str | None:
    """Why this run may not become a baseline, or None when it may (the one rule)."""
    if run.status != "complete":
        return f"run {run.id} is {run.status}: a baseline needs a complete run"
    if not any(r.status == "scored" for r in results):
        return (f"no case of suite {run.suite!r} is scored in run {run.id}: such a baseline "
                f"could never catch a drop")
    unscored = sum(r.status == "unscored" for r in results)
    missing = sum(r.status == "cache_miss" for r in results)
    if unscored or missing:
        return (f"run {run.id} has {unscored} unscored and {missing} missing case(s): "
                f"a baseline from it would hide them from the gate")
    return None


def noise_of_run(workspace: Workspace, run: RunInfo) -> NoiseModel | None:
    """The judge's noise for ``run``'s headline judge, rubric and template.

    Measured from the run's own samples when it was judged with ``--samples K``, else the
    stored model.
    """
    model = headline_of(run)[0]
    if model is None or model.startswith("panel:"):
        return None
    if run.samples > 1:
        with workspace.open_store() as store:
            measured = measure_noise(store.iter_results(run.id), model=model,
                                     rubric_hash=run.rubric_hash, template_id=run.template_id,
                                     template_hash=run.template_hash, suite=run.suite,
                                     source=f"samples of run {run.id}", runs=(run.id,))
        if measured is not None:
            return measured
    return load_noise(workspace.baselines_dir, noise_key(model, run.rubric_hash,
                                                         run.template_hash))


def side_noise(model: NoiseModel | None) -> SideNoise | None:
    """The per-ask spread of the overall score a comparison assumes, with its source."""
    if model is None:
        return None
    source = (f"{model.model}, {model.source}: sd {model.overall.sd:.2f} points "
              f"(95 % {model.overall.low:.2f}-{model.overall.high:.2f}) over {model.cases} "
              f"cases, {model.asks} asks")
    return SideNoise(sd=model.overall.sd, df=model.overall.df, source=source)


def make_baseline(run: RunInfo, results: Sequence[CaseResult], threshold: float,
                  spreads: dict[str, int] | None = None,
                  noise: NoiseModel | None = None) -> Baseline:
    """The baseline of ``run``; UsageError naming the reason when the run may not be one."""
    refusal = baseline_refusal(run, results)
    if refusal is not None:
        raise UsageError(f"cannot record a baseline: {refusal}",
                         fix="judge the suite until every case is scored, then record "
                             "(`judge history` lists runs)")
    try:
        return build_baseline(run.suite, run.rubric, run.rubric_hash, run.models, results,
                              run_id=run.id, threshold=threshold, spreads=spreads,
                              noise=noise)
    except ValueError as exc:
        raise UsageError(f"cannot record a baseline from run {run.id}: {exc}",
                         fix="record from a run with scored cases (`judge history`)") from None


def _notices(baseline: Baseline, run: RunInfo) -> tuple[str, ...]:
    notes = []
    if baseline.suite != run.suite:
        notes.append(f"baseline is of suite {baseline.suite!r}, the run of {run.suite!r}")
    if baseline.rubric_hash != run.rubric_hash:
        notes.append(f"the rubric changed since the baseline ({baseline.rubric} "
                     f"{baseline.rubric_hash[:12]} → {run.rubric} {run.rubric_hash[:12]})")
    if tuple(baseline.models[:1]) != tuple(run.models[:1]):
        notes.append(f"the judge changed since the baseline "
                     f"({', '.join(baseline.models) or '—'} → {', '.join(run.models) or '—'})")
    return tuple(notes)


def judge_mismatch(baseline: Baseline, run: RunInfo) -> str | None:
    """Why ``run`` is not compared with ``baseline`` (another judge), or None."""
    if tuple(baseline.models) == tuple(run.models):
        return None
    return (f"not compared: the baseline {baseline.baseline_id} was recorded by judge "
            f"{', '.join(baseline.models) or '—'}, this run was judged by "
            f"{', '.join(run.models) or '—'} (a judge change is not a regression); fix: "
            "pass --across-judges to compare them anyway, or record this judge's run as the "
            "baseline with `judge baseline record SUITE`")


def gate(workspace: Workspace, run: RunInfo, results: Sequence[CaseResult], *,
         baseline_file: Path | None = None, record: bool = True,
         across_judges: bool = False) -> GateVerdict:
    """Compare ``run`` (its headline results) with the suite's baseline.

    With no baseline at the default place and ``record``, one is recorded from this run
    when the run may be a baseline (:func:`baseline_refusal`); otherwise the verdict says
    why it was skipped. A run that is not complete is never compared, nor one judged by
    another judge than the baseline's unless ``across_judges`` (:func:`judge_mismatch`).
    """
    path = baseline_file if baseline_file is not None else workspace.baseline_path(run.suite)
    blocking = workspace.settings.block_on_regression
    base = {"run": run.id, "suite": run.suite, "baselinePath": str(path), "blocking": blocking}
    if baseline_file is not None and not baseline_file.exists():
        raise ConfigError("no such baseline file", file=str(baseline_file),
                          fix="check the path, or drop --baseline to use baselines/<suite>.json")
    if run.status not in ("complete",):
        return GateVerdict(**base, comparison=None,
                           skipped=f"run {run.id} is {run.status}: not compared with the "
                                   f"baseline")
    if not path.exists():
        refusal = baseline_refusal(run, results)
        if not record or refusal is not None:
            return GateVerdict(**base, comparison=None,
                               skipped=f"no baseline recorded: {refusal}" if refusal else
                               f"no baseline at {path}")
        baseline = make_baseline(run, results, workspace.settings.threshold,
                                 measured_spreads(results), noise_of_run(workspace, run))
        save_baseline(path, baseline)
        # Compared with itself: no regression, and every door shows the same fields.
        return GateVerdict(**base, comparison=compare(baseline, results),
                           baseline_recorded=True, baseline_id=baseline.baseline_id,
                           notices=(f"no baseline for suite {run.suite}: recorded {path} from "
                                    f"run {run.id}",))
    baseline = load_baseline(path)
    mismatch = None if across_judges else judge_mismatch(baseline, run)
    if mismatch is not None:
        return GateVerdict(**base, comparison=None, baseline_id=baseline.baseline_id,
                           skipped=mismatch)
    comparison, noise_notes = compare_with_noise(workspace, baseline, run, results)
    drift = fingerprint_notice(workspace, run, baseline)
    return GateVerdict(**base, comparison=comparison, baseline_id=baseline.baseline_id,
                       notices=_notices(baseline, run) + noise_notes
                       + ((drift,) if drift else ()))


def _recorded_noise(workspace: Workspace, baseline: Baseline) -> NoiseModel | None:
    """The baseline side's noise: embedded in the file, else that of the run it came from."""
    if baseline.noise is not None or baseline.recorded_from is None:
        return baseline.noise
    try:
        with workspace.open_store() as store:
            recorded = store.get_run(baseline.recorded_from)
    except JudgeError:
        return None
    return noise_of_run(workspace, recorded)


def compare_with_noise(workspace: Workspace, baseline: Baseline, run: RunInfo,
                       results: Sequence[CaseResult]) -> tuple[BaselineComparison, tuple[str, ...]]:
    """The comparison by the statistical gate, and the notices saying what it assumed."""
    threshold = resolve_threshold(workspace, baseline)
    if baseline.judgments is None and baseline.noise is None:
        return compare(baseline, results, threshold=threshold), (
            "the baseline file records no judgments and no noise model (recorded before "
            "judgeflow compared with the judge's noise): compared by the exact rule, so a "
            "re-asked judge's noise can show as regression; re-record it with `judge "
            "baseline record` to compare with the judge's noise",)
    before = side_noise(_recorded_noise(workspace, baseline))
    after = side_noise(noise_of_run(workspace, run))
    comparison = statistical_compare(baseline, results, threshold=threshold, before=before,
                                     after=after)
    notes: list[str] = []
    test = comparison.test
    if test is not None and test.warning:
        notes.append(f"WARNING: {test.warning}")
    if test is not None and test.rule == "statistical" and (before is None) != (after is None):
        notes.append("the judge's noise is known on one side only: assumed the same on both")
    return comparison, tuple(notes)
