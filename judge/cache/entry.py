"""A judgment cache entry: its key, its digest, and what makes it valid. Pure: no disk, no clock.

An entry is a plain JSON object, stored as the bytes of its canonical JSON::

    {"digest": "<sha256 hex of the canonical JSON of the entry without this field>",
     "format": 1,
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

Decisions:

- The key covers the request only, so adding the digest changed no key and kept the format
  at 1: a digest is a check on what is stored, not part of what is asked.
- The digest covers everything else (turns, meta, the key itself). It guards against a
  flipped bit or a torn write turning into a different score; it is not a signature: whoever
  can write the directory can write a matching digest.
- An entry without a digest (written before digests existed) is not trusted on read: it is
  a miss, counted as corrupt, and the judgment is asked again (or reported missing offline).
  Importing a JSONL export is the one place a digest is added to such an entry, after the
  full check (its key re-hashed from its request, the credential scan), because an import
  is the explicit act of trusting a file;
  :meth:`judge.cache.maintenance.CacheMaintenance.upgrade` does the same for a directory
  written by an older version.
- An entry is read through :class:`CacheEntry`, and its turns through
  :class:`judge.core.formats.turns.CachedTurn`: typed views over the stored JSON object, never
  models that re-write it (see :mod:`judge.core.formats.turns`). A view makes no check: the cache
  checks what it writes and what it reads (:func:`entry_problems`, :func:`read_problems`).
- A turn is valid when it is an object whose ``text`` is a string (:func:`turns_ok`).
- ``createdAt`` is checked by a pattern for the ISO 8601 forms that
  ``datetime.fromisoformat`` reads (the adapter parses it for ``stats`` and ``prune``):
  this module may not import the clock's module, and a pattern says exactly what is taken.
- API keys, base URLs and authorization headers are refused at any depth of an entry.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from ..core.formats.turns import CachedTurn
from ..core.text.canonical import canonical_json, sha256_hex
from ..core.text.secrets import secret_paths

__all__ = [
    "CACHE_FORMAT",
    "DIGEST_MISMATCH",
    "ENTRY_FIELDS",
    "CacheEntry",
    "EntryMeta",
    "KeyedRequest",
    "build_entry",
    "cache_key",
    "digest_ok",
    "entry_digest",
    "entry_problems",
    "is_iso_time",
    "key_request",
    "read_problems",
    "seal_entry",
    "turns_ok",
    "with_digest",
]

CACHE_FORMAT = 1
DIGEST_MISMATCH = "digest does not match the content"
ENTRY_FIELDS = frozenset({"digest", "format", "key", "request", "turns", "meta"})
_HEX64 = re.compile(r"[0-9a-f]{64}")
# The ISO 8601 shapes taken; datetime.fromisoformat then checks the ranges (2025-02-30).
_ISO_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?"
                        r"(?:Z|[+-]\d{2}:?\d{2})?)?")


class EntryMeta(TypedDict, total=False):
    """An entry's ``meta``: value metadata, never part of the key.

    ``createdAt`` is required of every entry written (:func:`entry_problems` says so); the
    provenance (``judgeflow``, ``modelReported``, ``systemFingerprint``, ``engine``) is added
    by the judgment that writes it, where known.
    """

    createdAt: str
    templateId: str
    templateHash: str
    rubricId: str
    rubricHash: str
    mode: str
    """``pairwise`` for a pairwise verdict."""
    batchJob: str
    """The provider batch job that answered it."""
    judgeflow: str
    modelReported: str
    systemFingerprint: str
    engine: dict[str, Any]
    """What served the model, when known (a local server's engine and versions)."""


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One cache entry read through typed fields; ``data`` is its JSON object, as stored.

    The stored bytes are ``canonical_json(data)``: the object is the entry's wire form, and
    the properties read it without copying it.
    """

    data: dict[str, Any]

    @property
    def key(self) -> str:
        """The cache key: sha256 of the canonical request (see :func:`cache_key`)."""
        return str(self.data["key"])

    @property
    def digest(self) -> str | None:
        """The content digest (None: an entry from before digests)."""
        value = self.data.get("digest")
        return value if isinstance(value, str) else None

    @property
    def request(self) -> Mapping[str, Any]:
        """The key material: what was asked."""
        value: Mapping[str, Any] = self.data["request"]
        return value

    @property
    def model(self) -> str:
        """The judge model the request named."""
        return str(self.request["model"])

    @property
    def turns(self) -> tuple[CachedTurn, ...]:
        """The first call and any repair turns, as received."""
        return tuple(CachedTurn(t) for t in self.data["turns"])

    @property
    def meta(self) -> Mapping[str, Any]:
        """Value metadata: template, rubric, ``createdAt``, provenance; never in the key."""
        value: Mapping[str, Any] = self.data["meta"]
        return value

    @property
    def created_at(self) -> str:
        """When the judgment was made (ISO 8601)."""
        return str(self.meta["createdAt"])


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


@dataclass(frozen=True)
class KeyedRequest:
    """A request, its cache key, and the canonical JSON of its large fields, written once.

    The messages (~5 KB of rendered prompt) and the output schema (~3 KB) are most of an
    entry: written once, their JSON serves the key and the stored entry
    (:func:`seal_entry`) instead of being encoded three times (key, digest, stored bytes).
    """

    request: Mapping[str, Any]
    key: str
    pieces: Mapping[str, str]
    """Field name -> canonical JSON of that field, the same text normalised or not."""


def _plain_messages(messages: Any) -> bool:
    # Role/content pairs of plain strings: nothing for normalisation to change.
    return isinstance(messages, list | tuple) and all(
        type(m) is dict and all(type(k) is str and type(v) is str for k, v in m.items())
        for m in messages)


def _unchanged(value: Any) -> bool:
    """Whether :func:`_normalised` leaves the canonical JSON of ``value`` as it is."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return not value.is_integer()
    if kind is dict:
        return all(type(k) is str and _unchanged(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_unchanged(v) for v in value)
    return False


def _joined(request: Mapping[str, Any], pieces: Mapping[str, str], *, normalise: bool) -> str:
    """``canonical_json(request)`` (of its normalised form) with ``pieces`` put in as written."""
    parts = []
    for name in sorted(request):
        text = pieces.get(name)
        if text is None:
            value = request[name]
            text = canonical_json(_normalised(value) if normalise else value)
        parts.append(f"{canonical_json(name)}:{text}")
    return "{" + ",".join(parts) + "}"


def key_request(request: Mapping[str, Any],
                pieces: Mapping[str, str] | None = None) -> KeyedRequest:
    """The cache key of ``request`` (as :func:`cache_key`), keeping its large fields' JSON.

    ``pieces`` may give the canonical JSON of fields the caller already has (the output
    schema, written per rubric and case by
    :func:`judge.core.formats.output_schema.output_schema_json`); it must hold no integral float, so
    that it reads the same normalised or not.
    """
    known = {k: v for k, v in (pieces or {}).items() if k in request}
    if "messages" not in known and _plain_messages(request.get("messages")):
        known["messages"] = canonical_json(list(request["messages"]))
    if not known or not all(isinstance(k, str) for k in request):
        return KeyedRequest(request, cache_key(request), {})
    # The small fields that normalising leaves alone (all but an integral temperature,
    # typically) are written once here, for the key and for seal_entry's stored bytes.
    for name, value in request.items():
        if name not in known and _unchanged(value):
            known[name] = canonical_json(value)
    text = f'{{"format":{CACHE_FORMAT},"request":{_joined(request, known, normalise=True)}}}'
    return KeyedRequest(request, hashlib.sha256(text.encode("utf-8")).hexdigest(), known)


def seal_entry(keyed: KeyedRequest, turns: Iterable[CachedTurn],
               meta: Mapping[str, Any]) -> tuple[CacheEntry, bytes]:
    """The entry :func:`build_entry` makes for ``keyed``, and its canonical JSON as bytes.

    The bytes equal ``canonical_json(build_entry(...))`` exactly; they are joined from
    canonical pieces (the large fields written once by :func:`key_request`), so the entry
    is encoded once rather than three times.
    """
    if not keyed.pieces:
        entry = build_entry(keyed.request, turns, meta, key=keyed.key)
        return entry, canonical_json(entry.data).encode("utf-8")
    req = dict(keyed.request)
    turn_list = [dict(t.data) for t in turns]
    meta_dict = dict(meta)
    body = (f'{{"format":{CACHE_FORMAT},"key":{canonical_json(keyed.key)},'
            f'"meta":{canonical_json(meta_dict)},'
            f'"request":{_joined(req, keyed.pieces, normalise=False)},'
            f'"turns":{canonical_json(turn_list)}}}')
    data = body.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    entry = CacheEntry({"digest": digest, "format": CACHE_FORMAT, "key": keyed.key,
                        "request": req, "turns": turn_list, "meta": meta_dict})
    return entry, b'{"digest":"' + digest.encode("ascii") + b'",' + data[1:]


def entry_digest(entry: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``entry`` without its ``digest`` field."""
    return sha256_hex({k: v for k, v in entry.items() if k != "digest"})


def digest_ok(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` carries a digest and it matches its content (no digest: False)."""
    digest = entry.get("digest")
    try:
        return isinstance(digest, str) and digest == entry_digest(entry)
    except (TypeError, ValueError):  # content that is not JSON cannot match anything
        return False


def with_digest(entry: Mapping[str, Any]) -> CacheEntry:
    """A copy of the JSON object ``entry`` with its digest (re)computed."""
    body = {k: v for k, v in entry.items() if k != "digest"}
    return CacheEntry({"digest": sha256_hex(body), **body})


def build_entry(request: Mapping[str, Any], turns: Iterable[CachedTurn],
                meta: Mapping[str, Any], *, key: str | None = None) -> CacheEntry:
    """Build an entry, filling in its format, key and digest (``meta`` must carry ``createdAt``).

    ``key``, when the caller has just computed ``cache_key(request)``, saves hashing the
    request (all its messages) a second time.
    """
    req = dict(request)
    return with_digest({"format": CACHE_FORMAT, "key": key or cache_key(req), "request": req,
                        "turns": [dict(t.data) for t in turns], "meta": dict(meta)})


def is_iso_time(text: str) -> bool:
    """Whether ``text`` is an ISO 8601 date or date-time (``2025-01-01``, ``…T10:00:00.5Z``)."""
    if not _ISO_SHAPE.fullmatch(text):  # fromisoformat also reads "20250101" and week dates
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _key_problems(entry: Mapping[str, Any], request: Mapping[str, Any]) -> list[str]:
    try:
        expected = cache_key(request)
    except (TypeError, ValueError) as exc:
        return [f"request is not canonical JSON: {exc}"]
    if entry.get("key") != expected:
        return [f"key {str(entry.get('key'))[:16]}… does not match "
                f"the request (expected {expected[:16]}…)"]
    return []


def _digest_problems(entry: Mapping[str, Any]) -> list[str]:
    digest = entry.get("digest")
    if not isinstance(digest, str) or _HEX64.fullmatch(digest) is None:
        return ["no content digest (an entry from before digests: re-import or re-judge it)"
                if digest is None else "digest is not a sha256 hex string"]
    return [] if digest_ok(entry) else [DIGEST_MISMATCH]


def read_problems(entry: Any) -> list[str]:
    """The read path's check: what a judgment needs (format, key, turns) and the digest.

    Re-hashing the request and the credential scan are left to writes and to a full
    verify (:func:`entry_problems`): they cost more per hit than the rest of a replay.
    """
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
        return ["not an entry of this cache format"]
    if not isinstance(entry.get("key"), str) or not turns_ok(entry.get("turns")):
        return ["entry has no key or no turns with text"]
    return _digest_problems(entry)


def turns_ok(turns: Any) -> bool:
    """Whether ``turns`` is what a judgment reads: a non-empty list of objects with text."""
    return isinstance(turns, list) and bool(turns) and all(
        isinstance(t, dict) and isinstance(t.get("text"), str) for t in turns)


def entry_problems(entry: Any, *, built: bool = False,
                   vouched: Collection[str] = ()) -> list[str]:
    """Why ``entry`` is not a valid cache entry; empty when it is.

    ``built`` (an entry from :func:`build_entry` in this process): the key and the digest
    are not hashed again, and messages that are plain role/content pairs are not scanned
    for credential fields; nor are the request fields named in ``vouched``, which the
    caller built from a template already scanned (the output schema from
    :func:`~judge.core.formats.output_schema.output_schema_json`, whose rubric template has no
    credential-like name, else it gives no text and the schema is scanned here).
    """
    if not isinstance(entry, Mapping):
        return ["entry is not a JSON object"]
    request = entry.get("request")
    scanned: Any = entry
    if built and isinstance(request, Mapping) and isinstance(request.get("messages"), list) \
            and all(isinstance(m, Mapping) and set(m) <= {"role", "content"}
                    for m in request["messages"]):
        skipped = {"messages", *vouched}
        scanned = {**entry, "request": {k: v for k, v in request.items()
                                        if k not in skipped}}
    else:
        built = False
    problems = [f"credential-like field {p!r} must never be cached"
                for p in secret_paths(scanned)]
    missing = sorted(ENTRY_FIELDS - entry.keys() - {"digest"})  # said below, with advice
    unknown = sorted(str(k) for k in entry.keys() - ENTRY_FIELDS)
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
        elif not is_iso_time(created):
            problems.append(f"meta.createdAt {created!r} is not ISO 8601")
    if not built:  # else digested from this very content by build_entry
        problems += _digest_problems(entry)
    return problems
