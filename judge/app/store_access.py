"""Where a workspace's run store is, and reading it the light way when that is enough.

``judge history``, ``show`` and ``export`` only read the store. Opening the whole
:class:`~judge.app.workspace.Workspace` (cache, judges, prompts) and SQLAlchemy would cost
those commands more than their own work, so their doors open a :class:`StoreLocation`
(the settings and the folder, nothing else) and the operations read through
:func:`reading`: the driver-level :class:`~judge.store.reader.StoreReader` when the store
is there at the head revision and has no run of this host to mark abandoned, else the
full :class:`~judge.store.runs.RunStore` as the workspace opens it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..cache.signing import SECRET_ENV
from ..store.reader import RunReader, StoreReader, open_reader
from .settings import Settings, load_settings

if TYPE_CHECKING:
    from ..store.runs import RunStore

__all__ = ["StoreLocation", "StoreSource", "needs_reaping", "reading"]


class StoreSource(Protocol):
    """What holds a run store: a :class:`StoreLocation` or a whole Workspace."""

    @property
    def root(self) -> Path:
        """The workspace folder (a relative SQLite path is relative to it)."""
        ...

    @property
    def settings(self) -> Settings:
        """The effective settings; ``store_url`` says where the store is."""
        ...

    @property
    def store_secret(self) -> str | None:
        """``JUDGE_CACHE_SECRET``, the key of the store's seals (None: plain digests)."""
        ...

    def open_store(self) -> RunStore:
        """The full store, opened (created or migrated as needed; abandoned runs marked)."""
        ...


@dataclass(frozen=True)
class StoreLocation:
    """A workspace's folder and settings, for operations that only read its run store."""

    root: Path
    settings: Settings
    store_secret: str | None = field(default=None, repr=False)
    """``JUDGE_CACHE_SECRET``: keys the seals of the store's rows."""

    @classmethod
    def open(cls, root: Path | str | None = None, overrides: Mapping[str, Any] | None = None,
             *, env: Mapping[str, str] | None = None) -> StoreLocation:
        """The settings of the workspace at ``root`` (default: the current folder)."""
        folder = Path.cwd() if root is None else Path(root)
        environment = dict(os.environ if env is None else env)
        settings, _ = load_settings(folder, overrides, environment)
        return cls(root=folder, settings=settings,
                   store_secret=environment.get(SECRET_ENV) or None)

    def open_store(self) -> RunStore:
        """The full run store, as :meth:`Workspace.open_store` opens it."""
        # Imported here: SQLAlchemy and the lifecycle's imports are what a light read avoids.
        from .lifecycle import open_reaped

        return open_reaped(self.settings.store_url, self.root, secret=self.store_secret)


def needs_reaping(reader: StoreReader) -> bool:
    """Whether a run of this host other than ours is still ``running`` (it may be dead).

    Such a run is left to :func:`judge.app.lifecycle.reap_abandoned` on the full store,
    which tells a dead owner from a live one.
    """
    here, me = socket.gethostname(), os.getpid()
    return any(r.owner is not None and r.owner.host == here and r.owner.pid != me
               for r in reader.runs_with_status("running"))


@contextmanager
def reading(source: StoreSource) -> Iterator[RunReader]:
    """The store of ``source`` to read: light when it can be, else the full store."""
    reader = open_reader(source.settings.store_url, source.root, secret=source.store_secret)
    if reader is not None:
        with reader:
            if not needs_reaping(reader):
                yield reader
                return
    with source.open_store() as store:
        yield store
