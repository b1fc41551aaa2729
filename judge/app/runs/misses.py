"""Offline misses that explain themselves: each missed request beside its nearest cached one.

After an offline run with misses, the first :data:`MISSES_EXPLAINED` missed cases (by id)
have their requests built again exactly as the run built them, and each is set against the
nearest cached judgment (:mod:`judge.core.outcomes.miss_reasons`): the same case's, where one of the
suite's last :data:`RUNS_READ` stored runs judged it under a key the cache still holds,
else the entry whose prompt is nearest, over at most :data:`ENTRIES_SCANNED` entries. Only a
failed replay pays for this, once; a replay that hits pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, Final

from ...cache.disk import JudgmentCache
from ...core.formats.models import CaseResult
from ...core.formats.rubric import Rubric
from ...core.formats.suite import Case, SuiteLine
from ...core.outcomes.miss_reasons import MissReason, nearest_entry, request_changes
from ...engine.judging import JudgeSettings, build_request, prepare
from ...render.prompts import PromptRenderer
from ..workspace.workspace import Workspace

__all__ = ["ENTRIES_SCANNED", "MISSES_EXPLAINED", "RUNS_READ", "explain_misses"]

MISSES_EXPLAINED: Final = 20
"""Misses explained per run; the rest are listed by id only."""
RUNS_READ: Final = 5
"""Stored runs of the suite searched for the same case's earlier judgment."""
ENTRIES_SCANNED: Final = 20_000
"""Cache entries read at most when no stored run names the same case's judgment."""


def _requests(cases: Iterable[Case | SuiteLine], missed: Mapping[str, CaseResult],
              rubric: Rubric, rubric_hash: str, renderer: PromptRenderer,
              settings: JudgeSettings) -> dict[str, dict[str, Any]]:
    """Each missed case's request and metadata, as the run built them."""
    out: dict[str, dict[str, Any]] = {}
    for item in cases:
        case = item.case() if isinstance(item, SuiteLine) else item
        result = missed.get(case.id)
        if result is None or result.judge is None:
            continue
        prep = prepare(case, rubric, renderer)
        if prep.prompt is None:
            continue
        request = build_request(prep, result.judge.model, settings, result.judge.sample)
        out[case.id] = {"key": result.judge.cache_key, "request": request.key_material(),
                        "meta": {"templateId": prep.prompt.template_id,
                                 "templateHash": prep.prompt.template_hash,
                                 "rubricId": rubric.id, "rubricHash": rubric_hash}}
        if len(out) == len(missed):
            break
    return out


def _same_case(workspace: Workspace, suite: str, run_id: str, cache: JudgmentCache,
               wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The newest cached judgment of each wanted case that a stored run of the suite names."""
    found: dict[str, dict[str, Any]] = {}
    with workspace.open_store() as store:
        for info in store.list_runs(suite=suite, limit=RUNS_READ + 1):
            if info.id == run_id or len(found) == len(wanted):
                continue
            for r in store.iter_results(info.id):
                key = r.judge.cache_key if r.judge is not None else None
                if r.id in wanted and r.id not in found and key:
                    entry = cache.get(key)
                    if entry is not None:
                        found[r.id] = entry.data
    return found


def explain_misses(workspace: Workspace, *, run_id: str, suite: str, missed: Sequence[CaseResult],
                   cases: Iterable[Case | SuiteLine], rubric: Rubric, rubric_hash: str,
                   renderer: PromptRenderer | None,
                   settings: JudgeSettings) -> tuple[MissReason, ...]:
    """What changed in each of the first missed requests against the nearest cached one."""
    chosen = {r.id: r for r in sorted(missed, key=lambda r: r.id)[:MISSES_EXPLAINED]}
    cache = workspace.open_cache("read-only")
    if renderer is None or cache is None or not chosen:
        return ()
    with cache:
        now = _requests(cases, chosen, rubric, rubric_hash, renderer, settings)
        same = _same_case(workspace, suite, run_id, cache, set(now))
        pool = (None if len(same) == len(now)
                else [e.data for e in islice(cache.iter_entries(), ENTRIES_SCANNED)])
    reasons = []
    for case_id, request in sorted(now.items()):
        then = same.get(case_id) or nearest_entry(request, pool or ())
        how = "same-case" if case_id in same else "nearest-prompt" if then else "none"
        reasons.append(MissReason(
            case_id=case_id, key=str(request["key"]), found_by=how,
            nearest=str(then["key"]) if then else None,
            changes=request_changes(request, then) if then else (
                "the cache holds no judgment to set it against",)))
    return tuple(reasons)
