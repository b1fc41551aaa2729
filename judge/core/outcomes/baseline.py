"""Baselines and the regression gate: record a run's scores, compare a later run.

A baseline is a small JSON file committed beside the suite (``baselines/<suite>.json``) so a
reviewer sees it change in a diff. Its ``baselineId`` hashes the per-case scores only, so the
same scores give the same id whichever run they came from. Everything here is pure: the
file I/O lives in :mod:`judge.system.baseline_files`.

Arithmetic is exact (integers and :class:`~fractions.Fraction`); the threshold is read as
the decimal a person wrote (``0.05`` is 5 points, not 5.000000000000000277), and means are
rounded half up only for display, never before a comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field, model_validator

from ..formats.models import CaseResult, CaseStatus, Score
from ..scoring.exact import round_half_up
from ..stats.noise import GateTest, NoiseModel, judgment_key
from ..text import seals
from ..text.canonical import sha256_hex
from ..text.errors import ConfigError, RegressionBlocked
from ..text.frozen import Frozen
from ..text.strict_json import strict_document

__all__ = [
    "DEFAULT_THRESHOLD",
    "DIGEST_FIELD",
    "LATER_FIELDS",
    "Baseline",
    "BaselineCase",
    "BaselineComparison",
    "baseline_data",
    "baseline_id",
    "baseline_text",
    "build_baseline",
    "check",
    "compare",
    "content_digest",
    "parse_baseline",
    "pick_primary",
    "sealed_value",
]

DEFAULT_THRESHOLD = 0.05
"""The largest allowed drop, as a fraction of the 0..100 scale: 5 points."""


class BaselineCase(Frozen):
    """One case as the baseline remembers it."""

    status: CaseStatus
    overall_score: Score | None = Field(alias="overallScore")
    band: str | None
    passed: bool | None
    spread: int | None = Field(default=None, ge=0, le=100)
    """Measured judge noise for this case, in points: a drop within threshold + spread is noise."""


class Baseline(Frozen):
    """A suite's recorded scores: the reference a later run is compared with."""

    version: Literal[1] = 1
    suite: str = Field(min_length=1)
    baseline_id: str = Field(alias="baselineId")
    """``<suite>@<first 12 hex of sha256 of the canonical cases>``; the run id is not in it."""
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    models: tuple[str, ...]
    template_id: str | None = Field(None, alias="templateId")
    """The prompt template the recorded run was judged with; absent from files recorded
    before it was kept (a template change then cannot be told). Not part of ``baselineId``."""
    template_hash: str | None = Field(None, alias="templateHash")
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0, le=1)
    """Largest allowed drop as a fraction of 0..100 (0.05 is 5 points)."""
    score: float
    """Mean overallScore of the scored cases, rounded half up to 2 decimals."""
    pass_rate: float = Field(ge=0, le=1, alias="passRate")
    """Passed cases over all cases (an unscored case has not passed), 4 decimals."""
    cases: dict[str, BaselineCase]
    recorded_from: str | None = Field(None, alias="recordedFrom")
    """The run the scores came from; informative only, not part of ``baselineId``."""
    judgments: dict[str, str] | None = None
    """Per case, the cache key of the judgment recorded: a later run that replays the same
    judgment from the cache compares exactly (no noise). Not part of ``baselineId``; absent
    from files recorded before it existed (those compare by the exact rule, with a notice)."""
    noise: NoiseModel | None = None
    """The judge's noise model when one was measured for the recorded run's judge, rubric
    and template; not part of ``baselineId``."""

    @model_validator(mode="after")
    def _id_matches_cases(self) -> Baseline:
        expected = baseline_id(self.suite, self.cases)
        if self.baseline_id != expected:
            raise ValueError(f"baselineId {self.baseline_id!r} does not match the cases "
                             f"(expected {expected!r}): the cases were edited by hand")
        return self


class BaselineComparison(Frozen):
    """The regression gate's verdict: a current run against a baseline."""

    has_regression: bool = Field(alias="hasRegression")
    score_delta: float = Field(alias="scoreDelta")
    """``currentScore - previousScore``, from the exact means, rounded half up to 2 decimals."""
    previous_score: float = Field(alias="previousScore")
    """Baseline mean over the cases scored in both (0.0 when there are none)."""
    current_score: float = Field(alias="currentScore")
    """Current mean over the same cases, so added or removed cases do not move it."""
    compared_cases: int = Field(alias="comparedCases")
    """How many cases were scored in both and make up the two means."""
    baseline_id: str = Field(alias="baselineId")
    blocked_reasons: tuple[str, ...] = Field(alias="blockedReasons")
    """Human sentences; the mean's reason first, then by case id."""
    threshold: float
    regressed_cases: tuple[str, ...] = Field(alias="regressedCases")
    newly_unscored: tuple[str, ...] = Field(alias="newlyUnscored")
    improved_cases: tuple[str, ...] = Field(alias="improvedCases")
    """Rose by more than the threshold, or were unscored and are now scored."""
    missing_cases: tuple[str, ...] = Field(alias="missingCases")
    """In the baseline, not in the current run (a filtered run): reported, not blocked."""
    new_cases: tuple[str, ...] = Field(alias="newCases")
    noise: tuple[str, ...]
    """Dropped by more than the threshold but within threshold + their recorded spread."""
    noise_reasons: tuple[str, ...] = Field((), alias="noiseReasons")
    """One sentence per ``noise`` case, by case id: the drop and the judge's measured noise."""
    test: GateTest | None = None
    """How the verdict was reached (:mod:`judge.core.stats.significance`); None from
    :func:`compare` alone."""


def _rounded(value: Fraction, places: int) -> float:
    """``value`` rounded half up (toward +inf at exactly .5, like ``Math.round``) to ``places``."""
    scale = 10**places
    return float(Fraction(round_half_up(value * scale), scale))


def _threshold_points(threshold: float) -> Fraction:
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be within 0..1 (a fraction of 100 points), "
                         f"got {threshold!r}")
    return Fraction(str(threshold)) * 100


def _points(value: Fraction) -> str:
    """Format points for a sentence: ``5``, ``2.5``, ``0.33``."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{_rounded(value, 2):g}"


def _by_id(results: Iterable[CaseResult]) -> dict[str, CaseResult]:
    found: dict[str, CaseResult] = {}
    for result in results:
        if result.id in found:
            raise ValueError(f"several results for case {result.id!r}: pass one per case "
                             f"(see pick_primary)")
        found[result.id] = result
    return found


def baseline_id(suite: str, cases: Mapping[str, BaselineCase]) -> str:
    """``suite@`` and the first 12 hex digits of the sha256 of the canonical cases."""
    payload = {case_id: case.model_dump(mode="json") for case_id, case in cases.items()}
    return f"{suite}@{sha256_hex(payload)[:12]}"


def pick_primary(results: Iterable[CaseResult], model: str | None) -> list[CaseResult]:
    """One result per case, by case id: ``model``'s lowest sample.

    A panel or ``--samples K`` run keeps several results per case; the baseline follows the
    run's headline model (:func:`judge.core.scoring.panel.headline_of`: ``panel:<method>`` for a
    panel, else ``run.models[0]``) and its lowest sample present, which for a ``--samples K`` run
    is its samples' aggregate (sample -1, by the ``sample_aggregate`` setting). A case judged
    without a model (deterministic) is taken as it is. A case judged only by other panel
    members is left out, so it shows as missing rather than being compared across judges.
    With ``model`` None every judge is eligible and the lowest (model, sample) wins.
    """
    best: dict[str, tuple[tuple[int, str, int], CaseResult]] = {}
    for result in results:
        judge = result.judge
        if judge is None:
            rank = (0, "", 0)
        elif model is None or judge.model == model:
            rank = (0, judge.model, judge.sample)
        else:
            continue
        held = best.get(result.id)
        if held is None or rank < held[0]:
            best[result.id] = (rank, result)
    return [best[case_id][1] for case_id in sorted(best)]


def build_baseline(suite: str, rubric: str, rubric_hash: str, models: Sequence[str],
                   results: Iterable[CaseResult], *, run_id: str | None,
                   threshold: float = DEFAULT_THRESHOLD,
                   spreads: Mapping[str, int] | None = None,
                   noise: NoiseModel | None = None,
                   template: tuple[str, str] | None = None) -> Baseline:
    """Record ``results`` (one per case) as the baseline of ``suite``.

    ``template`` is the recorded run's template id and hash, so a later run judged with
    another template is told apart.

    Raises ValueError on duplicate case ids, on no results, and when no case is scored: a
    baseline with nothing scored could never detect a regression, so it is refused rather
    than silently turning the gate off.
    """
    _threshold_points(threshold)
    by_id = _by_id(results)
    if not by_id:
        raise ValueError(f"no case results to record a baseline of suite {suite!r} from")
    spreads = spreads or {}
    unknown = sorted(set(spreads) - set(by_id))
    if unknown:
        raise ValueError(f"spread given for cases not in the results: {', '.join(unknown)}")
    cases = {
        case_id: BaselineCase(status=r.status, overall_score=r.overall_score, band=r.band,
                              passed=r.passed, spread=spreads.get(case_id))
        for case_id, r in sorted(by_id.items())
    }
    scores = [c.overall_score for c in cases.values()
              if c.status == "scored" and c.overall_score is not None]
    if not scores:
        raise ValueError(f"no case of suite {suite!r} is scored: a baseline needs scores "
                         f"to compare against")
    passed = sum(1 for c in cases.values() if c.passed is True)
    return Baseline(
        suite=suite,
        baseline_id=baseline_id(suite, cases),
        rubric=rubric,
        rubric_hash=rubric_hash,
        models=tuple(models),
        template_id=template[0] if template else None,
        template_hash=template[1] if template else None,
        threshold=threshold,
        score=_rounded(Fraction(sum(scores), len(scores)), 2),
        pass_rate=_rounded(Fraction(passed, len(cases)), 4),
        cases=cases,
        recorded_from=run_id,
        judgments={case_id: key for case_id, r in sorted(by_id.items())
                   if (key := judgment_key(r)) is not None} or None,
        noise=noise,
    )


DIGEST_FIELD = seals.DIGEST_FIELD
"""The file's digest: ``sha256:<hex>`` of the canonical JSON of the baseline (every other field).

Written with the file, so a hand edit (a threshold, a score) is reported, and accepted only
on purpose by ``judge baseline seal``. Under the team secret the file also carries ``seal``,
its HMAC (:mod:`judge.core.text.seals`): a reader with the secret needs it, so an edit whose
digest was recomputed is refused too. Both are the file's, not the value's: parsing checks
and drops them. A file recorded before digests has none and is read as it is without the
secret (refused with it).
"""
_FIX_RECORD = "re-record it with `judge baseline record SUITE`"


LATER_FIELDS = ("templateId", "templateHash")
"""Fields added after digests were: left out of the digest and the file when absent, so a
file recorded before them keeps its digest."""


def sealed_value(b: Baseline) -> dict[str, object]:
    """What a baseline's digest and seal cover: its fields, :data:`LATER_FIELDS` when set."""
    data = b.model_dump(mode="json")
    for later in LATER_FIELDS:
        if data.get(later) is None:
            data.pop(later, None)
    return data


def content_digest(b: Baseline) -> str:
    """``sha256:`` and the hex sha256 of the canonical JSON of :func:`sealed_value`."""
    return seals.NO_SECRET.digest(sealed_value(b))


def baseline_text(b: Baseline, sealer: seals.Sealer = seals.NO_SECRET) -> str:
    """Write the file text, sealed: stable JSON, sorted keys.

    A re-record of equal scores is no diff. ``judgments`` and ``noise`` are left out when
    absent, so a file without them is written exactly as before they existed (the seals
    cover the baseline's value, in which they are None).
    """
    return seals.sealed_text(b, sealer, baseline_data(b), sealed=sealed_value(b))


def baseline_data(b: Baseline) -> dict[str, object]:
    """The file's JSON value, seals aside: the optional fields left out when absent."""
    data = b.model_dump(mode="json")
    for optional in ("judgments", "noise", *LATER_FIELDS):
        if data.get(optional) is None:
            data.pop(optional, None)
    return data


def parse_baseline(text: str, source: str, sealer: seals.Sealer = seals.NO_SECRET, *,
                   check_digest: bool = True) -> Baseline:
    """Parse a baseline file's text; ConfigError naming ``source``, the field and the fix.

    Strict JSON, typed as the schema says. With ``check_digest`` a file whose seals do not
    verify (edited by hand; under the secret, not sealed with it) is refused; ``judge
    baseline seal`` parses without it to accept an edit on purpose.
    """
    data = strict_document(text, source, ConfigError, f"repair the JSON or {_FIX_RECORD}")
    version = data.get("version") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > 1:
        raise ConfigError(f"baseline format {version} is newer than this judgeflow reads (1)",
                          file=source, where="version", fix="upgrade judgeflow")
    suite = data.get("suite") if isinstance(data, dict) else None
    name = suite if isinstance(suite, str) and suite else "SUITE"
    return seals.checked_file(
        data, source, Baseline, sealer if check_digest else None, error=ConfigError,
        what="a baseline", fix=f"correct the field, restore the file from git or {_FIX_RECORD}",
        seal_fix=f"restore it from git, re-record it with `judge baseline record {name}`, or "
                 f"accept the edit on purpose with `judge baseline seal {name}` (with "
                 f"{seals.SECRET_ENV} set when the team uses one)", sealed=sealed_value)


def _unscored_sentence(case_id: str, before: int, result: CaseResult) -> str:
    why = f" ({result.reason})" if result.reason else ""
    return f"{case_id}: scored {before} → {result.status}{why}"


def compare(baseline: Baseline, current: Iterable[CaseResult], *,
            threshold: float | None = None) -> BaselineComparison:
    """Compare ``current`` (one result per case) with ``baseline``.

    A case regressed when it was scored in the baseline and its overallScore fell by more
    than ``threshold * 100`` points (beyond ``threshold * 100 + spread`` when a spread is
    recorded; between the two it is noise), or when it is now unscored. The mean over the
    cases scored in both falling by more than the threshold is a regression too.
    """
    limit_value = baseline.threshold if threshold is None else threshold
    limit = _threshold_points(limit_value)
    now = _by_id(current)
    limit_text = _points(limit)
    regressed: list[str] = []
    unscored: list[str] = []
    improved: list[str] = []
    noise: list[str] = []
    noise_reasons: list[str] = []
    missing: list[str] = []
    case_reasons: list[tuple[str, str]] = []
    before_sum = after_sum = compared = 0
    for case_id, was in sorted(baseline.cases.items()):
        result = now.get(case_id)
        if result is None:
            missing.append(case_id)
            continue
        before = was.overall_score if was.status == "scored" else None
        after = result.overall_score if result.status == "scored" else None
        if before is None:
            if after is not None:
                improved.append(case_id)
            continue
        if after is None:
            unscored.append(case_id)
            case_reasons.append((case_id, _unscored_sentence(case_id, before, result)))
            continue
        before_sum += before
        after_sum += after
        compared += 1
        drop = before - after
        if drop > limit:
            if was.spread is not None and drop <= limit + was.spread:
                noise.append(case_id)
                noise_reasons.append(
                    f"{case_id}: {before} → {after} (-{drop} points) is noise, not a "
                    f"regression: within the judge's measured noise of ±{was.spread} points "
                    f"(threshold {limit_text} + spread {was.spread})")
            else:
                regressed.append(case_id)
                case_reasons.append((case_id, f"{case_id}: {before} → {after} "
                                              f"(-{drop} points, threshold {limit_text})"))
        elif -drop > limit:
            improved.append(case_id)
    reasons = [sentence for _, sentence in sorted(case_reasons)]
    if compared:
        previous = Fraction(before_sum, compared)
        present = Fraction(after_sum, compared)
    else:
        previous = present = Fraction(0)
    if previous - present > limit:
        reasons.insert(0, f"mean score fell by {_points(previous - present)} points "
                          f"({_points(previous)} → {_points(present)}, threshold {limit_text})")
    return BaselineComparison(
        has_regression=bool(reasons),
        score_delta=_rounded(present - previous, 2),
        previous_score=_rounded(previous, 2),
        current_score=_rounded(present, 2),
        compared_cases=compared,
        baseline_id=baseline.baseline_id,
        blocked_reasons=tuple(reasons),
        threshold=limit_value,
        regressed_cases=tuple(regressed),
        newly_unscored=tuple(unscored),
        improved_cases=tuple(improved),
        missing_cases=tuple(missing),
        new_cases=tuple(sorted(set(now) - set(baseline.cases))),
        noise=tuple(noise),
        noise_reasons=tuple(noise_reasons),
    )


def check(baseline: Baseline, current: Iterable[CaseResult], *, threshold: float | None = None,
          block: bool = True) -> BaselineComparison:
    """:func:`compare`, raising RegressionBlocked on a regression when ``block`` is on.

    The promotion hook: call it before a rollout; with ``block=False`` it only
    reports. The raised error carries the comparison as ``.comparison``.
    """
    result = compare(baseline, current, threshold=threshold)
    if block and result.has_regression:
        raise RegressionBlocked(
            f"regression against baseline {result.baseline_id}: "
            + "; ".join(result.blocked_reasons), comparison=result)
    return result
