"""Provider batch jobs in the run store: one row per job, its document as canonical JSON.

A table of its own (``batch_jobs``) beside the runs, created with ``create_all`` on the
store's engine: additive, nothing about runs or results changes. The document is the source
of truth, the other columns are copies for finding a job. A job is written whole in one
transaction at each step (submitted, polled, collected, finished), so a process killed
between two steps leaves the last step's document, and the next command resumes from it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete, insert, select
from sqlalchemy.exc import SQLAlchemyError

from ..core.text.canonical import canonical_json
from ..core.text.errors import StoreError
from ..core.text.frozen import Frozen
from .runs import RunStore

__all__ = ["BATCH_FORMAT", "BatchJob", "BatchLedger", "BatchStore", "ProviderJob"]

BATCH_FORMAT = 1

_metadata = MetaData()
_jobs = Table(
    "batch_jobs",
    _metadata,
    Column("id", String(255), primary_key=True),
    Column("suite", String(255), nullable=False),
    Column("status", String(32), nullable=False),
    Column("created_at", String(64), nullable=False),
    Column("doc_json", Text, nullable=False),
    Column("format_version", Integer, nullable=False),
)


class ProviderJob(Frozen):
    """One provider batch job: the judgments of one judge model."""

    model: str
    provider: str
    keys: tuple[str, ...]
    """Cache keys of the judgments it asks for (its lines' ``custom_id``)."""
    tag: str
    """``<job id>/<n>``, sent as the provider job's metadata: found again after a crash."""
    provider_job_id: str | None = Field(None, alias="providerJobId")
    """None until the provider accepted the job."""
    input_file_id: str | None = Field(None, alias="inputFileId")
    status: str = "submitting"
    """The provider's state (``validating`` … ``completed``), ``submitting`` before it."""
    output_file_id: str | None = Field(None, alias="outputFileId")
    error_file_id: str | None = Field(None, alias="errorFileId")
    counts: dict[str, int] = Field(default_factory=dict)
    errors: tuple[str, ...] = ()


class BatchLedger(Frozen):
    """What collecting a job did: answers cached, items that failed, what it cost."""

    answered: int = 0
    """Batch answers now in the cache under their keys."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Keys the provider did not answer (item error, expired, cancelled), with the reason."""
    invalid: dict[str, str] = Field(default_factory=dict)
    """Keys whose answer stayed invalid after the live repair turns, with the reason."""
    refused: dict[str, str] = Field(default_factory=dict)
    """Answers refused, by ``custom_id``, with why (a duplicated or unknown id, another model,
    a request echo that does not match): never cached. A refused key of the job is also in
    ``failed`` (asked live, or left unscored)."""
    repair_calls: int = Field(0, alias="repairCalls")
    """Live calls made for repair turns."""
    prompt_tokens: int = Field(0, alias="promptTokens")
    completion_tokens: int = Field(0, alias="completionTokens")
    cached_tokens: int = Field(0, alias="cachedTokens")
    """Of ``promptTokens``, those the provider read from its prompt cache."""
    cache_write_tokens: int = Field(0, alias="cacheWriteTokens")
    """Of ``promptTokens``, those written to the provider's prompt cache."""
    cost_usd: float | None = Field(0.0, alias="costUsd")
    """Cost of the batch answers at the batch rate; None when a price is unknown."""


class BatchJob(Frozen):
    """A batch submission of one suite run: its provider jobs and how far it got."""

    version: Literal[1] = 1
    id: str
    suite: str
    created_at: str = Field(alias="createdAt")
    status: Literal["submitting", "submitted", "collected", "finished"] = "submitting"
    """Ours: ``submitting`` until every provider job exists, ``collected`` once the
    answers are in the cache, ``finished`` once the run is stored (``runId``)."""
    request: dict[str, Any]
    """The :class:`judge.app.runs.running.RunRequest` to finish with, as JSON."""
    settings: dict[str, Any]
    """The settings the cases were rendered with (never a key or a base URL)."""
    explicit: tuple[str, ...] = ()
    """Of those, the ones set by a file, the environment or a flag (not defaults)."""
    jobs: tuple[ProviderJob, ...] = ()
    judgments: int = 0
    """Judgments the run needs (LLM cases x judges x samples)."""
    cached: int = 0
    """Of those, already in the cache when submitted."""
    ledger: BatchLedger | None = None
    run_id: str | None = Field(None, alias="runId")

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the job covers."""
        return tuple(k for job in self.jobs for k in job.keys)


class BatchStore:
    """Batch jobs in the run store's database."""

    def __init__(self, store: RunStore) -> None:
        self._store = store
        self._engine = store.engine
        try:
            with self._engine.begin() as conn:
                _metadata.create_all(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {store.url}: {exc}") from exc

    def save(self, job: BatchJob) -> None:
        """Write the job's document (replacing the previous one) in one transaction."""
        row = {"id": job.id, "suite": job.suite, "status": job.status,
               "created_at": job.created_at, "format_version": BATCH_FORMAT,
               "doc_json": canonical_json(job.model_dump(mode="json"))}
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(_jobs).where(_jobs.c.id == job.id))
                conn.execute(insert(_jobs).values(**row))
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._store.url}: {exc}") from exc

    def get(self, job_id: str | None = None) -> BatchJob:
        """The job with this id or unique prefix; None: the newest unfinished, else newest."""
        query = select(_jobs.c.id, _jobs.c.status, _jobs.c.doc_json, _jobs.c.format_version)
        try:
            with self._engine.connect() as conn:
                if job_id:
                    rows = list(conn.execute(query.where(_jobs.c.id.startswith(
                        job_id, autoescape=True)).order_by(_jobs.c.id).limit(6)))
                    exact = [r for r in rows if r[0] == job_id]
                    rows = exact or rows
                else:
                    rows = list(conn.execute(query.order_by(_jobs.c.created_at.desc(),
                                                            _jobs.c.id.desc())))
                    rows = [r for r in rows if r[1] != "finished"][:1] or rows[:1]
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._store.url}: {exc}") from exc
        if not rows:
            raise StoreError(f"no batch job {job_id!r} in {self._store.url}" if job_id else
                             f"no batch job in {self._store.url}; `judge run SUITE --batch` "
                             f"submits one")
        if len(rows) > 1:
            raise StoreError(f"batch job prefix {job_id!r} is ambiguous: it starts "
                             + ", ".join(r[0] for r in rows[:5]) + "; give more characters")
        if int(rows[0][3]) > BATCH_FORMAT:
            raise StoreError(f"batch job {rows[0][0]} is of a newer format: upgrade judgeflow")
        return BatchJob.model_validate_json(rows[0][2])

    def list(self, limit: int = 20) -> list[BatchJob]:
        """Jobs, newest first."""
        query = select(_jobs.c.doc_json).order_by(_jobs.c.created_at.desc(),
                                                  _jobs.c.id.desc()).limit(limit)
        try:
            with self._engine.connect() as conn:
                return [BatchJob.model_validate_json(t) for (t,) in conn.execute(query)]
        except SQLAlchemyError as exc:
            raise StoreError(f"run store {self._store.url}: {exc}") from exc
