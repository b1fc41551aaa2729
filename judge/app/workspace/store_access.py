"""Where a workspace's run store is, for the operations that only read it.

``judge runs list``, ``show`` and ``export`` only read the store: their doors open a
:class:`StoreLocation` (the settings and the folder; no cache, judges or prompts) rather
than the whole :class:`~judge.app.workspace.workspace.Workspace`, and the operations read through
:func:`reading`, which opens the one :class:`~judge.store.runs.RunStore` as the workspace
does (migrated as needed, abandoned runs of this host marked).

Opening never creates a store unless asked (``create``): a command that only reads, or
needs a stored run, leaves a folder with no store as it found it and says where it looked
(:class:`~judge.core.text.errors.NoStoreError`); a PostgreSQL store is created or migrated
as before, since connecting to it makes nothing in the folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...cache.signing import SECRET_ENV
from .settings import Settings, load_settings

if TYPE_CHECKING:
    from ...store.runs import RunStore

__all__ = ["StoreLocation", "StoreSource", "reading"]


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

    def open_store(self, *, create: bool = False) -> RunStore:
        """The full store, opened (migrated as needed; abandoned runs marked).

        ``create``: make a local store that is not there (else NoStoreError, nothing made).
        """
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

    def open_store(self, *, create: bool = False) -> RunStore:
        """The full run store, as :meth:`Workspace.open_store` opens it."""
        # Imported when a store is opened: importing this module loads no SQLAlchemy.
        from .lifecycle import open_reaped

        return open_reaped(self.settings.store_url, self.root, secret=self.store_secret,
                           create=create)


@contextmanager
def reading(source: StoreSource) -> Iterator[RunStore]:
    """The run store of ``source``, open for the length of the ``with`` block; never made."""
    with source.open_store() as store:
        yield store
