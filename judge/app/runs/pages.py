"""Pages of stored runs and results: the paginated reads behind ``judge workspace serve``'s lists.

A page is ``limit`` items from ``offset`` on, and ``next`` is the offset of the following
page (None on the last). Results stream from the store, so a deep page of a 100,000-case run
never holds the cases before it.
"""

from __future__ import annotations

from itertools import islice
from typing import Generic, TypeVar

from pydantic import Field

from ...core.formats.models import CaseResult, RunInfo
from ...core.text.frozen import FrozenView
from ..workspace.workspace import Workspace

__all__ = ["MAX_PAGE", "Page", "history_page", "results_page"]

MAX_PAGE = 500
"""The largest page a caller may ask for."""

T = TypeVar("T")


class Page(FrozenView, Generic[T]):
    """``items`` from ``offset`` on; ``next`` is the next page's offset, None on the last."""

    items: tuple[T, ...]
    offset: int = Field(ge=0)
    limit: int = Field(ge=1, le=MAX_PAGE)
    next: int | None = None
    total: int | None = None
    """How many items there are in all, when that is cheap to know."""


def history_page(workspace: Workspace, suite: str | None, *, offset: int = 0,
                 limit: int = 20) -> Page[RunInfo]:
    """The suite's stored runs (every suite's with None), newest first."""
    with workspace.open_store() as store:
        runs = store.list_runs(suite, limit=offset + limit + 1)
    items = tuple(runs[offset:offset + limit])
    more = len(runs) > offset + limit
    return Page[RunInfo](items=items, offset=offset, limit=limit,
                         next=offset + limit if more else None)


def results_page(workspace: Workspace, run_id: str, *, offset: int = 0,
                 limit: int = 100) -> Page[CaseResult]:
    """A run's stored results (each judge's, each sample's, the aggregates) in case order."""
    with workspace.open_store() as store:
        run = store.get_run(run_id)
        total = sum(store.count_results(run.id).values())
        stream = store.iter_results(run.id)
        try:
            items = tuple(islice(stream, offset, offset + limit))
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
    return Page[CaseResult](items=items, offset=offset, limit=limit, total=total,
                            next=offset + limit if offset + limit < total else None)
