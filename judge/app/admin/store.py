"""Store administration: bring a run store's schema to the head revision; verify its seals."""

from __future__ import annotations

from dataclasses import dataclass

from ...store.labels import LabelStore
from ...store.runs import RunStore
from ...store.seal import Damage
from ..workspace.workspace import Workspace

__all__ = ["StoreUpgrade", "StoreVerdict", "upgrade_store", "verify_store"]


@dataclass(frozen=True)
class StoreUpgrade:
    """A store's schema revision before and after ``judge runs upgrade``."""

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
                  migrate="all", secret=workspace.store_secret) as store:
        before = store.schema_before
        after = store.schema_revision()
    return StoreUpgrade(url=store.url, before=before.revision, after=after,
                        stamped_legacy=before.revision is not None and not before.stamped)




@dataclass(frozen=True)
class StoreVerdict:
    """What ``judge runs verify`` found: every row whose seal or copies do not match.

    And every complete run that lost a row; under the team secret, every unsealed row.
    """

    url: str
    damaged: tuple[Damage, ...]
    checked: int
    """Rows checked (runs, results and labels)."""
    unsealed: int
    """Rows written before sealing (damaged under the secret; else their copies were
    still compared)."""
    keyed: bool
    """Seals were checked under the team secret (``JUDGE_CACHE_SECRET``)."""


def verify_store(workspace: Workspace) -> StoreVerdict:
    """Check the seal of every run, result and label row of the workspace's store."""
    with workspace.open_store() as store:
        damaged, checked, unsealed = store.verify()
        labels = LabelStore(store).verify()
    return StoreVerdict(url=store.url, damaged=tuple(damaged + labels[0]),
                        checked=checked + labels[1], unsealed=unsealed + labels[2],
                        keyed=workspace.store_secret is not None)
