"""Seals of the run store: a digest on every stored result and every run row, checked on read.

A flipped bit in ``.judge/judge.db`` used to change what ``export``, ``show`` and ``check``
report (a case 63 → 62) with exit 0. Each row now carries a ``seal``: an HMAC-SHA256 under
the team secret (``JUDGE_CACHE_SECRET``) when one is set, else a plain SHA-256, over the
canonical JSON of the row's key and its stored value (``result_json`` / ``info_json``) and
format version. A read checks the seal of every row it returns and that the queryable
copies (status, score, band, passed; a run's suite and status) agree with the value, so a
damaged row is reported with its run and case, never shown as a score.

Decisions: the seal binds the row's key (run, case, model, sample), so a row moved to
another run or case does not verify; the plain digest catches damage (a flip, a torn
write) and the keyed one also catches an edit by someone without the secret. A row written
before sealing (``seal`` NULL) is *unsealed*: read as before and listed by
``judge store verify``; a store sealed under a secret and read without it is reported, not
trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core.canonical import canonical_json
from ..core.errors import StoreError

__all__ = [
    "KEYED",
    "PLAIN",
    "Damage",
    "DamagedRowError",
    "Sealer",
    "check_copies",
    "run_copies_ok",
]

KEYED: Final = "hmac-sha256:"
PLAIN: Final = "sha256:"


@dataclass(frozen=True)
class Damage:
    """One row that does not verify: which run, which case (None: the run row), and why."""

    run: str
    case: str | None
    model: str
    sample: int
    reason: str

    def sentence(self) -> str:
        """``run R case C (model M, sample S): why``."""
        where = f"run {self.run!r}"
        if self.case is not None:
            where += f" case {self.case!r}"
            if self.model:
                where += f" (model {self.model}, sample {self.sample})"
        else:
            where += " (the run's settings and totals)"
        return f"{where}: {self.reason}"


class DamagedRowError(StoreError):
    """A stored row whose seal does not match: the value is not shown (exit code 2)."""

    def __init__(self, url: str, damage: Damage) -> None:
        self.damage = damage
        super().__init__(
            f"run store {url}: {damage.sentence()}; its score is not shown\n"
            f"  fix: `judge store verify` lists every damaged row; re-run the suite "
            f"(cached judgments replay at no cost) or restore the store from a backup, "
            f"then `judge store delete {damage.run}` if it cannot be repaired")


class Sealer:
    """Makes and checks seals under one key (the team secret, or none)."""

    def __init__(self, secret: str | None) -> None:
        """``secret``: ``JUDGE_CACHE_SECRET`` if set (an empty value is no secret)."""
        self._key = secret.encode("utf-8") if secret else None

    @property
    def keyed(self) -> bool:
        """Whether seals are keyed with the team secret."""
        return self._key is not None

    def seal(self, parts: Sequence[Any]) -> str:
        """The seal of a row made of ``parts`` (key columns, stored text, format version)."""
        data = canonical_json(list(parts)).encode("utf-8")
        if self._key is None:
            return PLAIN + hashlib.sha256(data).hexdigest()
        return KEYED + hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def problem(self, parts: Sequence[Any], seal: str | None) -> str | None:
        """Why a stored row with ``seal`` does not verify; None when it does (or is unsealed)."""
        if seal is None:
            return None
        if seal.startswith(KEYED) and self._key is None:
            return ("it was sealed with the team secret; set JUDGE_CACHE_SECRET "
                    "to read it")
        if seal.startswith(PLAIN) and self._key is not None:
            return ("its seal is not keyed with the team secret (written without "
                    "JUDGE_CACHE_SECRET, or edited)")
        if not hmac.compare_digest(seal, self.seal(parts)):
            return "its seal does not match its content (the row was changed after it was written)"
        return None


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
