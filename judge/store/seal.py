"""Seals of the run store: a digest on every stored row, checked on read.

A flipped bit in ``.judge/judge.db`` used to change what ``export``, ``show`` and ``check``
report (a case 63 → 62) with exit 0. Each row (runs, results, labels) carries a ``seal``
(:class:`judge.core.text.seals.Sealer`: an HMAC-SHA256 under the team secret,
``JUDGE_CACHE_SECRET``, when one is set, else a plain SHA-256) over the canonical JSON of the
row's key, its stored value and its format version. A read checks the seal of every row it
returns and that the queryable copies (status, score, band, passed; a run's suite and status)
agree with the value, so a damaged row is reported with its run and case, never shown.

Decisions: the seal binds the row's key (run, case, model, sample), so a row moved to
another run or case does not verify; the plain digest catches damage (a flip, a torn
write) and the keyed one also catches an edit by someone without the secret. A row written
before sealing (``seal`` NULL) is *unsealed*: read as before without the secret, refused
with it (its seal may have been removed to pass an edit); a row sealed under the secret and
read without it is reported, not trusted. A deleted row has no seal to fail: a complete
run's sealed totals say how many cases and judgments it stored, and fewer found is damage
(:func:`missing_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.formats.models import RunInfo
from ..core.scoring.panel import headline_of
from ..core.text.errors import StoreError

__all__ = ["Damage", "DamagedRowError", "check_copies", "missing_rows", "run_copies_ok"]


@dataclass(frozen=True)
class Damage:
    """One row that does not verify: which run, which case (None: the run row), and why."""

    run: str
    case: str | None
    model: str
    sample: int
    reason: str
    rows: bool = False
    """The damage is in which rows the run has (one was deleted), not in one row."""
    label: str | None = None
    """A label row's key (suite, case, category, reviewer) when the row is a label."""

    def sentence(self) -> str:
        """``run R case C (model M, sample S): why``."""
        if self.label is not None:
            return f"label of {self.label}: {self.reason}"
        where = f"run {self.run!r}"
        if self.case is not None:
            where += f" case {self.case!r}"
            if self.model:
                where += f" (model {self.model}, sample {self.sample})"
        else:
            where += " (its stored results)" if self.rows else " (the run's settings and totals)"
        return f"{where}: {self.reason}"


class DamagedRowError(StoreError):
    """A stored row whose seal does not match: the value is not shown (exit code 2)."""

    def __init__(self, url: str, damage: Damage) -> None:
        self.damage = damage
        super().__init__(
            f"run store {url}: {damage.sentence()}; its score is not shown\n"
            f"  fix: `judge runs verify` lists every damaged row; re-run the suite "
            f"(cached judgments replay at no cost) or restore the store from a backup")


def check_copies(text: str, status: object, score: object, band: object,
                 passed: object) -> str | None:
    """Why a result row's query copies disagree with its stored value; None when they agree."""
    try:
        value = json.loads(text)
    except ValueError:
        return "its stored value is not valid JSON"
    if not isinstance(value, dict):
        return "its stored value is not an object"
    passed_value = None if passed is None else bool(passed) if not isinstance(passed, str) \
        else passed in ("t", "true", "1")
    score_value = None if score is None else int(str(score))
    if (value.get("status"), value.get("overallScore"), value.get("band"),
            value.get("passed")) != (status, score_value, band, passed_value):
        return "its status, score, band or pass columns disagree with its stored value"
    return None


def run_copies_ok(text: str, run_id: str, suite: str, status: str) -> bool:
    """Whether a run row's id, suite and status columns agree with its stored value."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and (value.get("id"), value.get("suite"),
                                        value.get("status")) == (run_id, suite, status)


def missing_rows(run: RunInfo, stored: Mapping[tuple[str, int], int], cases: int, *,
                 headline: bool = False) -> str | None:
    """Why complete ``run`` lost result rows, or None.

    ``stored``: its rows per (model, sample); ``cases``: its distinct case ids. The run's
    sealed totals count its cases and its judgments (one judge, one sample; aggregates
    aside); fewer stored is damage, more is not (a run stored before ``judgments`` was
    counted has 0 there). With ``headline``, every case must also have its headline row (the
    run's headline judge and sample, or no judge): what the gate compares. A run that is not
    complete is not checked.
    """
    if run.status != "complete":
        return None
    judgments = sum(n for (m, s), n in stored.items() if m in run.models and s >= 0)
    counts = [(run.totals.cases, cases, "cases"), (run.totals.judgments, judgments, "judgments")]
    if headline:
        model, sample = headline_of(run)
        heads = sum(n for (m, s), n in stored.items() if m == "" or (m, s) == (model, sample))
        counts.append((run.totals.cases, heads, "cases' headline results"))
    lost = [f"{want - got} of its {want} {what}" for want, got, what in counts if got < want]
    if not lost:
        return None
    return (", ".join(lost) + " are missing from the store (the run's sealed totals count "
            "them): a result row was deleted")
