"""Store administration: bring a run store's schema to this judgeflow's head revision."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.runs import RunStore
from .workspace import Workspace

__all__ = ["StoreUpgrade", "upgrade_store"]


@dataclass(frozen=True)
class StoreUpgrade:
    """A store's schema revision before and after ``judge store upgrade``."""

    url: str
    """The store's URL, with any password masked."""
    before: str | None
    """None: the database was empty (the store was created)."""
    after: str | None
    stamped_legacy: bool
    """The store was from before migrations (tables, no version) and was stamped first."""

    @property
    def changed(self) -> bool:
        """Something was applied."""
        return self.before != self.after or self.stamped_legacy


def upgrade_store(workspace: Workspace) -> StoreUpgrade:
    """Apply every pending revision, additive or not; StoreError for a store newer than us."""
    with RunStore(workspace.settings.store_url, workspace=workspace.root,
                  migrate="all") as store:
        before = store.schema_before
        after = store.schema_revision()
    return StoreUpgrade(url=store.url, before=before.revision, after=after,
                        stamped_legacy=before.revision is not None and not before.stamped)


