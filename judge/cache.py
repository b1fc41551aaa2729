"""The judgment cache: raw completions keyed by the sha256 of everything that shapes them.

The one module that imports diskcache (lazily: importing this module is cheap). An entry is a
plain JSON object, stored as the bytes of its canonical JSON::

    {"format": 1,
     "key": "<sha256 hex of canonical {"format": 1, "request": request}>",
     "request": {            # the key material: all that can change the output, nothing else
        "model": str, "messages": [{"role", "content"}, ...], "temperature": float,
        "seed": int | null, "responseFormat": dict | null, "outputMode": str,
        "params": {sampling params: max_tokens, top_p, ...}},
     "turns": [              # the first call, then any repair turns, as received
        {"text": str, "finishReason", "modelReported", "promptTokens", "completionTokens",
         "costUsd", "latencyMs", "outputMode"}, ...],
     "meta": {"templateId", "templateHash", "rubricId", "rubricHash",
              "createdAt": ISO 8601 str, "judgeflow": version str}}

Entries never expire and are never evicted: no expiry is ever set, the eviction policy is
``none``. Several processes may share one directory (diskcache is SQLite in WAL mode).
API keys, base URLs and authorization headers are refused at any depth of an entry.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO, TypedDict, get_args

from .canonical import canonical_json, sha256_hex
from .errors import UsageError

__all__ = [
    "CACHE_FORMAT",
    "CACHE_MODES",
    "CacheMode",
    "ImportReport",
    "JudgmentCache",
    "VerifyReport",
    "build_entry",
    "cache_key",
    "entry_problems",
]

CACHE_FORMAT = 1

CacheMode = Literal["read-write", "read-only", "offline", "refresh", "off"]
CACHE_MODES: tuple[CacheMode, ...] = get_args(CacheMode)

_READABLE = frozenset({"read-write", "read-only", "offline"})
_WRITABLE = frozenset({"read-write", "refresh"})
_DBNAME = "cache.db"  # diskcache's SQLite file inside the directory
_INDEX_FILE = "replay-index.sqlite"  # the replay index (see judge.replay): derived, droppable
_INDEXING = frozenset({"read-write", "refresh", "offline"})
_ENTRY_FIELDS = frozenset({"format", "key", "request", "turns", "meta"})
# Dict keys (compared lower-cased, without separators) that name credentials or endpoints.
# Exact names, not substrings: "promptTokens" or a rubric category must not trip them.
_SECRET_NAMES = frozenset({
    "apikey", "xapikey", "apibase", "apiurl", "baseurl", "authorization",
    "proxyauthorization", "accesstoken", "apitoken", "apisecret", "clientsecret",
    "secretkey", "awssecretaccesskey", "password",
})


class ImportReport(TypedDict):
    """What :meth:`JudgmentCache.import_jsonl` did with each line."""

    added: int
    skipped: int
    rejected: int
    errors: list[str]


class VerifyReport(TypedDict):
    """What :meth:`JudgmentCache.verify` found."""

    checked: int
    ok: int
    corrupt: list[str]
    reasons: dict[str, str]


def _normalised(value: Any) -> Any:
    # 0 and 0.0 are the same number to a provider's JSON parser but not to json.dumps:
    # integral floats hash as ints, so temperature=0 and temperature=0.0 share a key.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(v) for v in value]
    return value


def cache_key(request: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of ``{"format": CACHE_FORMAT, "request": request}``.

    Integral floats are written as integers first, so ``temperature: 0`` from a YAML file
    and ``0.0`` from a flag find the same entry.
    """
    return sha256_hex({"format": CACHE_FORMAT, "request": _normalised(request)})


def build_entry(request: Mapping[str, Any], turns: Iterable[Mapping[str, Any]],
                meta: Mapping[str, Any], *, key: str | None = None) -> dict[str, Any]:
    """Build an entry, filling in its format and key (``meta`` must carry ``createdAt``).

    ``key``, when the caller has just computed ``cache_key(request)``, saves hashing the
    request (all its messages) a second time.
    """
    req = dict(request)
    return {"format": CACHE_FORMAT, "key": key or cache_key(req), "request": req,
            "turns": [dict(t) for t in turns], "meta": dict(meta)}


@functools.lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    return "".join(c for c in key.lower() if c.isalnum()) in _SECRET_NAMES


def _any_secret(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if _secret_name(str(k)):
                    return True
                if isinstance(v, Mapping | list | tuple):
                    stack.append(v)
        elif isinstance(node, list | tuple):
            stack.extend(v for v in node if isinstance(v, Mapping | list | tuple))
        elif isinstance(node, Mapping):
            stack.append(dict(node))
    return False


def _secret_paths(value: Any) -> list[str]:
    if not _any_secret(value):  # the usual case, without building a path for every node
        return []
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, Mapping):
            for k, v in node.items():
                where = f"{path}.{k}" if path else str(k)
                if _secret_name(str(k)):
                    found.append(where)
                stack.append((where, v))
        elif isinstance(node, list | tuple):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
    return sorted(found)


def _parse_time(text: str) -> datetime:
    """Parse an ISO 8601 date or time; a naive one is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _key_problems(entry: Mapping[str, Any], request: Mapping[str, Any]) -> list[str]:
    try:
        expected = cache_key(request)
    except (TypeError, ValueError) as exc:
        return [f"request is not canonical JSON: {exc}"]
    if entry.get("key") != expected:
        return [f"key {str(entry.get('key'))[:16]}… does not match "
                f"the request (expected {expected[:16]}…)"]
    return []


def entry_problems(entry: Any, *, built: bool = False) -> list[str]:
    """Why ``entry`` is not a valid cache entry; empty when it is.

    ``built`` (see :meth:`JudgmentCache.put`): the key is not hashed again, and messages
    that are plain role/content pairs are not scanned for credential fields.
    """
    if not isinstance(entry, Mapping):
        return ["entry is not a JSON object"]
    request = entry.get("request")
    scanned: Any = entry
    if built and isinstance(request, Mapping) and isinstance(request.get("messages"), list) \
            and all(isinstance(m, Mapping) and set(m) <= {"role", "content"}
                    for m in request["messages"]):
        scanned = {**entry, "request": {**request, "messages": []}}
    else:
        built = False
    problems = [f"credential-like field {p!r} must never be cached"
                for p in _secret_paths(scanned)]
    missing = sorted(_ENTRY_FIELDS - entry.keys())
    unknown = sorted(str(k) for k in entry.keys() - _ENTRY_FIELDS)
    if missing:
        problems.append(f"missing field(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown field(s): {', '.join(unknown)}")
    if "format" in entry and entry["format"] != CACHE_FORMAT:
        problems.append(f"format {entry['format']!r} is not {CACHE_FORMAT}")
    if "request" in entry:
        if not isinstance(request, Mapping):
            problems.append("request is not an object")
        else:
            if not isinstance(request.get("model"), str) or not request["model"]:
                problems.append("request.model is not a non-empty string")
            if not isinstance(request.get("messages"), list):
                problems.append("request.messages is not a list")
            if not built:  # else hashed from this very request by build_entry
                problems += _key_problems(entry, request)
    turns = entry.get("turns")
    if "turns" in entry and (not isinstance(turns, list) or not turns):
        problems.append("turns is not a non-empty list")
    elif isinstance(turns, list):
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping) or not isinstance(turn.get("text"), str):
                problems.append(f"turns[{i}] has no text")
    meta = entry.get("meta")
    if "meta" in entry:
        created = meta.get("createdAt") if isinstance(meta, Mapping) else None
        if not isinstance(meta, Mapping):
            problems.append("meta is not an object")
        elif not isinstance(created, str):
            problems.append("meta.createdAt is not a string")
        else:
            try:
                _parse_time(created)
            except ValueError:
                problems.append(f"meta.createdAt {created!r} is not ISO 8601")
    return problems


class _RefusedValue(Exception):
    """A stored value that is not plain bytes: never decoded, reported as corrupt."""


class _PickledKey:
    """A key another program stored pickled: kept as bytes so it can be named and deleted."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"<pickled key {self.data[:12].hex()}…>"


@functools.cache
def _bytes_only_disk() -> type:
    """Make a diskcache ``Disk`` that only ever stores and returns bytes.

    diskcache pickles any value that is not bytes/str/number, and unpickles whatever a row's
    mode says is a pickle. A cache directory is shared and imported from elsewhere, so a
    planted row must not run code when read: pickled values and keys are refused, not loaded.
    """
    import sqlite3

    import diskcache
    from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, UNKNOWN

    class BytesOnlyDisk(diskcache.Disk):  # type: ignore[misc]
        def put(self, key: Any) -> Any:
            if isinstance(key, _PickledKey):
                return sqlite3.Binary(key.data), False
            return super().put(key)

        def get(self, key: Any, raw: bool) -> Any:
            return super().get(key, raw) if raw else _PickledKey(bytes(key))

        def store(self, value: Any, read: bool, key: Any = UNKNOWN) -> Any:
            if type(value) is not bytes:
                raise TypeError("the judgment cache stores bytes only")
            return super().store(value, read, key=key)

        def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
            if mode not in (MODE_RAW, MODE_BINARY) or read:
                kind = "pickled" if mode == MODE_PICKLE else f"of mode {mode}"
                raise _RefusedValue(f"stored value is {kind}, not bytes: refused")
            return super().fetch(mode, filename, value, read)

    return BytesOnlyDisk


def _open_diskcache(directory: Path) -> Any:
    import sqlite3

    import diskcache

    try:
        # Settings are stored in the database; passing them on every open pins them.
        # No memory map of the database: a 100k-entry replay would otherwise count up to
        # 64 MB of mapped file in the process's resident memory for no speed we can measure.
        return diskcache.Cache(str(directory), disk=_bytes_only_disk(),
                               eviction_policy="none", size_limit=2**40, statistics=False,
                               sqlite_mmap_size=0)
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"cannot open the cache: {exc}", file=str(directory),
                         fix="point --dir (or JUDGE_CACHE_DIR) at a writable directory") from None


def _light_problems(entry: Any) -> list[str]:
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
        return ["not an entry of this cache format"]
    turns = entry.get("turns")
    if not isinstance(entry.get("key"), str) or not isinstance(turns, list) or not turns \
            or not all(isinstance(t, dict) and isinstance(t.get("text"), str) for t in turns):
        return ["entry has no key or no turns with text"]
    return []


_HEAD = b'{"format":%d,"key":"' % CACHE_FORMAT
_TURNS = b',"turns":'


def _turns_alone(raw: bytes, key: str) -> list[dict[str, Any]] | None:
    """The turns of an entry stored as canonical JSON, parsed without the rest; else None.

    A judgment needs only the turns, but an entry is mostly its prompt (~10 KB). Canonical
    JSON sorts keys, so a stored entry reads ``{"format":1,"key":"…",…,"turns":[…]}``: the
    turns are the last member, and ``,"turns":`` cannot occur inside a string (a quote there
    is escaped). The slice must parse as exactly one list, so a nested "turns" member fails
    to parse rather than being mistaken for it; anything not laid out so returns None and
    the caller parses the whole entry.
    """
    head = _HEAD + key.encode("ascii", "replace") + b'",'
    at = raw.rfind(_TURNS)
    if not raw.startswith(head) or not raw.endswith(b"}") or at < len(head):
        return None
    try:
        turns = json.loads(raw[at + len(_TURNS):-1].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(turns, list) or _light_problems(
            {"format": CACHE_FORMAT, "key": key, "turns": turns}):
        return None
    return turns


class JudgmentCache:
    """Cache entries in a directory, read and written as the mode allows.

    ``off`` never touches the disk; the read-only modes never create the directory.
    """

    def __init__(self, directory: str | Path, mode: CacheMode = "read-write") -> None:
        if mode not in CACHE_MODES:
            raise UsageError(f"unknown cache mode {mode!r}", fix=f"one of {', '.join(CACHE_MODES)}")
        self.directory = Path(directory)
        self.mode: CacheMode = mode
        self.readable: bool = mode in _READABLE
        self.writable: bool = mode in _WRITABLE
        self._counters = {"hits": 0, "misses": 0, "writes": 0, "corrupt": 0}
        self._dc: Any = None
        self._index: Any = None
        self._index_ok = mode in _INDEXING
        self._store()

    def __repr__(self) -> str:
        return f"JudgmentCache({str(self.directory)!r}, mode={self.mode!r})"

    def _store(self) -> Any:
        """Return the diskcache, opened on first need; None while there is nothing to open."""
        if self._dc is None and self.mode != "off" and (
                self.writable or (self.directory / _DBNAME).is_file()):
            self._dc = _open_diskcache(self.directory)
        return self._dc

    def _require_writable(self, what: str) -> Any:
        if not self.writable:
            raise UsageError(f"cannot {what}: the cache at {self.directory} is open "
                             f"{self.mode!r}", fix="open it read-write")
        return self._store()

    # --- reading -------------------------------------------------------------------------

    def _load(self, key: Any, *, full: bool = True,
              turns_only: bool = False) -> tuple[dict[str, Any] | None, str | None]:
        """(entry, None) when sound, (None, reason) when corrupt, (None, None) when absent.

        ``full=False`` (the read path of a run) checks what a judgment needs — JSON, the
        format, the key it is stored under, its turns — and leaves re-hashing the request
        and the credential scan to ``put`` and ``judge cache verify``: they cost more per
        hit than everything else a replay does. ``turns_only`` may return just the format,
        key and turns of a sound entry, skipping the parse of its prompt.
        """
        store = self._store()
        if store is None or not isinstance(key, str):
            return None, None
        missing = object()
        try:
            raw = store.get(key, default=missing, retry=True)
        except _RefusedValue as exc:
            return None, str(exc)
        if raw is missing:
            # A row whose value file is gone reads as missing: tell it from a real miss.
            return (None, "value file missing") if key in store else (None, None)
        if type(raw) is not bytes:
            return None, f"stored value is {type(raw).__name__}, not bytes"
        if turns_only:
            turns = _turns_alone(raw, key)
            if turns is not None:
                return {"format": CACHE_FORMAT, "key": key, "turns": turns}, None
        try:
            entry = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return None, f"not JSON: {exc}"
        problems = entry_problems(entry) if full else _light_problems(entry)
        if not problems and entry["key"] != key:
            problems = [f"stored under {key[:16]}… but its key is {entry['key'][:16]}…"]
        if problems:
            return None, "; ".join(problems)
        return entry, None

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the entry for ``key``; None on a miss, when unreadable, or when corrupt.

        Every None counts as a miss; a corrupt entry also counts as corrupt.
        """
        return self._counted(*self._read(key, turns_only=False), count=True)

    def turns(self, key: str, *, count: bool = True) -> list[dict[str, Any]] | None:
        """The turns of the entry for ``key`` (what a judgment needs), as :meth:`get` finds it.

        ``count=False`` is a look that the counters do not see (the replay index's, which
        falls back to a counted look when it finds nothing).
        """
        entry = self._counted(*self._read(key, turns_only=True), count=count)
        return None if entry is None else list(entry["turns"])

    def _read(self, key: str, *,
              turns_only: bool) -> tuple[dict[str, Any] | None, str | None]:
        return self._load(key, full=False, turns_only=turns_only) if self.readable \
            else (None, None)

    def _counted(self, entry: dict[str, Any] | None, problem: str | None, *,
                 count: bool) -> dict[str, Any] | None:
        if count:
            if problem is not None:
                self._counters["corrupt"] += 1
            self._counters["hits" if entry is not None else "misses"] += 1
        return entry

    def count_hit(self) -> None:
        """Count a hit that was read with ``count=False``."""
        self._counters["hits"] += 1

    # --- the replay index ----------------------------------------------------------------

    def _index_store(self) -> Any:
        """The index's SQLite connection (``replay-index.db`` in the directory), or None.

        The index is derived data (:mod:`judge.replay`), kept in a plain SQLite table of
        its own rather than in diskcache: a lookup is one indexed SELECT (~6 us against
        ~19 us through diskcache's get), and it is on the path of every replayed judgment.
        A directory that cannot hold it (read-only, say) just goes without; the judgments
        are never at stake.
        """
        import sqlite3

        if self._index is None and self._index_ok and self._store() is not None:
            try:
                conn = sqlite3.connect(self.directory / _INDEX_FILE, timeout=30,
                                       isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                # A rowid table: records are ~1.3 KB, too large for WITHOUT ROWID's B-tree.
                conn.execute("CREATE TABLE IF NOT EXISTS records (fingerprint BLOB UNIQUE "
                             "NOT NULL, record BLOB NOT NULL)")
                self._index = conn
            except (OSError, sqlite3.Error):
                self._index_ok = False
        return self._index

    def _index_count(self) -> int:
        """How many replay records the directory holds (read-only, whatever the mode)."""
        import contextlib
        import sqlite3

        path = self.directory / _INDEX_FILE
        if not path.is_file():
            return 0
        try:
            with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                    uri=True)) as conn:
                return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
        except sqlite3.Error:
            return 0

    def index_get(self, fingerprint: bytes) -> bytes | None:
        """The replay record stored under ``fingerprint``, if any."""
        import sqlite3

        index = self._index_store() if self.readable else None
        if index is None:
            return None
        try:
            row = index.execute("SELECT record FROM records WHERE fingerprint = ?",
                                (fingerprint,)).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row is not None and type(row[0]) is bytes else None

    def index_put(self, records: Iterable[tuple[bytes, bytes]]) -> None:
        """Store replay records (fingerprint, record) in one transaction.

        A failure to write only loses the shortcut: the index is then left alone.
        """
        import sqlite3

        index = self._index_store()
        if index is None:
            return
        try:
            index.execute("BEGIN IMMEDIATE")
            try:
                index.executemany("INSERT OR REPLACE INTO records VALUES (?, ?)", records)
            except BaseException:
                index.execute("ROLLBACK")
                raise
            index.execute("COMMIT")
        except (OSError, sqlite3.Error):
            self._index_ok = False

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is stored (whatever the mode lets ``get`` see)."""
        store = self._store()
        return store is not None and isinstance(key, str) and key in store

    def __len__(self) -> int:
        store = self._store()
        return 0 if store is None else len(store)

    def _keys(self) -> Iterator[Any]:
        store = self._store()
        if store is not None:
            yield from store.iterkeys()  # SQL order of TEXT keys: sorted, streamed

    def _scan(self) -> Iterator[tuple[Any, dict[str, Any] | None, str | None]]:
        for key in self._keys():
            entry, problem = self._load(key) if isinstance(key, str) else (
                None, "key is not text")
            if entry is not None or problem is not None:  # else deleted under our feet
                yield key, entry, problem

    def iter_entries(self) -> Iterator[dict[str, Any]]:
        """Every sound entry, sorted by key; corrupt ones are skipped (see :meth:`verify`)."""
        for _, entry, _ in self._scan():
            if entry is not None:
                yield entry

    def counters(self) -> dict[str, int]:
        """Return this instance's hits, misses, writes and corrupt reads."""
        return dict(self._counters)

    def stats(self) -> dict[str, Any]:
        """Summarise: entries, bytes on disk, per model, oldest/newest, this instance's counters."""
        models: dict[str, int] = {}
        entries = corrupt = 0
        oldest: tuple[datetime, str] | None = None
        newest: tuple[datetime, str] | None = None
        for _, entry, _ in self._scan():
            entries += 1
            if entry is None:
                corrupt += 1
                continue
            model = entry["request"]["model"]
            models[model] = models.get(model, 0) + 1
            created = entry["meta"]["createdAt"]
            moment = (_parse_time(created), created)
            oldest = moment if oldest is None or moment < oldest else oldest
            newest = moment if newest is None or moment > newest else newest
        size = 0
        if self.directory.is_dir():
            for root, _, files in os.walk(self.directory):
                for name in files:
                    try:
                        size += (Path(root) / name).stat().st_size
                    except OSError:  # a WAL or value file removed meanwhile
                        pass
        return {
            "directory": str(self.directory),
            "mode": self.mode,
            "exists": (self.directory / _DBNAME).is_file(),
            "entries": entries,
            "corrupt": corrupt,
            "bytes": size,
            "models": dict(sorted(models.items())),
            "oldest": oldest[1] if oldest else None,
            "newest": newest[1] if newest else None,
            "indexRecords": self._index_count(),
            "counters": self.counters(),
        }

    def verify(self) -> VerifyReport:
        """Re-read and re-hash every entry; name the corrupt ones and why."""
        report: VerifyReport = {"checked": 0, "ok": 0, "corrupt": [], "reasons": {}}
        for key, entry, problem in self._scan():
            report["checked"] += 1
            if entry is not None:
                report["ok"] += 1
            else:
                name = key if isinstance(key, str) else repr(key)
                report["corrupt"].append(name)
                report["reasons"][name] = problem or "unreadable"
        return report

    def export_jsonl(self, fp: TextIO) -> int:
        """Write one canonical entry per line, sorted by key; returns the count.

        The same entries always give the same bytes, so an export diffs well in git.
        """
        count = 0
        for entry in self.iter_entries():
            fp.write(canonical_json(entry) + "\n")
            count += 1
        return count

    # --- writing -------------------------------------------------------------------------

    def _validated(self, entry: Any, *, built: bool = False) -> bytes:
        problems = entry_problems(entry, built=built)
        if problems:
            raise ValueError("invalid cache entry: " + "; ".join(problems))
        # Raw bytes are stored as they are, never pickled: loading an entry parses JSON and
        # can never execute code, whoever wrote the directory or the imported file.
        return canonical_json(dict(entry)).encode("utf-8")

    def put(self, entry: Mapping[str, Any], *, built: bool = False) -> bool:
        """Store ``entry`` (replacing any under its key); False when the mode forbids writes.

        Raises ``ValueError`` for an invalid entry: wrong key, no turns, a credential field.
        ``built``: the entry comes from :func:`build_entry` in this process, with the key
        hashed there from its request; the check then skips re-hashing the request and
        scanning the rendered messages (they are role/content pairs), and checks the rest.
        """
        if not self.writable:
            return False
        data = self._validated(entry, built=built)
        self._store().set(entry["key"], data, retry=True)
        self._counters["writes"] += 1
        return True

    def import_jsonl(self, fp: TextIO) -> ImportReport:
        """Add the valid entries of a JSONL export; existing keys are kept, not replaced."""
        store = self._require_writable("import")
        report: ImportReport = {"added": 0, "skipped": 0, "rejected": 0, "errors": []}
        for number, line in enumerate(fp, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                data = self._validated(entry)
            except (ValueError, RecursionError) as exc:
                report["rejected"] += 1
                report["errors"].append(f"line {number}: {exc}")
                continue
            if store.add(entry["key"], data, retry=True):
                report["added"] += 1
                self._counters["writes"] += 1
            else:
                report["skipped"] += 1
        return report

    def prunable(self, *, model: str | None = None, before: str | None = None,
                 corrupt: bool = False, all_entries: bool = False) -> list[dict[str, Any]]:
        """List what :meth:`prune` would remove: ``{"key", "model", "createdAt", "reason"}`` each.

        Sound entries go when they match every filter given (``model``, created ``before``);
        corrupt ones go when ``corrupt`` is set. Without any filter, ``all_entries`` is needed.
        """
        if model is None and before is None and not corrupt and not all_entries:
            raise ValueError("prune needs a filter (model, before, corrupt) or all_entries")
        cutoff = _parse_time(before) if before is not None else None
        by_filter = all_entries or model is not None or before is not None
        chosen: list[dict[str, Any]] = []
        for key, entry, problem in self._scan():
            if entry is None:
                if corrupt or all_entries:
                    chosen.append({"key": key, "model": None, "createdAt": None,
                                   "reason": f"corrupt: {problem}"})
                continue
            created = entry["meta"]["createdAt"]
            if by_filter and (model is None or entry["request"]["model"] == model) and (
                    cutoff is None or _parse_time(created) < cutoff):
                chosen.append({"key": key, "model": entry["request"]["model"],
                               "createdAt": created, "reason": "matched"})
        return chosen

    def remove(self, keys: Iterable[Any]) -> int:
        """Delete ``keys``; returns how many were there to delete.

        Removing anything also clears the replay index (see :meth:`clear_index`).
        """
        store = self._require_writable("remove entries")
        removed = sum(1 for key in keys if store.delete(key, retry=True))
        if removed:
            self.clear_index()
        return removed

    def prune(self, *, model: str | None = None, before: str | None = None,
              corrupt: bool = False, all_entries: bool = False, dry_run: bool = False) -> int:
        """Remove the entries :meth:`prunable` selects; returns the count (to be) removed."""
        if not dry_run:
            self._require_writable("prune")
        chosen = self.prunable(model=model, before=before, corrupt=corrupt,
                               all_entries=all_entries)
        if dry_run:
            return len(chosen)
        return self.remove(item["key"] for item in chosen)

    def clear_index(self) -> None:
        """Drop every replay record (derived data: later runs record what they find again).

        Records of pruned entries are harmless (a replay falls back when an entry is gone),
        but records of old code, rubric or template versions are never read again: pruning
        is the moment to let them go.
        """
        import sqlite3

        index = self._index_store()
        if index is not None:
            try:
                index.execute("DELETE FROM records")
            except sqlite3.Error:
                self._index_ok = False

    # --- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the SQLite connections."""
        for store in (self._dc, self._index):
            if store is not None:
                store.close()
        self._dc = self._index = None

    def __enter__(self) -> JudgmentCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
