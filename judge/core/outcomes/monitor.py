"""The production monitor: sample live judgments, watch the pass rate.

Pure: records come in as mappings (one JSONL line each, read by the CLI), and the verdict
comes out as a frozen value. Thresholds are compared exactly, as the decimals written
(a pass rate of exactly 0.85 is healthy with ``warning_below=0.85``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any, Literal

from pydantic import Field, model_validator

from ..scoring.exact import round_half_up
from ..text.canonical import canonical_json
from ..text.frozen import Frozen

__all__ = [
    "MonitorConfig",
    "MonitorStatus",
    "Outcome",
    "Status",
    "evaluate",
    "is_sampled",
    "outcome",
    "sample",
]

Outcome = Literal["passed", "failed", "unscored"]
"""What one record says about its judgment."""

Status = Literal["healthy", "warning", "critical", "insufficient"]
"""The monitor's verdict: ``insufficient`` until ``min_samples`` scored records are sampled."""


class MonitorConfig(Frozen):
    """Sampling and alert thresholds for the monitor."""

    sample_rate: float = Field(default=0.1, ge=0, le=1)
    """Fraction of records judged by the monitor."""
    seed: int = 0
    """Changes which records are sampled, reproducibly."""
    warning_below: float = Field(default=0.85, ge=0, le=1)
    """A pass rate below this is a warning."""
    critical_below: float = Field(default=0.70, ge=0, le=1)
    """A pass rate below this is critical."""
    min_samples: int = Field(default=20, ge=1)
    """Fewer scored samples than this give ``insufficient``, not a rate to act on."""
    pass_score: int | None = Field(default=60, ge=0, le=100)
    """A record without ``passed`` passes when its ``overallScore`` reaches this; None: never."""

    @model_validator(mode="after")
    def _ordered(self) -> MonitorConfig:
        if self.critical_below > self.warning_below:
            raise ValueError(f"critical_below ({self.critical_below}) must not exceed "
                             f"warning_below ({self.warning_below})")
        return self


class MonitorStatus(Frozen):
    """What the monitor saw and its verdict."""

    seen: int
    sampled: int
    passed: int
    failed: int
    unscored: int
    pass_rate: float | None = Field(alias="passRate")
    """Passed over scored samples (4 decimals, half up); None when nothing sampled is scored."""
    status: Status
    sample_rate: float = Field(alias="sampleRate")
    seed: int
    warning_below: float = Field(alias="warningBelow")
    critical_below: float = Field(alias="criticalBelow")
    min_samples: int = Field(alias="minSamples")
    pass_score: int | None = Field(alias="passScore")


def _key(record: Mapping[str, Any], seed: int) -> bytes:
    record_id = record.get("id")
    ident = str(record_id) if record_id is not None else canonical_json(dict(record))
    return f"{seed}:{ident}".encode()


def is_sampled(record: Mapping[str, Any], config: MonitorConfig) -> bool:
    """Whether ``record`` is in the sample: sha256 of ``"{seed}:{id}"`` below the rate.

    The record's ``id`` names it; without one, its canonical JSON does. The decision depends
    on nothing but the record and the seed, so a record is sampled the same way on every
    run, in any order and in any batch: a seeded draw, but order-independent (no RNG state).
    """
    rate = Fraction(str(config.sample_rate))
    digest = int.from_bytes(hashlib.sha256(_key(record, config.seed)).digest(), "big")
    return digest < rate * 2**256


def sample(records: Iterable[Mapping[str, Any]],
           config: MonitorConfig) -> Iterator[Mapping[str, Any]]:
    """Yield the records :func:`is_sampled` keeps, in input order (deterministic, see there)."""
    return (record for record in records if is_sampled(record, config))


def outcome(record: Mapping[str, Any], pass_score: int | None) -> Outcome:
    """Judge one record: by ``passed`` if it is set, else by ``overallScore >= pass_score``.

    An explicit ``passed`` wins: the core already applied the rubric's own pass mark.
    Neither present (or ``pass_score`` None and no ``passed``): unscored. A value of the
    wrong type is a ValueError, not a silent unscored.
    """
    passed = record.get("passed")
    if passed is not None:
        if not isinstance(passed, bool):
            raise ValueError(f"'passed' must be true, false or null, got {passed!r}")
        return "passed" if passed else "failed"
    score = record.get("overallScore")
    if score is None:
        return "unscored"
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ValueError(f"'overallScore' must be a number or null, got {score!r}")
    if pass_score is None:
        return "unscored"
    return "passed" if score >= pass_score else "failed"


def _status(passed: int, scored: int, config: MonitorConfig) -> Status:
    if scored < config.min_samples:
        return "insufficient"
    rate = Fraction(passed, scored)
    if rate < Fraction(str(config.critical_below)):
        return "critical"
    if rate < Fraction(str(config.warning_below)):
        return "warning"
    return "healthy"


def evaluate(records: Iterable[Mapping[str, Any]], config: MonitorConfig) -> MonitorStatus:
    """Sample ``records`` and judge the pass rate of the sample against the thresholds."""
    counts: dict[Outcome, int] = {"passed": 0, "failed": 0, "unscored": 0}
    seen = sampled = 0
    for record in records:
        seen += 1
        if is_sampled(record, config):
            sampled += 1
            counts[outcome(record, config.pass_score)] += 1
    scored = counts["passed"] + counts["failed"]
    rate = (None if scored == 0
            else float(Fraction(round_half_up(Fraction(counts["passed"] * 10**4, scored)), 10**4)))
    return MonitorStatus(
        seen=seen,
        sampled=sampled,
        passed=counts["passed"],
        failed=counts["failed"],
        unscored=counts["unscored"],
        pass_rate=rate,
        status=_status(counts["passed"], scored, config),
        sample_rate=config.sample_rate,
        seed=config.seed,
        warning_below=config.warning_below,
        critical_below=config.critical_below,
        min_samples=config.min_samples,
        pass_score=config.pass_score,
    )
