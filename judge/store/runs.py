"""The run store: runs and their case results in a SQL database, through SQLAlchemy Core.

The only module that imports SQLAlchemy. Each run row and each result row keeps the whole
value as JSON (``info_json`` canonical, ``result_json`` as pydantic writes it: the same
value, ~3x cheaper on the hot path of a replay), which is the source of truth; the
other columns are copies for querying and are never read back into a value.

SQLite is the default (``sqlite:///.judge/judge.db`` in the workspace). Several processes
may write to one file: the journal is WAL, a busy timeout makes writers wait for each other,
and write transactions start with ``BEGIN IMMEDIATE`` so a transaction that reads before it
writes cannot fail on a lock upgrade. Nothing here reads the clock: ``createdAt`` comes in
with the run.

PostgreSQL (``postgresql+psycopg://user:password@host/db``, the ``postgres`` extra) is the
team's store: pooled connections are pinged before use, and a write that meets a dropped
connection (a server restart) waits for the server to come back and is retried once; every
write is idempotent (a batch replaces its rows), so a retry never doubles a row. The schema
is versioned by :mod:`judge.store.migrations` on both engines. A password in the URL appears
nowhere: messages show ``user:[REDACTED]@``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, NotRequired, TypedDict, TypeVar

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Select,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..core.formats.models import CaseResult, RunInfo, RunTotals
from ..core.text.canonical import canonical_json
from ..core.text.errors import AmbiguousRunError, NoStoreError, StoreError, UnknownRunError
from ..core.text.seals import Sealer
from ..core.text.secrets import mask_url
from ..system.sql_urls import SqlUrl, resolve_sql_url
from .labels import define_labels
from .migrations import (
    HEAD,
    STORE_FORMAT_VERSION,
    SchemaState,
    create_head,
    pending,
    schema_state,
    upgrade,
)
from .seal import Damage, DamagedRowError, check_copies, missing_rows, run_copies_ok

__all__ = ["DEFAULT_STORE_URL", "STORE_FORMAT_VERSION", "MigratePolicy", "RunStore"]

MigratePolicy = Literal["auto", "all", "none"]
"""On open: apply additive revisions (``auto``), every revision (``all``), or none."""

DEFAULT_STORE_URL: Final = "sqlite:///.judge/judge.db"
"""Relative SQLite paths are resolved against the workspace, not the process's cwd."""

_RELATIVE: Final = re.compile(r"last(?:~(\d{1,6}))?")
"""A run named by its place: ``last`` the newest stored, ``last~N`` N runs before it."""
_BUSY_TIMEOUT_MS: Final = 30_000
"""How long a SQLite writer waits for another process's transaction before failing."""

_IMMEDIATE: Final = "judge_sqlite_immediate"
"""Execution option that makes the SQLite ``begin`` hook take the write lock up front."""

_RECONNECT_SECONDS: Final = 30.0
"""How long a write waits for a dropped PostgreSQL server to come back before failing."""

_MIGRATION_LOCK: Final = 0x6A756467  # "judg": the advisory lock migrations take on PostgreSQL

_T = TypeVar("_T")
_S = TypeVar("_S")

_metadata = MetaData()

_runs = Table(
    "runs",
    _metadata,
    Column("id", String(255), primary_key=True),
    Column("suite", String(255), nullable=False),
    Column("rubric", String(255), nullable=False),
    Column("rubric_hash", String(128), nullable=False),
    Column("models", Text, nullable=False),
    Column("seed", Integer, nullable=True),
    Column("template_id", String(255), nullable=False),
    Column("template_hash", String(128), nullable=False),
    Column("created_at", String(64), nullable=False),
    Column("status", String(32), nullable=False),
    Column("info_json", Text, nullable=False),
    Column("format_version", Integer, nullable=False),
    Column("run_group", String(255), nullable=True),
    Column("shard_index", Integer, nullable=True),
    Column("shard_count", Integer, nullable=True),
    Column("seal", String(128), nullable=True),
    Index("ix_runs_suite_created_at", "suite", "created_at"),
    Index("ix_runs_created_at", "created_at"),
    Index("ix_runs_group", "run_group", "created_at"),
)
"""The schema itself is made by :mod:`judge.store.migrations`; these tables are for the queries."""

# No separate index on run_id: it leads the primary key, whose index already serves
# "WHERE run_id = ?" and the (case_id, model, sample) order; a second one would only
# double the cost of every insert.
_case_results = Table(
    "case_results",
    _metadata,
    Column("run_id", String(255), ForeignKey("runs.id"), primary_key=True),
    Column("case_id", String(255), primary_key=True),
    Column("model", String(255), primary_key=True),
    Column("sample", Integer, primary_key=True),
    Column("status", String(32), nullable=False),
    Column("overall_score", Integer, nullable=True),
    Column("band", String(64), nullable=True),
    Column("passed", Boolean, nullable=True),
    Column("result_json", Text, nullable=False),
    Column("format_version", Integer, nullable=False),
    Column("seal", String(128), nullable=True),
)

define_labels(_metadata)  # the review page's labels (judge.store.labels), revision 0004


_RUN_READ: Final = (_runs.c.id, _runs.c.suite, _runs.c.status, _runs.c.info_json,
                    _runs.c.format_version, _runs.c.seal)
"""What a read of a run row takes: the value, the copies it is checked against, the seal."""

_RESULT_READ: Final = (
    _case_results.c.case_id, _case_results.c.model, _case_results.c.sample,
    _case_results.c.status, _case_results.c.overall_score, _case_results.c.band,
    _case_results.c.passed, _case_results.c.result_json, _case_results.c.format_version,
    _case_results.c.seal)
"""What a read of a result row takes (the run id is the query's own)."""


def _enable_wal(cursor: Any) -> None:
    """Switch a database file to WAL, waiting for other processes as the busy timeout would.

    The switch needs an exclusive lock and SQLite does not call the busy handler for it: a
    second process opening a fresh file at the same moment would fail at once with
    "database is locked". So retry here, within the same time budget.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _configure_sqlite(engine: Engine) -> None:
    """Pragmas on every connection, and BEGIN emitted by us rather than by the sqlite3 module."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # sqlite3's legacy transaction control skips BEGIN before SELECT; take it over so
        # reads are repeatable and writes can ask for the lock up front (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # The timeout first, so that reading the journal mode waits too.
            cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                _enable_wal(cursor)
            cursor.execute("PRAGMA foreign_keys = ON")
            # WAL + NORMAL: a commit is safe from a crash of the process and the file cannot
            # be corrupted; only a power cut may lose the last commits, and those results are
            # judged again from the cache. FULL would fsync every batch of results.
            cursor.execute("PRAGMA synchronous = NORMAL")
            # Checkpoint every 64 MB of log rather than 4 MB: a large run writes ~2.5 KB a
            # result, and each checkpoint syncs the database file.
            cursor.execute("PRAGMA wal_autocheckpoint = 16384")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes cannot wait for the lock in WAL
        # mode (SQLITE_BUSY_SNAPSHOT); IMMEDIATE takes it first, under the busy timeout.
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _absent(path: Path) -> bool:
    """No SQLite store at ``path``: no file, or an empty one (SQLite makes its first page)."""
    try:
        return path.stat().st_size == 0
    except (FileNotFoundError, NotADirectoryError):
        return True


def _checked_run(url: str, sealer: Sealer, row: tuple[Any, ...]) -> RunInfo:
    """A run row (id, suite, status, info, version, seal) as a value, once it verifies.

    DamagedRowError (exit 2, naming the run) for a seal or copy that does not match, or a
    value that no longer parses: a damaged run is never shown. StoreError for a row format
    newer than this code reads.
    """
    run_id, suite, status, text, version, seal = row
    why = sealer.problem((run_id, text, int(version)), seal)
    if why is None and not run_copies_ok(text, run_id, suite, status):
        why = "its id, suite or status columns disagree with its stored value"
    if why is None:
        if int(version) > STORE_FORMAT_VERSION:
            raise StoreError(f"{url} holds runs in store format {version}, newer than "
                             f"this judgeflow reads ({STORE_FORMAT_VERSION}): upgrade judgeflow")
        try:
            return RunInfo.model_validate_json(text)
        except ValueError:  # pydantic's ValidationError: bytes that no longer parse
            why = "its stored value does not parse"
    raise DamagedRowError(url, Damage(str(run_id), None, "", 0, why))


def _checked_result(url: str, sealer: Sealer, run_id: str, row: tuple[Any, ...]) -> CaseResult:
    """A result row (case, model, sample, copies, text, version, seal) once it verifies."""
    case_id, model, sample, status, score, band, passed, text, version, seal = row
    if int(version) > STORE_FORMAT_VERSION:
        raise StoreError(f"{url} holds results in store format {version}, newer than "
                         f"this judgeflow reads ({STORE_FORMAT_VERSION}): upgrade judgeflow")
    why = sealer.problem((run_id, case_id, model, int(sample), text, int(version)), seal) \
        or check_copies(text, status, score, band, passed)
    if why is None:
        try:
            return CaseResult.model_validate_json(text)
        except ValueError:
            why = "its stored value does not parse"
    raise DamagedRowError(url, Damage(run_id, str(case_id), str(model), int(sample), why))


class _RunRow(TypedDict):
    """A ``runs`` row as it is written: the query columns, the value, its seal."""

    run_group: str | None
    shard_index: int | None
    shard_count: int | None
    id: str
    suite: str
    rubric: str
    rubric_hash: str
    models: str
    seed: int | None
    template_id: str
    template_hash: str
    created_at: str
    status: str
    info_json: str
    format_version: int
    seal: NotRequired[str]


def _result_key(result: CaseResult) -> tuple[str, str, int]:
    """(case id, model, sample): a case judged without a model has model ``""``, sample 0."""
    if result.judge is None:
        return result.id, "", 0
    return result.id, result.judge.model, result.judge.sample


class RunStore:
    """Runs and case results in one database; safe to share between processes on SQLite."""

    def __init__(self, url: str = DEFAULT_STORE_URL, *, workspace: Path | None = None,
                 migrate: MigratePolicy = "auto", secret: str | None = None,
                 create: bool = True) -> None:
        """Open (and create, if needed) the store at ``url``; see :mod:`judge.store.migrations`.

        ``secret`` (``JUDGE_CACHE_SECRET``) keys the rows' seals (:mod:`judge.store.seal`).
        With ``create`` False a local SQLite store that is not there (no file, or the empty
        file an older judgeflow left) is :class:`NoStoreError`, and no file or folder is made;
        a server's schema is created or migrated either way.
        """
        shown = mask_url(url)
        self._sealer = Sealer(secret)
        self.url: str = shown
        self._sql: SqlUrl | None = None
        self._server = False
        self._results_sql: tuple[str, str] | None = None
        try:
            self._sql = resolve_sql_url(url, workspace if workspace is not None else Path.cwd())
            self.url = self._sql.shown
            self._server = self._sql.server
            self._make_or_find(self._sql, create)
            options: dict[str, Any] = {"pool_pre_ping": True} if self._server else {}
            self._engine = create_engine(self._sql.url, **options)
        except ImportError as exc:
            extra = " (pip install 'judgeflow[postgres]')" if "psycopg" in str(exc) else ""
            raise StoreError(f"cannot open run store {shown!r}: its database driver is "
                             f"not installed{extra}: {exc}") from None
        except (SQLAlchemyError, ValueError) as exc:
            raise StoreError(f"cannot open run store {shown!r}: "
                             f"{mask_url(str(exc))}") from None
        except OSError as exc:
            doing = "create the folder of" if create else "look for"
            raise StoreError(f"cannot {doing} run store {shown!r}: {exc}") from exc
        if not self._server:
            _configure_sqlite(self._engine)
        try:
            self.schema_before: SchemaState = self._open_schema(migrate)
        except BaseException:
            self._engine.dispose()  # a store that did not open holds no connection
            raise

    @staticmethod
    def _make_or_find(sql: SqlUrl, create: bool) -> None:
        """Make a local file's folder, or (``create`` False) refuse a local store not there."""
        if create:
            sql.make_folder()
        elif sql.file is not None and _absent(sql.file):
            raise NoStoreError(str(sql.file))

    # -- schema ---------------------------------------------------------------------------

    def _open_schema(self, migrate: MigratePolicy) -> SchemaState:
        """Read the revision; bring the store to the head as ``migrate`` allows."""
        with self._transaction() as conn:
            state = schema_state(conn)
        if state.current:
            return state
        self._refuse_unknown(state)
        if migrate == "none":
            return state
        with self._transaction(write=True) as conn:
            if self._server:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            state = schema_state(conn)  # again, under the lock: another process may have won
            self._refuse_unknown(state)
            todo = pending(state)
            if migrate == "auto" and not all(additive for _, additive in todo):
                first = next(r for r, additive in todo if not additive)
                raise StoreError(
                    f"run store {self.url} is at schema revision {state.revision}; revision "
                    f"{first} changes existing data and is not applied on open: back the "
                    f"store up, then run `judge runs upgrade`")
            if state.revision is None and not self._server:
                # An empty SQLite store (a first run): its tables at the head, stamped.
                create_head(conn, _metadata)
            elif todo:
                upgrade(conn, state)
        return state

    def _refuse_unknown(self, state: SchemaState) -> None:
        if not state.known:
            raise StoreError(
                f"run store {self.url} is at schema revision {state.revision}, newer than "
                f"this judgeflow knows (head {HEAD}): it was written by a newer judgeflow; "
                f"upgrade judgeflow (pip install -U judgeflow) to read it")

    def schema_revision(self) -> str | None:
        """The store's schema revision now (None: empty)."""
        with self._transaction() as conn:
            return schema_state(conn).revision

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for a module with a table of its own (judge.store.batch_jobs)."""
        return self._engine

    @property
    def sealer(self) -> Sealer:
        """The seals of this store's rows, for a module with a table of its own (labels)."""
        return self._sealer

    # -- runs -----------------------------------------------------------------------------

    def create_run(self, run: RunInfo) -> None:
        """Record a new run; a run with the same id is an error, never overwritten."""
        row = self._run_row(run)
        attempts = 0

        def write() -> None:
            nonlocal attempts
            attempts += 1
            with self._transaction(write=True) as conn:
                if self._exists(conn, run.id):
                    stored = conn.execute(select(_runs.c.info_json)
                                          .where(_runs.c.id == run.id)).scalar()
                    if attempts > 1 and stored == row["info_json"]:
                        return  # the first attempt committed before its connection dropped
                    raise StoreError(f"run {run.id!r} already exists in {self.url}")
                conn.execute(insert(_runs).values(**row))

        self._retrying(write)

    def finish_run(self, run_id: str, *, totals: RunTotals, status: str) -> RunInfo:
        """Set a run's totals and status; returns the run as now stored."""
        def write() -> RunInfo:
            with self._transaction(write=True) as conn:
                current = self._load_run(conn, run_id)
                finished = RunInfo.model_validate(
                    {**current.model_dump(), "totals": totals, "status": status})
                row = self._run_row(finished)
                conn.execute(update(_runs).where(_runs.c.id == run_id).values(
                    status=row["status"], info_json=row["info_json"], seal=row["seal"]))
            return finished

        finished = self._retrying(write)
        if status != "running":
            self.checkpoint()
        return finished

    def runs_with_status(self, status: str) -> list[RunInfo]:
        """Every run in ``status`` (e.g. the ones still ``running``), newest first."""
        with self._transaction() as conn:
            return [self._parse_run(*row) for row in conn.execute(self._runs_query(None, status))]

    def checkpoint(self) -> None:
        """Fold SQLite's write-ahead log into the database file.

        Then the file alone holds every finished run (a copy of ``judge.db`` without its
        ``-wal`` loses nothing).

        Best effort: with readers active the log is folded as far as it can be.
        """
        if self._engine.dialect.name != "sqlite":
            return
        try:
            with self._engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        except SQLAlchemyError:
            pass

    def get_run(self, run_id: str) -> RunInfo:
        """Return the run with id ``run_id``, or the one run whose id starts with it (like git)."""
        with self._transaction() as conn:
            return self._load_run(conn, self._resolve_id(conn, run_id))

    def list_runs(self, suite: str | None = None, limit: int | None = 50) -> list[RunInfo]:
        """Return runs newest first (``createdAt``, then id, descending), at most ``limit``."""
        query = self._runs_query(suite, None)
        if limit is not None:
            query = query.limit(limit)
        with self._transaction() as conn:
            return [self._parse_run(*row) for row in conn.execute(query)]

    def latest_run(self, suite: str | None = None, *,
                   status: str | None = "complete") -> RunInfo | None:
        """Return the newest run of ``suite`` (any if None) with ``status`` (any if None)."""
        with self._transaction() as conn:
            row = conn.execute(self._runs_query(suite, status).limit(1)).first()
        return None if row is None else self._parse_run(*row)

    def group_runs(self, group: str, suite: str | None = None) -> list[RunInfo]:
        """Every run of a sharded group (``judge run --group``), oldest first."""
        query = select(*_RUN_READ).where(_runs.c.run_group == group)
        if suite is not None:
            query = query.where(_runs.c.suite == suite)
        query = query.order_by(_runs.c.created_at, _runs.c.id)
        with self._transaction() as conn:
            return [self._parse_run(*row) for row in conn.execute(query)]

    def delete_run(self, run_id: str) -> None:
        """Delete a run and its results; takes the exact id, never a prefix."""
        with self._transaction(write=True) as conn:
            if not self._exists(conn, run_id):
                raise self._unknown(run_id)
            conn.execute(delete(_case_results).where(_case_results.c.run_id == run_id))
            conn.execute(delete(_runs).where(_runs.c.id == run_id))

    # -- results --------------------------------------------------------------------------

    def add_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        """Write results in one transaction; a result for a key already stored replaces it.

        The key is (case id, judge model, sample). Within one batch the last result for a
        key wins, as a later re-judgment would.
        """
        rows: dict[tuple[str, str, int], tuple[Any, ...]] = {}
        for result in results:
            case_id, model, sample = key = _result_key(result)
            text = result.model_dump_json()
            rows[key] = (run_id, case_id, model, sample, result.status, result.overall_score,
                         result.band, result.passed, text, STORE_FORMAT_VERSION,
                         self._sealer.seal((run_id, case_id, model, sample, text,
                                            STORE_FORMAT_VERSION)))
        remove, add = self._result_sql()
        keys = [row[:4] for row in rows.values()]
        values = list(rows.values())

        def write() -> None:
            with self._transaction(write=True) as conn:
                if not self._exists(conn, run_id):
                    raise self._unknown(run_id)
                if values:
                    conn.exec_driver_sql(remove, keys)
                    conn.exec_driver_sql(add, values)

        self._retrying(write)

    def _result_sql(self) -> tuple[str, str]:
        """The delete and insert of result rows, as the driver's own SQL (made once).

        Plain positional rows through the driver's executemany: the hot path of a replay
        writes every result, and SQLAlchemy's per-row parameter processing cost more than
        SQLite's insert. Delete-then-insert rather than a dialect's ON CONFLICT: one path.
        """
        if self._results_sql is None:
            style = self._engine.dialect.paramstyle
            if style not in ("qmark", "format", "pyformat"):
                raise StoreError(f"run store {self.url}: unsupported driver parameter style "
                                 f"{style!r}")
            mark = "?" if style == "qmark" else "%s"
            names = [c.name for c in _case_results.columns]
            table = _case_results.name
            self._results_sql = (
                f"DELETE FROM {table} WHERE run_id = {mark} AND case_id = {mark} "
                f"AND model = {mark} AND sample = {mark}",
                f"INSERT INTO {table} ({', '.join(names)}) "
                f"VALUES ({', '.join([mark] * len(names))})")
        return self._results_sql

    def iter_results(self, run_id: str, *, batch: int = 1000, offset: int = 0,
                     limit: int | None = None,
                     failures_only: bool = False) -> Iterator[CaseResult]:
        """Yield a run's results by case id, model, sample, fetching ``batch`` rows at a time.

        From the ``offset``-th on, at most ``limit`` of them; with ``failures_only`` only
        the cases that failed or were not scored. An unknown id fails here, not at the first
        ``next()``. Close the iterator (or run it out) to release its connection.
        """
        if batch < 1:
            raise ValueError("batch must be at least 1")
        with self._transaction() as conn:
            if not self._exists(conn, run_id):
                raise self._unknown(run_id)
        c = _case_results.c
        query: Select[Any] = self._results_where(select(*_RESULT_READ), run_id, failures_only) \
            .order_by(c.case_id, c.model, c.sample)
        if offset:
            query = query.offset(offset)
        if limit is not None:
            query = query.limit(limit)
        return self._stream(query, batch, run_id)

    def result_count(self, run_id: str, *, failures_only: bool = False) -> int:
        """How many results the run has (only the failing or unscored with ``failures_only``)."""
        with self._transaction() as conn:
            if not self._exists(conn, run_id):
                raise self._unknown(run_id)
            query = self._results_where(select(func.count()), run_id, failures_only)
            return int(conn.execute(query).scalar_one())

    def case_ids(self, run_id: str) -> set[str]:
        """The ids of the cases the run has a result of (one query; no value is read)."""
        c = _case_results.c
        with self._transaction() as conn:
            return {str(i) for (i,) in conn.execute(
                select(c.case_id).where(c.run_id == run_id).distinct())}

    def count_results(self, run_id: str) -> dict[str, int]:
        """Count results by status; ``scored``, ``unscored`` and ``cache_miss`` always present."""
        c = _case_results.c
        query = select(c.status, func.count()).where(c.run_id == run_id).group_by(c.status)
        counts = {"scored": 0, "unscored": 0, "cache_miss": 0}
        with self._transaction() as conn:
            if not self._exists(conn, run_id):
                raise self._unknown(run_id)
            for status, n in conn.execute(query):
                counts[str(status)] = int(n)
        return counts

    def check_rows(self, run: RunInfo) -> None:
        """DamagedRowError when complete ``run`` lost a headline result or a judgment row.

        What the gate reads is checked (:func:`judge.store.seal.missing_rows`): a deleted row
        has no seal to fail.
        """
        with self._transaction() as conn:
            why = self._lost(conn, run, headline=True)
        if why is not None:
            raise DamagedRowError(self.url, Damage(run.id, None, "", 0, why, rows=True))

    # -- integrity ------------------------------------------------------------------------

    def verify(self) -> tuple[list[Damage], int, int]:
        """Check every row's seal and copies, and every complete run's rows.

        Returns (damaged rows, rows checked, unsealed rows); with the secret, an unsealed
        row is damaged too.
        """
        with self._transaction() as conn:
            runs = conn.execute(select(*_RUN_READ).order_by(_runs.c.id)).all()
            damaged = [d for row in runs if (d := self._run_damage(conn, tuple(row)))]
            c = _case_results.c
            results = conn.execute(select(*_RESULT_READ, c.run_id).order_by(
                c.run_id, c.case_id, c.model, c.sample))
            unsealed = sum(row[-1] is None for row in runs)
            checked = len(runs)
            for row in results:
                checked += 1
                unsealed += row[9] is None
                damage = self._result_damage(tuple(row))
                if damage is not None:
                    damaged.append(damage)
        return damaged, checked, unsealed

    def _run_damage(self, conn: Connection, row: tuple[Any, ...]) -> Damage | None:
        """What is wrong with a run row (its seal, copies, value; a lost result), or None."""
        try:
            lost = self._lost(conn, _checked_run(self.url, self._sealer, row))
        except DamagedRowError as exc:
            return exc.damage
        return None if lost is None else Damage(str(row[0]), None, "", 0, lost, rows=True)

    def _result_damage(self, row: tuple[Any, ...]) -> Damage | None:
        """What is wrong with a result row (``_RESULT_READ`` and its run id), or None."""
        case_id, model, sample, status, score, band, passed, text, version, seal, run_id = row
        why = self._sealer.problem((run_id, case_id, model, sample, text, version), seal) \
            or check_copies(text, status, score, band, passed)
        return None if why is None else Damage(str(run_id), str(case_id), str(model),
                                               int(sample), why)

    def _lost(self, conn: Connection, run: RunInfo, *, headline: bool = False) -> str | None:
        """Why complete ``run`` lost rows (:func:`judge.store.seal.missing_rows`), or None."""
        if run.status != "complete":
            return None
        c = _case_results.c
        stored = {(str(m), int(s)): int(n) for m, s, n in conn.execute(
            select(c.model, c.sample, func.count()).where(c.run_id == run.id)
            .group_by(c.model, c.sample))}
        cases = int(conn.execute(select(func.count(func.distinct(c.case_id)))
                                 .where(c.run_id == run.id)).scalar_one())
        return missing_rows(run, stored, cases, headline=headline)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the connections."""
        self._engine.dispose()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _retrying(self, write: Callable[[], _T]) -> _T:
        """``write()``; on a server whose connection dropped, wait for it and retry once."""
        try:
            return write()
        except StoreError as exc:
            cause = exc.__cause__
            if not (self._server and isinstance(cause, DBAPIError)
                    and (cause.connection_invalidated or _is_disconnect(cause))):
                raise
        self._engine.dispose()  # every pooled connection died with the server
        self._await_server()
        return write()

    def _await_server(self) -> None:
        """Block until the server answers again, at most ``_RECONNECT_SECONDS``."""
        deadline = time.monotonic() + _RECONNECT_SECONDS
        pause = 0.1
        while True:
            try:
                with self._engine.connect() as conn:
                    conn.execute(select(1))
                return
            except SQLAlchemyError as exc:
                if time.monotonic() + pause > deadline:
                    raise StoreError(f"run store {self.url}: the server did not come back "
                                     f"within {_RECONNECT_SECONDS:g}s: "
                                     f"{self._scrub(exc)}") from None
                time.sleep(pause)
                pause = min(pause * 2, 2.0)

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[Connection]:
        """One transaction; database failures come out as StoreError."""
        try:
            with self._engine.connect() as conn:
                if write:
                    conn.execution_options(**{_IMMEDIATE: True})
                with conn.begin():
                    yield conn
        except SQLAlchemyError as exc:
            raise self._failed(exc) from exc

    def _stream(self, query: Select[Any], batch: int, run_id: str) -> Iterator[CaseResult]:
        try:
            # The result closed with the generator: a stream given up half-way leaves no
            # server-side cursor open on PostgreSQL.
            with self._engine.connect() as conn, \
                    conn.execution_options(yield_per=batch).execute(query) as rows:
                for row in rows:
                    yield _checked_result(self.url, self._sealer, run_id, tuple(row))
        except SQLAlchemyError as exc:
            raise self._failed(exc) from exc

    @staticmethod
    def _results_where(query: Select[_S], run_id: str, failures_only: bool) -> Select[_S]:
        """``query`` over one run's results (what ``--failures`` keeps, if asked)."""
        c = _case_results.c
        query = query.where(c.run_id == run_id)
        if failures_only:  # judge.app.runs.stored.is_failure, in SQL
            query = query.where((c.status != "scored") | (c.passed == False))  # noqa: E712
        return query

    def _run_row(self, run: RunInfo) -> _RunRow:
        row = self._unsealed_row(run)
        row["seal"] = self._sealer.seal((run.id, row["info_json"], STORE_FORMAT_VERSION))
        return row

    @staticmethod
    def _unsealed_row(run: RunInfo) -> _RunRow:
        info = canonical_json(run.model_dump(mode="json"))
        group, shard = run.settings.group, run.settings.shard
        index = count = None
        if shard is not None and "/" in shard:
            index, count = (int(part) for part in shard.split("/", 1))
        return {
            "run_group": group,
            "shard_index": index,
            "shard_count": count,
            "id": run.id,
            "suite": run.suite,
            "rubric": run.rubric,
            "rubric_hash": run.rubric_hash,
            "models": canonical_json(list(run.models)),
            "seed": run.seed,
            "template_id": run.template_id,
            "template_hash": run.template_hash,
            "created_at": run.created_at,
            "status": run.status,
            "info_json": info,
            "format_version": STORE_FORMAT_VERSION,
        }

    def _parse_run(self, *row: Any) -> RunInfo:
        return _checked_run(self.url, self._sealer, tuple(row))

    @staticmethod
    def _runs_query(suite: str | None, status: str | None) -> Select[Any]:
        query = select(*_RUN_READ)
        if suite is not None:
            query = query.where(_runs.c.suite == suite)
        if status is not None:
            query = query.where(_runs.c.status == status)
        return query.order_by(_runs.c.created_at.desc(), _runs.c.id.desc())

    @staticmethod
    def _exists(conn: Connection, run_id: str) -> bool:
        return conn.execute(select(_runs.c.id).where(_runs.c.id == run_id)).first() is not None

    def _resolve_id(self, conn: Connection, run_id: str) -> str:
        """The exact id if stored, a ``last``/``last~N`` run, else the one id starting so.

        Generated ids start with their date, so ``last`` is never one's prefix.
        """
        if run_id and self._exists(conn, run_id):
            return run_id
        relative = _RELATIVE.fullmatch(run_id)
        if relative:
            return self._nth_newest(conn, run_id, int(relative.group(1) or 0))
        if not run_id:
            raise self._unknown(run_id)
        query = (select(_runs.c.id).where(_runs.c.id.startswith(run_id, autoescape=True))
                 .order_by(_runs.c.id).limit(6))
        found = [str(i) for (i,) in conn.execute(query)]
        if not found:
            raise self._unknown(run_id)
        if len(found) > 1:
            raise self._ambiguous(run_id, found)
        return found[0]

    def _nth_newest(self, conn: Connection, ref: str, back: int) -> str:
        """The id of the run ``back`` runs before the newest one stored (any suite)."""
        query = self._runs_query(None, None).offset(back).limit(1)
        row = conn.execute(query).first()
        if row is None:
            count = conn.execute(select(func.count()).select_from(_runs)).scalar_one()
            exc = UnknownRunError(f"no run {ref!r} in {self.url}: it holds {count} run(s), "
                                  "`last` being the newest and `last~1` the one before")
            exc.store = self.url
            raise exc
        return str(row[0])

    def _load_run(self, conn: Connection, run_id: str) -> RunInfo:
        query = select(*_RUN_READ).where(_runs.c.id == run_id)
        row = conn.execute(query).first()
        if row is None:
            raise self._unknown(run_id)
        return self._parse_run(*row)

    def _ambiguous(self, run_id: str, found: Sequence[str]) -> StoreError:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        exc = AmbiguousRunError(f"run id prefix {run_id!r} is ambiguous in {self.url}: it "
                                f"starts {shown}; give more characters")
        exc.store = self.url
        return exc

    def _unknown(self, run_id: str) -> StoreError:
        exc = UnknownRunError(f"no run {run_id!r} in {self.url}; `judge runs list` lists the runs")
        exc.store = self.url
        return exc

    def _failed(self, exc: SQLAlchemyError) -> StoreError:
        message = self._scrub(exc)
        database = self._engine.url.database if self._engine.url.get_backend_name() \
            == "sqlite" else None
        if database and ("malformed" in message or "not a database" in message):
            # A damaged SQLite file: name it and say what to do, rather than a bare driver line.
            return StoreError(
                f"run store {database}: the file is damaged ({message})\n  fix: move it "
                f"aside (mv {database} {database}.damaged): the next command creates a new "
                f"store; `sqlite3 {database}.damaged .recover | sqlite3 {database}` may "
                "salvage its runs; baselines are files and are not affected")
        if self._server and isinstance(exc, DBAPIError) and _is_disconnect(exc):
            return StoreError(f"run store {self.url}: {message}\n  fix: check that the "
                              "database server is up and that the store URL (--store or the "
                              "store_url setting) names it")
        return StoreError(f"run store {self.url}: {message}")

    def _scrub(self, exc: BaseException) -> str:
        """The driver's message, never with the password in it."""
        cause = getattr(exc, "orig", None) or exc
        message = str(cause).strip()
        return self._sql.scrub(message) if self._sql is not None else mask_url(message)


def _is_disconnect(exc: DBAPIError) -> bool:
    """A server-side connection loss psycopg reports as an operational error."""
    name = type(exc.orig).__name__ if exc.orig is not None else ""
    return name in {"OperationalError", "AdminShutdown", "InterfaceError"}
