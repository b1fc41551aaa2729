"""The one-case Python door: ``judge.evaluate`` and ``judge.evaluate_async``.

A thin translation onto :func:`judge.app.runs.evaluating.evaluate_case`: keyword arguments
become workspace overrides, so the Python API accepts every model and setting the CLI does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .app.runs.evaluating import evaluate_case
from .app.workspace.settings import CacheModeName
from .app.workspace.workspace import JudgeFactory, Workspace
from .cache.disk import JudgmentCache
from .core.formats.models import CaseResult
from .core.formats.rubric import Rubric
from .core.formats.suite import Case
from .engine.judging import Completer

__all__ = ["evaluate", "evaluate_async"]


async def evaluate_async(
    case: Case | Mapping[str, Any],
    *,
    rubric: Rubric | str | None = None,
    model: str | None = None,
    cache: JudgmentCache | str | Path | None = None,
    cache_mode: CacheModeName | None = None,
    client: Completer | None = None,
    judges: JudgeFactory | None = None,
    api_base: str | None = None,
    template: str | None = None,
    workspace: Path | str | None = None,
    **settings: Any,
) -> CaseResult:
    """Judge one case with one model and return the full, authoritative result.

    Settings come from the workspace (``judge.toml``, ``JUDGE_*``) with these arguments
    over them; any other setting (``seed``, ``timeout``, ``max_tokens``...) may be passed by
    name. ``cache`` is a cache object, a folder, or None for the workspace's cache;
    ``cache_mode="off"`` uses none, ``"offline"`` never builds a client (a miss comes back
    as status ``cache_miss``).
    """
    overrides: dict[str, Any] = {"model": [model] if model else None, "api_base": api_base,
                                 "template": template, "cache_mode": cache_mode, **settings}
    if isinstance(cache, str | Path):
        overrides["cache_dir"] = str(cache)
    ws = Workspace.open(workspace, overrides, judges=judges)
    return await evaluate_case(ws, case, rubric=rubric, model=model,
                               cache=cache if isinstance(cache, JudgmentCache) else None,
                               client=client)


def evaluate(case: Case | Mapping[str, Any], **kwargs: Any) -> CaseResult:
    """Synchronous :func:`evaluate_async` (not from inside a running event loop)."""
    return asyncio.run(evaluate_async(case, **kwargs))
