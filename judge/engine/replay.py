"""The replay index: find a cached judgment again without rendering its prompt.

A cache key is the hash of the rendered request, so finding a judgment the plain way means
reading and validating the case, building its evidence bundle and rendering its prompt:
most of a replay's cost. Yet all of that is
a pure function of inputs that are cheap to hash: the case (for a JSONL suite, its line as
written), the rubric, the templates, the judge model and its call settings, the sample, and
the code that builds bundles, prompts and results. The index maps a *fingerprint* of those
inputs to the result they gave::

    sha256(salt(code, rubric, templates, model, settings) | sample | case line or JSON)
        ──► {"key": cache key, "entry": the entry's digest, "signals": {category: signal},
             "result": the result's JSON}

The result is a function of the fingerprint's inputs and of the cache entry's content
alone, and the record is bound to both: to the inputs by its fingerprint, to the entry by
the entry's digest. A replay (:meth:`ReplayIndex.replay_many`, a batch of cases at a time:
one SELECT for the records, one for the entries) hashes the line, reads the record,
reads the entry's bytes and checks them against their own digest and against the one the
record names, and only then takes the stored result: no case parsed, no verdict re-parsed,
no score recomputed, no model validated but the result's own.

The cache entry stays the one source of truth: a record only says which entry it was
made from and what that gave. Records live in their own table (:mod:`judge.cache.replay_store`),
each sealed with its sha256: a record whose bytes changed is read as absent, never scored
from. Whenever the shortcut cannot vouch for the answer (no record, the entry is gone,
corrupt or not the one the record was made from — a refresh rewrote it, say) the case
takes the plain path, which writes a fresh record. Any change to the inputs, the package's
code included, changes the fingerprint, so a stale record is never found, only left
unused.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..cache.disk import JudgmentCache
from ..cache.entry_bytes import sound_digest
from ..core.formats.models import CaseResult
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case
from ..core.text.canonical import canonical_json, sha256_hex
from .judging import JudgeSettings, Prepared

__all__ = ["INDEX_FORMAT", "ReplayIndex", "Replayed", "code_digest", "line_digest",
           "record_problem"]

INDEX_FORMAT = 3
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

    from ..render.prompts import RENDERER_VERSION

    digest = hashlib.sha256(f"python {sys.version_info[:3]} {RENDERER_VERSION} "
                            f"pydantic {pydantic.VERSION}\0".encode())
    try:
        package = Path(__file__).resolve().parents[1]
        # What makes bundles, prompts, keys and results: every layer below the application.
        below = ("cache", "core", "engine", "llm", "render", "report", "store", "system")
        for path in sorted(p for d in below for p in (package / d).rglob("*.py")):
            name = path.relative_to(package).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


@dataclass(frozen=True)
class Replayed:
    """A judgment replayed through the index, and the case's deterministic signals."""

    result: CaseResult
    signals: dict[str, int | None]


class _Record(BaseModel):
    """A record as stored (the result embedded as an object: one parse for the whole record)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[3]
    key: str
    entry: str
    signals: dict[str, int | None]
    result: CaseResult


def _record(raw: bytes) -> _Record | None:
    try:
        return _Record.model_validate_json(raw)
    except ValidationError:
        return None


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
        self._unwritten: list[tuple[bytes, str, str | None, dict[str, int | None],
                                    CaseResult]] = []
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
                             **({"stableSchema": True} if s.stable_schema else {}),
                             **({"scoreMode": s.score_mode}
                                if s.score_mode != "direct" else {})}}))
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
        return self.replay_many([digest], [(model, sample)])[0].get((model, sample))

    def replay_many(self, digests: Sequence[bytes], judges: Sequence[tuple[str, int]],
                    ) -> list[dict[tuple[str, int], Replayed]]:
        """For each case digest, the judgments of ``judges`` the index answers, in order.

        A case's answers stop at the first judge the index cannot vouch for (the plain path
        takes that one and the rest). Two SELECTs for the whole batch.
        """
        store = self.cache.replay_store
        found: list[dict[tuple[str, int], Replayed]] = [{} for _ in digests]
        if store is None or not store.readable:
            return found
        prints = [[self.fingerprint(d, m, s) for m, s in judges] for d in digests]
        raw_records = store.get_many(fp for row in prints for fp in row)
        # A record this code cannot read is absent: the plain path writes a new one.
        records = {fp: rec for fp, raw in raw_records.items()
                   if (rec := _record(raw)) is not None}
        entries = self.cache.raw_many(rec.key for rec in records.values())
        for answers, row in zip(found, prints, strict=True):
            for judge, fp in zip(judges, row, strict=True):
                rec = records.get(fp)
                raw = entries.get(rec.key) if rec is not None else None
                if rec is None or raw is None or sound_digest(raw, rec.key) != rec.entry:
                    break
                result = rec.result
                if result.judge is None or result.judge.cache_key != rec.key:
                    break
                answers[judge] = Replayed(result, dict(rec.signals))
                self.cache.count_hit()
                self.found += 1
        return found

    def remember(self, digest: bytes, model: str, sample: int, prep: Prepared,
                 result: CaseResult, written: str | None = None) -> None:
        """Record a result the plain path scored from a verdict that is in the cache.

        ``written``: the digest of the entry this judgment just stored (a miss); the record
        is bound to it without reading the entry back. None (a hit): read at :meth:`flush`.
        """
        meta = result.judge
        if meta is None or not meta.cache_key:
            return
        if not meta.cached:  # as a replay reports it: this run did not pay for the call
            result = result.model_copy(update={"judge": meta.model_copy(update={"cached": True})})
        self._unwritten.append((self.fingerprint(digest, model, sample), meta.cache_key,
                                written, prep.signals, result))
        if len(self._unwritten) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the records remembered so far (one transaction; call at the end of a run).

        Each is bound to the digest of its entry: the one its judgment wrote, else the
        entry as stored now (read in one SELECT), and only when that entry checks out
        against its digest. Binding to the digest written, not re-read, is safe: a replay
        checks the stored entry's own digest against the record's, so an entry replaced
        since (a later write under the same key) sends that case down the plain path.
        """
        store = self.cache.replay_store
        pending, self._unwritten = self._unwritten, []
        if not pending or store is None:
            return
        entries = self.cache.raw_many(key for _, key, written, _, _ in pending
                                      if written is None)
        rows = []
        for fp, key, written, signals, result in pending:
            entry = written
            if entry is None:
                raw = entries.get(key)
                entry = sound_digest(raw, key) if raw is not None else None
            if entry is None:
                continue
            record = {"format": INDEX_FORMAT, "key": key, "entry": entry, "signals": signals,
                      "result": result.model_dump(mode="json")}
            rows.append((fp, canonical_json(record).encode("utf-8")))
        if rows:
            store.put(rows)
