"""The one regression gate: every door decides regression here, by one precedence and rule.

The doors are ``judge run``, ``judge check``, the Python API, the HTTP API and the pytest
plugin.

Threshold precedence, highest first: a door's flag (``--threshold``) > the environment
(``JUDGE_THRESHOLD``) > the config file (``judge.toml`` / ``[tool.judge]``) > the baseline
file's own ``threshold`` > the default 0.05. A baseline records the threshold it was made
with so that a suite can carry its own tolerance; anything the user set explicitly wins.
Block-on-regression: flag > environment > config file > default on.

Statistics (docs/statistics.md): the verdict comes from
:func:`judge.core.stats.significance.statistical_compare`, given the judge's noise on each side:
the baseline's embedded noise model (or the stored one of the run it was recorded from) and
the current run's stored model (``<baselines>/noise/<key>.json``), measured from the run
itself when it was judged with ``--samples K``. A pure replay compares exactly; re-asked
cases with no noise model are decided on the suite's mean by the paired test alone (no case
listed alone, a notice naming the probe); a baseline file from before judgments were
recorded compares by the exact rule, with a notice.

What may become a baseline: only a *complete* run in which every case was scored. A run
with unscored, missing (cache-miss) or interrupted cases would hide those cases from the
gate forever, so it is refused with the reason.

A verdict always says what it compared (:class:`BaselineRef`, the number of cases) or why
it compared nothing (:data:`NotCompared`). Not compared is never a pass: where a comparison
was due (a baseline under another judge, rubric or template, nothing in common,
misses, a run that did not complete; a missing baseline where one is required, as in CI)
every door exits :data:`EXIT_NOT_COMPARED`. A judge change is compared only when asked
(``--across-judges``, setting ``across_judges``), and the verdict then says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypedDict

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from ...core.formats.models import CaseResult, RunInfo
from ...core.outcomes.baseline import (
    Baseline,
    BaselineComparison,
    build_baseline,
    compare,
    pick_primary,
)
from ...core.scoring.panel import headline_of
from ...core.stats.noise import NoiseModel, SideNoise, measure_noise, noise_key
from ...core.stats.significance import statistical_compare
from ...core.text.errors import ConfigError, JudgeError, UsageError
from ...core.text.frozen import FrozenView
from ...store.runs import RunStore
from ...system.baseline_files import load_baseline, save_baseline
from ...system.noise_files import load_noise
from ..workspace.fingerprints import fingerprint_notice
from ..workspace.workspace import Workspace

__all__ = [
    "EXIT_NOT_COMPARED",
    "EXIT_REGRESSION",
    "BaselineRef",
    "GateOutcome",
    "GateVerdict",
    "NotCompared",
    "baseline_refusal",
    "compare_with_noise",
    "gate",
    "headline_results",
    "identity_changes",
    "make_baseline",
    "measured_spreads",
    "noise_of_run",
    "resolve_threshold",
    "run_headline",
    "side_noise",
]

EXIT_REGRESSION: Final = 1
"""A regression while blocking."""
EXIT_NOT_COMPARED: Final = 5
"""A comparison was due and could not be made (see :data:`DUE`): never a pass."""

GateOutcome = Literal["compared", "baseline-recorded", "not-compared", "skipped"]
"""``compared``; ``baseline-recorded`` (no baseline: this run's was recorded, nothing was
compared); ``not-compared`` (a comparison was due and could not be made: exit 5);
``skipped`` (nothing compared and nothing due: no baseline outside CI that this run could
not become, or a group whose last shard is still to come)."""

NotCompared = Literal["no-baseline", "another-judge", "another-rubric", "another-template",
                      "nothing-in-common", "cache-misses", "run-not-complete",
                      "group-incomplete"]
"""Why a verdict compared nothing."""

class BaselineRef(FrozenView):
    """The baseline a verdict is about: its file, and the judge, rubric and template it holds."""

    file: str
    baseline_id: str = Field(alias="baselineId")
    judge: tuple[str, ...]
    """The judge model(s) the baseline was recorded with."""
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    template_id: str | None = Field(None, alias="templateId")
    """None in a file recorded before templates were kept."""
    template_hash: str | None = Field(None, alias="templateHash")
    recorded_from: str | None = Field(None, alias="recordedFrom")

    @classmethod
    def of(cls, baseline: Baseline, path: Path) -> BaselineRef:
        """What ``baseline`` (read from ``path``) says of itself."""
        return cls(file=str(path), baseline_id=baseline.baseline_id, judge=baseline.models,
                   rubric=baseline.rubric, rubric_hash=baseline.rubric_hash,
                   template_id=baseline.template_id, template_hash=baseline.template_hash,
                   recorded_from=baseline.recorded_from)

    def said(self) -> str:
        """``baselines/x.json (x@abc…: judge M, rubric R 5f5f5f5f5f5f, template T a3a3…)``."""
        template = ("template unknown" if self.template_id is None else
                    f"template {self.template_id} {(self.template_hash or '')[:12]}")
        return (f"{self.file} ({self.baseline_id}: judge {', '.join(self.judge) or '—'}, "
                f"rubric {self.rubric} {self.rubric_hash[:12]}, {template})")


_WIRE_HEAD: Final = ("hasRegression", "scoreDelta", "previousScore", "currentScore",
                     "baselineId", "blockedReasons", "comparedCases")
"""The verdict's first keys, present whether or not anything was compared."""


class GateVerdict(FrozenView):
    """The gate's answer for one run: what it compared, or why it compared nothing.

    The wire form (``--json``, HTTP, the pytest plugin's record) is this model's own
    serializer: the comparison's fields flat at the top, after :data:`_WIRE_HEAD`; reading
    that form back (:meth:`model_validate`) gives the same verdict.
    """

    run: str
    suite: str
    baseline_path: str = Field(alias="baselinePath")
    comparison: BaselineComparison | None
    """None when nothing was compared (see ``outcome``)."""
    baseline_recorded: bool = Field(False, alias="baselineRecorded")
    baseline_id: str | None = Field(None, alias="baselineId")
    skipped: str | None = None
    """Why nothing was compared, in a sentence naming the fix (kept for ``skipped`` outcomes
    too, where nothing was due)."""
    notices: tuple[str, ...] = ()
    """What the verdict assumed or what changed since the baseline — context, not a verdict."""
    outcome: GateOutcome = "compared"
    not_compared: NotCompared | None = Field(None, alias="notCompared")
    against: BaselineRef | None = None
    """The baseline file, its judge, rubric and template (None when there is none)."""
    across_judges: bool = Field(False, alias="acrossJudges")
    """Compared although the judge, rubric or template differs, because it was asked."""
    blocking: bool = True

    @model_validator(mode="before")
    @classmethod
    def _from_wire(cls, data: Any) -> Any:
        """The flat wire form: the comparison's fields gathered back into ``comparison``."""
        if not isinstance(data, dict) or "comparison" in data:
            return data
        names = {info.alias or name for name, info in BaselineComparison.model_fields.items()}
        flat = {k: v for k, v in data.items() if k in names}
        return {**data, "comparison": flat if "threshold" in flat else None}

    @model_serializer(mode="wrap")
    def _wire(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The verdict's JSON door: the comparison's fields flat beside the verdict's own."""
        own: dict[str, Any] = handler(self)
        compared = own.pop("comparison") or {}
        head = dict.fromkeys(_WIRE_HEAD)
        head.update(hasRegression=self.has_regression, baselineId=own.pop("baselineId"),
                    blockedReasons=[], comparedCases=0)
        return {**head, **compared, **own, "blocked": self.blocked}

    @property
    def has_regression(self) -> bool:
        """A regression was found."""
        return self.comparison is not None and self.comparison.has_regression

    @property
    def blocked(self) -> bool:
        """A regression while blocking: the door exits 1."""
        return self.blocking and self.has_regression

    @property
    def compared_cases(self) -> int:
        """Cases scored in both the baseline and the run (0 when nothing was compared)."""
        return 0 if self.comparison is None else self.comparison.compared_cases

    @property
    def exit_code(self) -> int:
        """0, :data:`EXIT_REGRESSION` or :data:`EXIT_NOT_COMPARED` (every door maps to it)."""
        if self.outcome == "not-compared":
            return EXIT_NOT_COMPARED
        return EXIT_REGRESSION if self.blocked else 0

    def headline(self) -> str:
        """One sentence: what was compared with what, or why nothing was."""
        if self.outcome == "baseline-recorded":
            return (f"first baseline recorded, nothing compared: {self.baseline_path} from run "
                    f"{self.run} (commit it: the next run is compared with it)")
        if self.comparison is None:
            return self.skipped or "not compared"
        against = self.against.said() if self.against else self.baseline_path
        across = " (across judges, as asked)" if self.across_judges else ""
        return (f"compared {self.compared_cases} case(s) of run {self.run} with "
                f"{against}{across}")


def resolve_threshold(workspace: Workspace, baseline: Baseline | None) -> float:
    """The threshold by the documented precedence (see the module docstring)."""
    if workspace.sources.get("threshold", "default") != "default" or baseline is None:
        return workspace.settings.threshold
    return baseline.threshold


def headline_results(store: RunStore, run: RunInfo) -> list[CaseResult]:
    """One result per case: the run's headline (panel, a judge's sample median, or its one).

    A complete run that lost a row is refused (DamagedRowError), never compared without it.
    """
    store.check_rows(run)
    return pick_primary(store.iter_results(run.id), headline_of(run)[0])


def run_headline(workspace: Workspace, run_id: str) -> list[CaseResult]:
    """A stored run's headline results, one per case: what the gate compares."""
    with workspace.open_store() as store:
        return headline_results(store, store.get_run(run_id))


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
                                                         run.template_hash), workspace.sealer)


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
                             "(`judge runs list` lists runs)")
    try:
        return build_baseline(run.suite, run.rubric, run.rubric_hash, run.models, results,
                              run_id=run.id, threshold=threshold, spreads=spreads,
                              noise=noise, template=(run.template_id, run.template_hash))
    except ValueError as exc:
        raise UsageError(f"cannot record a baseline from run {run.id}: {exc}",
                         fix="record from a run with scored cases (`judge runs list`)") from None


def identity_changes(baseline: Baseline, run: RunInfo) -> tuple[tuple[NotCompared, str], ...]:
    """What differs between the baseline's judge, rubric and template and the run's.

    A template is compared only when the baseline file records one (files recorded before
    templates were kept do not).
    """
    changes: list[tuple[NotCompared, str]] = []
    if tuple(baseline.models) != tuple(run.models):
        changes.append(("another-judge", f"judge {', '.join(baseline.models) or '—'} → "
                                         f"{', '.join(run.models) or '—'}"))
    if baseline.rubric_hash != run.rubric_hash:
        changes.append(("another-rubric", f"rubric {baseline.rubric} "
                                          f"{baseline.rubric_hash[:12]} → {run.rubric} "
                                          f"{run.rubric_hash[:12]}"))
    if baseline.template_hash is not None and baseline.template_hash != run.template_hash:
        changes.append(("another-template", f"template {baseline.template_id} "
                                            f"{baseline.template_hash[:12]} → "
                                            f"{run.template_id} {run.template_hash[:12]}"))
    return tuple(changes)


def _identity_refusal(baseline: Baseline, run: RunInfo,
                      changes: Sequence[tuple[NotCompared, str]]) -> str:
    return (f"not compared: the baseline {baseline.baseline_id} was recorded under another "
            f"judge, rubric or template ({'; '.join(text for _, text in changes)}): a "
            f"change of judge is not a regression, nor a regression's absence; fix: record "
            f"this run as the baseline once the change is meant (`judge baseline record "
            f"{run.suite}`, and commit the file), or pass --across-judges to compare them "
            f"anyway")


def _misses_refusal(results: Sequence[CaseResult]) -> str | None:
    missing = [r.id for r in results if r.status == "cache_miss"]
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
    return (f"not compared: {len(missing)} case(s) missing from the offline replay ({shown}); "
            f"a gate over the rest could pass what it never saw; fix: judge them once "
            f"where a model is reachable (`judge run` without --offline) and share the cache "
            f"(`judge cache export`)")


def _notices(run: RunInfo, baseline: Baseline, across: Sequence[str]) -> tuple[str, ...]:
    notes = []
    if baseline.suite != run.suite:
        notes.append(f"baseline is of suite {baseline.suite!r}, the run of {run.suite!r}")
    if across:
        notes.append("compared across judges, as asked: " + "; ".join(across))
    if baseline.template_hash is None:
        notes.append(f"the baseline file records no template: a template change cannot be "
                     f"told; re-record it (`judge baseline record {run.suite}`)")
    return tuple(notes)


def _no_baseline(workspace: Workspace, run: RunInfo, results: Sequence[CaseResult],
                 path: Path, record: bool) -> GateVerdict:
    """No baseline file: record this run's (a first run), or say why nothing was compared.

    Where a baseline is required (``CI`` set, or ``require_baseline``), a missing one is a
    failure naming the file to commit, and nothing is recorded: a baseline made in a CI
    checkout is thrown away with it, and a later step there would compare a run with itself.
    """
    base = _base(workspace, run, path)
    if workspace.baseline_required:
        return _nothing(base, "no-baseline",
                        f"not compared: no baseline at {path}, and a baseline is required "
                        f"here (CI); fix: judge the suite where you work (`judge run` records "
                        f"{path} on a first run) and commit that file")
    refusal = baseline_refusal(run, results)
    if not record or refusal is not None:
        why = (f"no baseline recorded: {refusal}" if refusal else
               f"no baseline at {path} (an offline replay records none)")
        return _nothing(base, "no-baseline", f"not compared: {why}", due=False)
    baseline = make_baseline(run, results, workspace.settings.threshold,
                             measured_spreads(results), noise_of_run(workspace, run))
    save_baseline(path, baseline, sealer=workspace.sealer)
    base["baseline_id"], base["against"] = baseline.baseline_id, BaselineRef.of(baseline, path)
    return GateVerdict(**base, comparison=None, outcome="baseline-recorded",
                       baseline_recorded=True,
                       notices=(f"no baseline for suite {run.suite}: recorded {path} from run "
                                f"{run.id}; nothing was compared",))


class _Base(TypedDict, total=False):
    """What every verdict of one gate call says, whatever it decides."""

    run: str
    suite: str
    baseline_path: str
    blocking: bool
    baseline_id: str
    against: BaselineRef


def _base(workspace: Workspace, run: RunInfo, path: Path) -> _Base:
    return _Base(run=run.id, suite=run.suite, baseline_path=str(path),
                 blocking=workspace.settings.block_on_regression)


def _nothing(base: _Base, why: NotCompared, sentence: str, *,
             due: bool = True) -> GateVerdict:
    """A verdict that compared nothing: ``not-compared`` where it was due, else ``skipped``."""
    return GateVerdict(**base, comparison=None, outcome="not-compared" if due else "skipped",
                       not_compared=why, skipped=sentence)


def gate(workspace: Workspace, run: RunInfo, results: Sequence[CaseResult], *,
         baseline_file: Path | None = None, record: bool = True,
         across_judges: bool = False) -> GateVerdict:
    """Compare ``run`` (its headline results) with the suite's baseline.

    Each check below that finds the run cannot be compared returns a *not compared*
    verdict saying why (:data:`NotCompared`); only a run that passes them all is compared.
    With no baseline see :func:`_no_baseline`. A baseline recorded under another judge,
    rubric or template is compared only with ``across_judges`` (or the setting).
    """
    path = baseline_file if baseline_file is not None else workspace.baseline_path(run.suite)
    if baseline_file is not None and not baseline_file.exists():
        raise ConfigError("no such baseline file", file=str(baseline_file),
                          fix="check the path, or drop --baseline to use baselines/<suite>.json")
    base = _base(workspace, run, path)
    if run.status not in ("complete",):
        return _nothing(base, "run-not-complete", f"not compared: run {run.id} is {run.status}")
    if not path.exists():
        return _no_baseline(workspace, run, results, path, record)
    baseline = load_baseline(path, sealer=workspace.sealer)
    against = BaselineRef.of(baseline, path)
    base["baseline_id"], base["against"] = baseline.baseline_id, against
    changes = identity_changes(baseline, run)
    across = across_judges or workspace.settings.across_judges
    if changes and not across:
        return _nothing(base, changes[0][0], _identity_refusal(baseline, run, changes))
    missing = _misses_refusal(results)
    if missing is not None:
        return _nothing(base, "cache-misses", missing)
    comparison, noise_notes = compare_with_noise(workspace, baseline, run, results)
    if comparison.compared_cases == 0 and not comparison.newly_unscored:
        return _nothing(base, "nothing-in-common",
                        f"not compared: no case is scored in both run {run.id} and the "
                        f"baseline {baseline.baseline_id}; fix: run the suite's cases (check "
                        f"--case/--tag filters), or record a baseline of this suite")
    drift = fingerprint_notice(workspace, run, baseline)
    notices = (_notices(run, baseline, [text for _, text in changes]) + noise_notes
               + ((drift,) if drift else ()))
    return GateVerdict(**base, comparison=comparison, across_judges=bool(changes),
                       notices=notices)


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
    if test is not None and test.rule == "paired":
        notes.append(f"no noise model for this judge, rubric and template: decided on the "
                     f"suite's mean from the paired differences of the {test.noisy_cases} "
                     f"re-asked case(s), no case listed alone; `judge judges noise --probe "
                     f"{run.suite_path or run.suite}` (20 calls) measures one, and cases are "
                     f"then listed one by one")
    if test is not None and test.rule == "statistical" and (before is None) != (after is None):
        notes.append("the judge's noise is known on one side only: assumed the same on both")
    return comparison, tuple(notes)
