"""Reading a run store without SQLAlchemy: what ``judge history``, ``show`` and ``export`` need.

Importing SQLAlchemy costs more than the whole of those commands' own work (~0.3 s of CPU
on a small machine), so a store that is simply there to be read is read through the
database's own client library: :mod:`sqlite3`, or libpq for ``postgresql+psycopg://``
(:mod:`judge.store.libpq`: importing psycopg would cost ~0.15 s more). The queries are the ones
:class:`judge.store.runs.RunStore` runs, on the tables it made; the stored JSON is the value, as
there.

:func:`open_reader` only serves a store it can read as it is: an existing SQLite file or a
reachable PostgreSQL database, at the head schema revision. For anything else (no store
yet, a schema to migrate or refuse, a URL form it does not parse, a damaged file) it
returns None and the caller opens the :class:`~judge.store.runs.RunStore`, which creates,
migrates or explains. Both satisfy :class:`RunReader`.
"""

from __future__ import annotations

import importlib.util
import re
import sqlite3
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from ..core.errors import AmbiguousRunError, StoreError, UnknownRunError
from ..core.models import CaseResult, RunInfo
from ..core.secrets import MASK, mask_url
from . import libpq
from .revisions import HEAD, STORE_FORMAT_VERSION
from .seal import Damage, DamagedRowError, Sealer, check_copies, run_copies_ok

__all__ = [
    "RunReader",
    "StoreReader",
    "ambiguous_prefix",
    "checked_result",
    "checked_run",
    "open_reader",
    "parse_run",
    "unknown_run",
]

_SQLITE = re.compile(r"sqlite(\+pysqlite)?:///(?P<path>[^?#%]+)")
_POSTGRES = re.compile(r"postgresql\+psycopg://(?P<rest>.+)")
_PLACEHOLDER = re.compile(r"\?")
_RUN_COLUMNS = "id, suite, status, info_json, format_version, seal"
_RESULT_COLUMNS = ("case_id, model, sample, status, overall_score, band, passed, "
                   "result_json, format_version, seal")
_FAILURES = " AND (status <> 'scored' OR passed = ?)"
"""What ``--failures`` keeps: not scored, or scored and failed (judge.app.runs.is_failure)."""


class RunReader(Protocol):
    """The reads of a run store that the history, show and export operations make."""

    @property
    def url(self) -> str:
        """The store's URL with no password in it."""
        ...

    def get_run(self, run_id: str) -> RunInfo:
        """The run with this id, or the one run whose id starts with it."""
        ...

    def list_runs(self, suite: str | None = None, limit: int | None = 50) -> list[RunInfo]:
        """Runs newest first, at most ``limit``."""
        ...

    def iter_results(self, run_id: str, *, batch: int = 1000, offset: int = 0,
                     limit: int | None = None,
                     failures_only: bool = False) -> Iterator[CaseResult]:
        """A run's results in case order, from ``offset``, at most ``limit``."""
        ...

    def result_count(self, run_id: str, *, failures_only: bool = False) -> int:
        """How many results the run has (only failures with ``failures_only``)."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


class StoreReader:
    """A read-only connection to a run store at the head revision (see :func:`open_reader`)."""

    def __init__(self, conn: Any, url: str, *, postgres: bool, password: str | None,
                 secret: str | None = None) -> None:
        """Wrap an open DB-API connection; :func:`open_reader` makes one."""
        self._conn = conn
        self._sealer = Sealer(secret)
        self._pg = postgres
        self._password = password
        self._seen: set[str] = set()  # run ids found: not looked up again (a round trip)
        self.url = url

    # -- the reads ------------------------------------------------------------------------

    def get_run(self, run_id: str) -> RunInfo:
        """The run with this id, or the one run whose id starts with it (like git)."""
        exact = self._rows(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", run_id)
        if exact:
            self._seen.add(run_id)
            return self._parse_run(*exact[0])
        if not run_id:
            raise self._unknown(run_id)
        escaped = run_id.replace("/", "//").replace("%", "/%").replace("_", "/_")
        found = [str(r[0]) for r in self._rows(
            "SELECT id FROM runs WHERE id LIKE ? || '%' ESCAPE '/' ORDER BY id LIMIT 6",
            escaped)]
        if not found:
            raise self._unknown(run_id)
        if len(found) > 1:
            raise ambiguous_prefix(self.url, run_id, found)
        (row,) = self._rows(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?",
                            found[0])
        self._seen.add(found[0])
        return self._parse_run(*row)

    def list_runs(self, suite: str | None = None, limit: int | None = 50) -> list[RunInfo]:
        """Runs newest first (``createdAt``, then id, descending), at most ``limit``."""
        where, params = self._where(suite=suite, status=None)
        sql = f"SELECT {_RUN_COLUMNS} FROM runs{where} " \
              "ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [self._parse_run(*row) for row in self._rows(sql, *params)]

    def runs_with_status(self, status: str) -> list[RunInfo]:
        """Every run in ``status``, newest first."""
        where, params = self._where(suite=None, status=status)
        return [self._parse_run(*row) for row in self._rows(
            f"SELECT {_RUN_COLUMNS} FROM runs{where} "
            "ORDER BY created_at DESC, id DESC", *params)]

    def iter_results(self, run_id: str, *, batch: int = 1000, offset: int = 0,
                     limit: int | None = None,
                     failures_only: bool = False) -> Iterator[CaseResult]:
        """A run's results by case id, model, sample; from ``offset``, at most ``limit``.

        An unknown id fails here, not at the first ``next()``; rows come ``batch`` at a time.
        """
        if batch < 1:
            raise ValueError("batch must be at least 1")
        sql, params = self._results(_RESULT_COLUMNS, run_id, failures_only)
        sql += " ORDER BY case_id, model, sample"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None and not self._pg else limit, offset]
        # A page that fits one batch is one query; else a cursor hands out ``batch`` rows.
        return self._stream(sql, params, batch, run_id,
                            whole=limit is not None and limit <= batch)

    def result_count(self, run_id: str, *, failures_only: bool = False) -> int:
        """How many results the run has (only failures with ``failures_only``)."""
        sql, params = self._results("count(*)", run_id, failures_only)
        return int(self._rows(sql, *params)[0][0])

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the connection."""
        self._conn.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        """``?`` placeholders as libpq's ``$1``, ``$2``, ... on PostgreSQL."""
        if not self._pg:
            return sql
        count = iter(range(1, sql.count("?") + 1))
        return _PLACEHOLDER.sub(lambda _: f"${next(count)}", sql)

    def _rows(self, sql: str, *params: Any) -> list[Sequence[Any]]:
        with self._reading():
            if self._pg:
                return list(self._conn.execute(self._sql(sql), params))
            return list(self._conn.execute(sql, params).fetchall())

    def _stream(self, sql: str, params: list[Any], batch: int, run_id: str, *,
                whole: bool) -> Iterator[CaseResult]:
        if not self._pg:
            batches = self._sqlite_batches(sql, params, batch)
        elif whole:
            batches = self._pg_whole(sql, params)
        else:
            batches = self._pg_batches(sql, params, batch)
        with self._reading(), closing(batches):
            for chunk in batches:
                for row in chunk:
                    yield checked_result(self.url, self._sealer, run_id, tuple(row))

    def _sqlite_batches(self, sql: str, params: list[Any],
                        batch: int) -> Generator[list[Any]]:
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(batch):
                yield rows
        finally:
            cursor.close()

    def _pg_whole(self, sql: str, params: list[Any]) -> Generator[list[Any]]:
        yield self._conn.execute(self._sql(sql), params)

    def _pg_batches(self, sql: str, params: list[Any], batch: int) -> Generator[list[Any]]:
        """A server-side cursor in a read-only transaction: ``batch`` rows at a time."""
        self._conn.execute("BEGIN READ ONLY")
        try:
            self._conn.execute(f"DECLARE judge_results NO SCROLL CURSOR FOR {self._sql(sql)}",
                               params)
            while rows := self._conn.execute(f"FETCH FORWARD {int(batch)} FROM judge_results"):
                yield rows
        finally:
            try:
                self._conn.execute("ROLLBACK")
            except libpq.PgError:
                pass  # the connection is gone: the error that ended the reads says so

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The driver's errors as StoreError (no password)."""
        try:
            yield
        except Exception as exc:
            if _driver_error(exc):
                raise self._failed(exc) from exc
            raise

    @staticmethod
    def _where(*, suite: str | None, status: str | None) -> tuple[str, list[Any]]:
        clauses, params = [], []
        for column, value in (("suite", suite), ("status", status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _results(self, what: str, run_id: str,
                 failures_only: bool) -> tuple[str, list[Any]]:
        """SELECT ``what`` over a known run's results (only failures with ``failures_only``)."""
        self._known(run_id)
        sql = f"SELECT {what} FROM case_results WHERE run_id = ?"
        params: list[Any] = [run_id]
        if failures_only:
            sql += _FAILURES
            params.append(False)
        return sql, params

    def _known(self, run_id: str) -> None:
        if run_id in self._seen:
            return
        if not self._rows("SELECT id FROM runs WHERE id = ?", run_id):
            raise self._unknown(run_id)
        self._seen.add(run_id)

    def _parse_run(self, *row: Any) -> RunInfo:
        return checked_run(self.url, self._sealer, tuple(row))

    def _unknown(self, run_id: str) -> StoreError:
        return unknown_run(self.url, run_id)

    def _failed(self, exc: BaseException) -> StoreError:
        message = mask_url(str(exc).strip())
        if self._password:
            message = message.replace(self._password, MASK)
        return StoreError(f"run store {self.url}: {message}")


def parse_run(url: str, text: str, version: int) -> RunInfo:
    """A stored run row's value; StoreError for a row format newer than this code reads."""
    if version > STORE_FORMAT_VERSION:
        raise StoreError(f"{url} holds runs in store format {version}, newer than "
                         f"this judgeflow reads ({STORE_FORMAT_VERSION}): upgrade judgeflow")
    return RunInfo.model_validate_json(text)


def checked_run(url: str, sealer: Sealer, row: tuple[Any, ...]) -> RunInfo:
    """A run row (id, suite, status, info, version, seal) as a value, once it verifies.

    DamagedRowError (exit 2, naming the run) for a seal or copy that does not match, or a
    value that no longer parses: a damaged run is never shown.
    """
    run_id, suite, status, text, version, seal = row
    why = sealer.problem((run_id, text, int(version)), seal)
    if why is None and not run_copies_ok(text, run_id, suite, status):
        why = "its id, suite or status columns disagree with its stored value"
    if why is None:
        try:
            return parse_run(url, text, int(version))
        except ValueError:  # pydantic's ValidationError: bytes that no longer parse
            why = "its stored value does not parse"
    raise DamagedRowError(url, Damage(str(run_id), None, "", 0, why))


def checked_result(url: str, sealer: Sealer, run_id: str, row: tuple[Any, ...]) -> CaseResult:
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


def ambiguous_prefix(url: str, run_id: str, found: Sequence[str]) -> StoreError:
    """The error for a run id prefix that several stored runs start with (``found``)."""
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    exc = AmbiguousRunError(f"run id prefix {run_id!r} is ambiguous in {url}: it starts "
                            f"{shown}; give more characters")
    exc.store = url
    return exc


def unknown_run(url: str, run_id: str) -> StoreError:
    """The error for a run id the store at ``url`` does not hold."""
    exc = UnknownRunError(f"no run {run_id!r} in {url}; `judge history` lists the runs")
    exc.store = url
    return exc


def open_reader(url: str, workspace: Path, *, secret: str | None = None) -> StoreReader | None:
    """A reader of the store at ``url`` when it can be read as it is; None otherwise.

    None means: open :class:`judge.store.runs.RunStore` instead (it creates, migrates, refuses
    or explains). A PostgreSQL server that cannot be reached is a StoreError here, as there.
    """
    sqlite = _SQLITE.fullmatch(url)
    if sqlite is not None:
        return _open_sqlite(Path(sqlite["path"]).expanduser(), workspace, secret)
    postgres = _POSTGRES.fullmatch(url)
    if postgres is not None:
        return _open_postgres(url, "postgresql://" + postgres["rest"], secret)
    return None


def _open_sqlite(path: Path, workspace: Path, secret: str | None) -> StoreReader | None:
    if not path.is_absolute():
        path = (workspace / path).absolute()
    if not path.is_file():
        return None  # no store yet: RunStore makes one
    try:
        # mode=rw: never create a file; reads in autocommit see each statement's snapshot.
        conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None,
                               check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        at_head = _at_head(conn.execute("SELECT version_num FROM alembic_version").fetchall())
    except sqlite3.Error:
        at_head = False  # no version table, a damaged file...: RunStore says what it is
    if not at_head:
        conn.close()
        return None
    return StoreReader(conn, f"sqlite:///{path}", postgres=False, password=None,
                       secret=secret)


def _open_postgres(url: str, conninfo: str, secret: str | None) -> StoreReader | None:
    # Without the postgres extra (psycopg, found not imported) RunStore gives the install
    # hint; without a libpq to load, RunStore reads through psycopg.
    if importlib.util.find_spec("psycopg") is None:
        return None
    password = _password(conninfo)
    shown = _shown(url, password)
    try:
        conn = libpq.connect(conninfo)
    except libpq.ConninfoError:
        return None  # a URL libpq does not take as it is: SQLAlchemy's parsing decides
    except libpq.PgError as exc:
        message = mask_url(str(exc).strip())
        if password:
            message = message.replace(password, MASK)
        raise StoreError(f"run store {shown}: {message}") from None
    if conn is None:
        return None
    try:
        at_head = _at_head(conn.execute("SELECT version_num FROM alembic_version"))
    except libpq.PgError:
        at_head = False
    if not at_head:
        conn.close()
        return None
    return StoreReader(conn, shown, postgres=True, password=password, secret=secret)


def _driver_error(exc: BaseException) -> bool:
    """An error of the database client (sqlite3's or libpq's), not of this code."""
    return isinstance(exc, (sqlite3.Error, libpq.PgError))


def _at_head(rows: list[Any]) -> bool:
    return len(rows) == 1 and str(rows[0][0]) == HEAD


def _shown(url: str, password: str | None) -> str:
    """The URL as RunStore shows it: ``user:[REDACTED]@`` for a password, a lone user kept."""
    if password is None:
        return url
    scheme, _, rest = url.partition("://")
    userinfo, _, host = rest.rpartition("@")
    return f"{scheme}://{userinfo.partition(':')[0]}:[REDACTED]@{host}"


def _password(conninfo: str) -> str | None:
    userinfo = conninfo.split("://", 1)[1].rpartition("@")[0]
    _, colon, secret = userinfo.partition(":")
    return secret if colon and secret else None
