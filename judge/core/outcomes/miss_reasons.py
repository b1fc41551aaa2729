"""Why an offline replay missed: what changed in a request against the nearest cached one.

A cache key hashes the whole request, so a miss by itself says only that *something*
changed. Set beside the nearest cached judgment — of the same case where a stored run
names one, else the entry whose prompt shares the most lines with this one — the request
says what: the template (its digest), the rubric, the model, the seed, the sampling
settings, the reply schema, or the prompt's text section by section (the evidence, the
output...). Pure: the entries come in as the plain JSON objects the cache stores
(``{"key", "request", "meta"}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import Field

from ..text.frozen import Frozen

__all__ = ["FoundBy", "MissReason", "nearest_entry", "request_changes", "summarise_misses"]

FoundBy = Literal["same-case", "nearest-prompt", "none"]
"""How the cached judgment set against a miss was found: the same case's in a stored run,
the entry with the most prompt lines in common, or none (an empty cache)."""

_SETTINGS: Final = (("model", "model"), ("seed", "seed"), ("temperature", "temperature"),
                    ("outputMode", "output mode"))


class MissReason(Frozen):
    """One offline miss and what changed against the nearest cached judgment."""

    case_id: str = Field(alias="caseId")
    key: str
    """The cache key this run looked for."""
    nearest: str | None = None
    """The cache key of the judgment it was set against (None: the cache holds none)."""
    found_by: FoundBy = Field("none", alias="foundBy")
    changes: tuple[str, ...] = ()
    """What differs, in words; ``the cache holds no judgment`` when nothing to compare."""


def _sections(text: str) -> dict[str, list[str]]:
    """A message's lines by ``## `` heading (the part before the first heading under "")."""
    out: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip().split(":")[0]
            out.setdefault(current, [])
        out[current].append(line)
    return out


def _message(request: Mapping[str, Any], role: str) -> str:
    for message in request.get("messages") or ():
        if isinstance(message, Mapping) and message.get("role") == role:
            return str(message.get("content", ""))
    return ""


def _message_changes(now: Mapping[str, Any], then: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    if _message(now, "system") != _message(then, "system"):
        found.append("the system message (the template's or the rubric's text)")
    a, b = _sections(_message(then, "user")), _sections(_message(now, "user"))
    if a == b:
        return found
    moved = [name or "its opening" for name in dict.fromkeys([*a, *b])
             if a.get(name) != b.get(name)]
    if set(a) != set(b) or len(moved) > 3:
        return [*found, "the user message (the template's layout)"]
    return [*found, "the user message: " + ", ".join(f"section {m!r}" for m in moved)]


def _meta_changes(now: Mapping[str, Any], then: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for what, ident, digest in (("template", "templateId", "templateHash"),
                                ("rubric", "rubricId", "rubricHash")):
        if now.get(digest) != then.get(digest):
            found.append(f"{what} {then.get(ident)} {str(then.get(digest))[:12]} → "
                         f"{now.get(ident)} {str(now.get(digest))[:12]}")
    return found


def request_changes(now: Mapping[str, Any], then: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between two entries' requests and metadata, template and rubric first."""
    request, cached = now.get("request") or {}, then.get("request") or {}
    found = _meta_changes(now.get("meta") or {}, then.get("meta") or {})
    for name, words in _SETTINGS:
        if request.get(name) != cached.get(name):
            found.append(f"{words} {cached.get(name)} → {request.get(name)}")
    params, old = request.get("params") or {}, cached.get("params") or {}
    moved = sorted(k for k in {*params, *old} if params.get(k) != old.get(k))
    if moved:
        found.append("sampling settings: " + ", ".join(
            f"{k} {old.get(k)} → {params.get(k)}" for k in moved))
    if request.get("responseFormat") != cached.get("responseFormat"):
        found.append("the reply schema (the rubric's categories or the citable evidence)")
    found += _message_changes(request, cached)
    return tuple(found) or ("nothing in the request: the cache format or judgeflow's "
                            "version of the key",)


def _lines(entry: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(_message(entry.get("request") or {}, "user").splitlines())


def _distance(now: Mapping[str, Any], lines: frozenset[str],
              entry: Mapping[str, Any]) -> tuple[int, float]:
    request, cached = now.get("request") or {}, entry.get("request") or {}
    differ = sum(request.get(name) != cached.get(name) for name, _ in _SETTINGS)
    other = _lines(entry)
    shared = len(lines & other) / max(1, len(lines | other))
    return differ, -shared


def nearest_entry(now: Mapping[str, Any],
                  entries: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The entry nearest to ``now``: fewest differing settings, then most prompt lines shared."""
    lines = _lines(now)
    best: tuple[tuple[int, float], Mapping[str, Any]] | None = None
    for entry in entries:
        rank = _distance(now, lines, entry)
        if best is None or rank < best[0]:
            best = (rank, entry)
    return None if best is None else best[1]


def summarise_misses(reasons: Sequence[MissReason]) -> list[str]:
    """Lines for people: reasons shared by several misses are said once, with the count."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for reason in reasons:
        groups.setdefault(reason.changes, []).append(reason.case_id)
    lines = []
    for changes, ids in groups.items():
        who = ids[0] if len(ids) == 1 else f"{len(ids)} cases ({', '.join(ids[:3])}" + (
            ", …)" if len(ids) > 3 else ")")
        lines.append(f"{who}: changed against the nearest cached judgment: "
                     + "; ".join(changes))
    return lines
