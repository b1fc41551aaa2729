"""The one-case API: ``judge.evaluate`` and ``judge.evaluate_async``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .cache import CacheMode, JudgmentCache
from .clock import utc_now
from .judging import Completer, JudgeSettings, judge_prepared, prepare
from .models import CaseResult
from .prompts import PromptRenderer
from .resources import load_rubric
from .rubric import Rubric, rubric_hash
from .suite import Case

__all__ = ["evaluate", "evaluate_async"]


async def evaluate_async(
    case: Case | Mapping[str, Any],
    *,
    rubric: Rubric | str = "task-evaluation",
    model: str,
    cache: JudgmentCache | str | Path | None = "cache",
    cache_mode: CacheMode = "read-write",
    client: Completer | None = None,
    api_base: str | None = None,
    settings: JudgeSettings | None = None,
    template: str = "judge",
    workspace: Path | None = None,
) -> CaseResult:
    """Judge one case with one model and return the full, authoritative result.

    ``cache`` is a cache object, a folder, or None for no cache. ``cache_mode="offline"``
    never builds a client: a miss comes back as status ``cache_miss``.
    """
    workspace = workspace or Path.cwd()
    case = case if isinstance(case, Case) else Case.model_validate(case)
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric, workspace)
    own_cache = isinstance(cache, str | Path)
    store = JudgmentCache(cache, cache_mode) if isinstance(cache, str | Path) else cache
    own_client = client is None and cache_mode != "offline" and case.judged_by == "llm"
    if own_client:
        from .client import LiteLLMClient, ModelSpec

        client = LiteLLMClient(ModelSpec(name=model, api_base=api_base))
    try:
        prep = prepare(case, rub, PromptRenderer(template, workspace))
        now = utc_now()
        return await judge_prepared(prep, rub, rubric_hash(rub), model,
                                    settings or JudgeSettings(), store, client, now=now)
    finally:
        if own_cache and store is not None:
            store.close()
        if own_client:
            from .client import aclose_clients

            await aclose_clients()


def evaluate(case: Case | Mapping[str, Any], **kwargs: Any) -> CaseResult:
    """Synchronous :func:`evaluate_async` (not from inside a running event loop)."""
    return asyncio.run(evaluate_async(case, **kwargs))
