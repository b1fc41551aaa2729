"""Runs whose process died: found by the next command that opens the store, marked abandoned.

A run records its owner (host and pid) when it starts. A run still ``running`` whose owner
is on this host and no longer alive was killed (kill -9, a lost CI runner on this machine):
it is marked ``abandoned`` with the counts of what it stored, so nothing shows as running
forever; its judged cases come back from the cache when the suite is run again. A run owned
by another host is left alone (this host cannot tell whether it lives).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from ...core.formats.models import RunOwner, RunTotals
from ...llm.local import pid_alive
from ...store.runs import RunStore

__all__ = ["open_reaped", "owner_here", "reap_abandoned"]


def owner_here() -> RunOwner:
    """The current process as a run's owner."""
    return RunOwner(host=socket.gethostname(), pid=os.getpid())


def reap_abandoned(store: RunStore) -> list[str]:
    """Mark this host's dead ``running`` runs ``abandoned``; returns their ids."""
    here = socket.gethostname()
    reaped = []
    for run in store.runs_with_status("running"):
        owner = run.owner
        if owner is None or owner.host != here or owner.pid == os.getpid() or \
                pid_alive(owner.pid):
            continue
        counts = store.count_results(run.id)
        totals = run.totals.model_copy(update={
            "cases": sum(counts.values()), "scored": counts["scored"],
            "unscored": counts["unscored"], "cache_misses": counts["cache_miss"]})
        store.finish_run(run.id, totals=RunTotals.model_validate(totals.model_dump()),
                         status="abandoned")
        reaped.append(run.id)
    return reaped


def open_reaped(url: str, workspace: Path, *, secret: str | None = None,
                create: bool) -> RunStore:
    """The run store at ``url``, opened, with this host's dead runs marked abandoned.

    ``secret`` (``JUDGE_CACHE_SECRET``) keys the seals of its rows (judge.store.seal);
    ``create`` False: a local store that is not there is NoStoreError, and nothing is made.
    """
    store = RunStore(url, workspace=workspace, secret=secret, create=create)
    try:
        reap_abandoned(store)
    except BaseException:
        store.close()
        raise
    return store
