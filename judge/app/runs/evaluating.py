"""Judge one case: the operation behind ``judge.evaluate`` and ``POST /api/evaluate``.

The same judges as ``judge run`` (any LiteLLM model, ``hosted_vllm/...``, ``local/smollm2``
with its server's lifecycle), the same cache, renderer and call settings; nothing stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...cache.disk import JudgmentCache
from ...core.formats.evidence import EvidenceInputError, check_evidence
from ...core.formats.models import CaseResult
from ...core.formats.rubric import Rubric, rubric_hash
from ...core.formats.suite import Case, as_masked_case
from ...core.text.errors import SuiteError
from ...engine.judging import Completer, judge_prepared, prepare
from ...system.clock import utc_now
from ..workspace.workspace import JudgePool, Workspace

__all__ = ["evaluate_case"]


async def evaluate_case(workspace: Workspace, case: Case | Mapping[str, Any], *,
                        rubric: Rubric | str | None = None, model: str | None = None,
                        cache: JudgmentCache | None = None, client: Completer | None = None,
                        now: str | None = None) -> CaseResult:
    """Judge ``case`` with one model (default: the workspace's first judge, else the local one).

    ``cache`` None opens the workspace's cache in its mode (``off`` for none); ``client``
    replaces the judge factory. Offline (``cache_mode="offline"``) never builds a client: a
    miss comes back with status ``cache_miss``.
    """
    case = as_masked_case(case, workspace.secret_pattern)
    rub = rubric if isinstance(rubric, Rubric) else workspace.rubric(rubric)
    try:
        check_evidence(case.evidence, rub.evidence)
    except EvidenceInputError as exc:  # bad input, as in a suite file: never a crash
        raise SuiteError(str(exc).split(": ", 1)[-1], where=f"case {case.id!r}: {exc.where}",
                         fix=f"groups for rubric {rub.id!r}: "
                             f"{', '.join(rub.evidence.names())}") from None
    offline = workspace.settings.cache_mode == "offline"
    needs_judge = case.judged_by == "llm"
    if model is None:
        models, _ = workspace.resolve_models(needs_judge=needs_judge, offline=offline)
        model = models[0]
    renderer = workspace.renderer()
    prep = prepare(case, rub, renderer)
    own_cache = cache is None
    store = workspace.open_cache() if own_cache else cache
    pool: JudgePool | None = None
    if client is None and needs_judge and not offline:
        pool = workspace.judges.open(workspace, [model])
        client = pool.clients[model]
    try:
        return await judge_prepared(prep, rub, rubric_hash(rub), model,
                                    workspace.judge_settings(), store, client,
                                    now=now or utc_now())
    finally:
        if own_cache and store is not None:
            store.close()
        if pool is not None:
            await pool.aclose()
