"""The replay index: find a cached judgment again without rendering its prompt.

A cache key is the hash of the rendered request, so finding a judgment the plain way means
reading and validating the case, building its evidence bundle and rendering its prompt:
~0.5 ms a case, most of a replay. Yet all of that is a pure function of inputs that are
cheap to hash: the case (for a JSONL suite, its line as written), the rubric, the templates,
the judge model and its call settings, the sample, and the code that builds bundles and
prompts. The index maps a *fingerprint* of those inputs to what a result needs besides the
verdict::

    sha256(salt(code, rubric, templates, model, settings) | sample | case line or JSON)
        ──► {"key": cache key, "ids": [citable ids], "dropped": {group: n},
             "cited": {id: cited evidence},
             "case": {id, judgedBy, tags, complexity, signals, checks}}

A replay then hashes the line (~3 us), reads the record and the turns of the cache entry it
names, parses the verdict and scores it with the same functions as the plain path
(:func:`judge.judging.scored_result`): the result is the same, byte for byte, and the case
is never parsed.

The cache entry stays the one source of truth: a record only says where to look and what
the case was. Records live in their own table (:mod:`judge.replay_store`), each sealed with
its sha256: a record whose bytes changed is read as absent, never scored from. Whenever
the shortcut cannot vouch for the answer (no record, the entry is gone or corrupt, the
reply no longer parses, it cites an item the record does not hold) the case takes the
plain path, which writes a fresh record. Any change to the inputs, the
package's code included, changes the fingerprint, so a stale record is never found, only
left unused.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cache import JudgmentCache
from .canonical import canonical_json, sha256_hex
from .errors import OutputError
from .judging import JudgeSettings, Prepared, judge_meta, scored_result
from .models import CaseResult, CheckResult, CitedEvidence
from .parsing import parse_verdict
from .rubric import Rubric
from .suite import Case

__all__ = ["INDEX_FORMAT", "ReplayIndex", "Replayed", "code_digest", "line_digest",
           "record_problem"]

INDEX_FORMAT = 2
WRITE_BATCH = 256
"""Records are written in batches: a run cut short loses at most these shortcuts."""


@functools.cache
def code_digest() -> str | None:
    """sha256 over the source of the package's modules; None when they cannot be read.

    Any change to how bundles, prompts, keys or results are made changes a fingerprint,
    without anyone having to remember to bump a version. The versions of Python, Jinja and
    pydantic are in it too: they render the prompt and write the schema, so an upgrade that
    changed a byte of a request must not find the judgment of the old one.
    """
    import pydantic

    from .prompts import RENDERER_VERSION

    digest = hashlib.sha256(f"python {sys.version_info[:3]} {RENDERER_VERSION} "
                            f"pydantic {pydantic.VERSION}\0".encode())
    try:
        for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


@dataclass(frozen=True)
class _Facts:
    """A case's facts from a record (see :class:`judge.judging.CaseFacts`)."""

    case_id: str
    judged_by: str
    tags: tuple[str, ...]
    complexity: str | None
    signals: dict[str, int | None]
    checks: tuple[CheckResult, ...]
    dropped: dict[str, int]
    cited: Mapping[str, CitedEvidence]

    def cite(self, ids: Iterable[str]) -> tuple[CitedEvidence, ...]:
        return tuple(self.cited[i] for i in ids)


@dataclass(frozen=True)
class Replayed:
    """A judgment replayed through the index, and the case's deterministic signals."""

    result: CaseResult
    signals: dict[str, int | None]


def _record(raw: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != INDEX_FORMAT:
        return None
    ok = isinstance(rec.get("key"), str) and isinstance(rec.get("ids"), list) \
        and isinstance(rec.get("dropped"), dict) and isinstance(rec.get("cited"), dict) \
        and isinstance(rec.get("case"), dict)
    return rec if ok else None


def record_problem(raw: bytes) -> str | None:
    """Why a (sealed) record of this index format cannot be used; None when it can.

    A record of another format is not a problem: its fingerprint is never computed again.
    """
    try:
        rec = json.loads(raw)
    except (ValueError, RecursionError):
        return "not JSON"
    if isinstance(rec, dict) and rec.get("format") != INDEX_FORMAT:
        return None
    return None if _record(raw) is not None else "not a record of this index format"


def line_digest(line: str) -> bytes:
    """The digest of a case read from this JSONL line (see :meth:`ReplayIndex.case_digest`)."""
    return b"line\0" + hashlib.sha256(line.encode("utf-8")).digest()


class ReplayIndex:
    """Fingerprints and records for one run's rubric, templates and judge settings."""

    def __init__(self, cache: JudgmentCache, rubric: Rubric, rubric_hash: str, *,
                 template_id: str, template_hash: str, settings: JudgeSettings) -> None:
        self.cache = cache
        self.rubric = rubric
        self.rubric_hash = rubric_hash
        self.template_id = template_id
        self.template_hash = template_hash
        self.settings = settings
        self._salts: dict[str, bytes] = {}
        self._unwritten: list[tuple[bytes, bytes]] = []
        self.found = 0
        """Judgments this run replayed through the index."""

    @classmethod
    def open(cls, cache: JudgmentCache | None, rubric: Rubric, rubric_hash: str, *,
             template_id: str, template_hash: str,
             settings: JudgeSettings) -> ReplayIndex | None:
        """The index of ``cache``, or None when it cannot be used (no cache, no code digest)."""
        if cache is None or cache.mode in ("off", "read-only") or code_digest() is None:
            return None
        return cls(cache, rubric, rubric_hash, template_id=template_id,
                   template_hash=template_hash, settings=settings)

    def _salt(self, model: str) -> bytes:
        salt = self._salts.get(model)
        if salt is None:
            s = self.settings
            salt = bytes.fromhex(sha256_hex({
                "index": INDEX_FORMAT, "code": code_digest(), "rubric": self.rubric_hash,
                "template": [self.template_id, self.template_hash], "model": model,
                "settings": {"temperature": s.temperature, "seed": s.seed,
                             "outputMode": s.output_mode, "params": dict(s.params),
                             # only when on: the salts of every record made without it stay
                             **({"stableSchema": True} if s.stable_schema else {})}}))
            self._salts[model] = salt
        return salt

    @staticmethod
    def case_digest(case: Case) -> bytes:
        """A digest of everything in the case (computed once per case, for every judge).

        A case read from a JSONL line is digested from the line itself instead
        (:func:`line_digest`): the line determines the case, and hashing it skips parsing.
        """
        return b"case\0" + hashlib.sha256(case.model_dump_json().encode("utf-8")).digest()

    def fingerprint(self, digest: bytes, model: str, sample: int) -> bytes:
        """The index key of one judgment of a case (a sha256 digest)."""
        return hashlib.sha256(self._salt(model) + str(sample).encode() + b"\0"
                              + digest).digest()

    def replay(self, digest: bytes, model: str, sample: int) -> Replayed | None:
        """One judgment from the index and the cache; None to take the plain path."""
        store = self.cache.replay_store
        raw = store.get(self.fingerprint(digest, model, sample)) if store is not None else None
        record = _record(raw) if raw is not None else None
        if record is None:
            return None
        turns = self.cache.turns(record["key"], count=False)
        if turns is None:
            return None
        try:
            advisory = parse_verdict(str(turns[-1]["text"]), self.rubric, tuple(record["ids"]))
            stored = record["cited"]
            cited = {i: CitedEvidence.model_validate(stored[i])
                     for a in advisory.values() for i in a.evidence}
            case = record["case"]
            facts = _Facts(case_id=case["id"], judged_by=case["judgedBy"],
                           tags=tuple(case["tags"]), complexity=case["complexity"],
                           signals=dict(case["signals"]),
                           checks=tuple(CheckResult.model_validate(c) for c in case["checks"]),
                           dropped=dict(record["dropped"]), cited=cited)
            meta = judge_meta(model, self.settings, record["key"], turns, cached=True,
                              sample=sample, template_id=self.template_id,
                              template_hash=self.template_hash, rubric_hash=self.rubric_hash)
            result = scored_result(facts, self.rubric, advisory, meta, None)
        except (OutputError, KeyError, TypeError, ValueError):
            return None  # a record this code cannot use: the plain path will write a new one
        self.cache.count_hit()
        self.found += 1
        return Replayed(result, facts.signals)

    def remember(self, digest: bytes, model: str, sample: int, prep: Prepared,
                 result: CaseResult) -> None:
        """Record a result the plain path scored from a cached verdict."""
        if result.judge is None or not result.judge.cacheKey:
            return
        record = {"format": INDEX_FORMAT, "key": result.judge.cacheKey,
                  "ids": list(prep.bundle.ids()), "dropped": result.evidenceDropped,
                  "cited": {e.id: e.model_dump(mode="json") for e in result.evidence},
                  "case": {"id": prep.case_id, "judgedBy": prep.judged_by,
                           "tags": list(prep.tags), "complexity": prep.complexity,
                           "signals": prep.signals,
                           "checks": [c.model_dump(mode="json") for c in prep.checks]}}
        self._unwritten.append((self.fingerprint(digest, model, sample),
                                canonical_json(record).encode("utf-8")))
        if len(self._unwritten) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the records remembered so far (one transaction; call at the end of a run)."""
        store = self.cache.replay_store
        if self._unwritten and store is not None:
            store.put(self._unwritten)
        self._unwritten = []
