"""The judgment cache: entries, their digest and signature, and where they are kept.

The entry format (``entry``, ``entry_bytes``, ``signing``); the storage core on diskcache
(``disk``: ``JudgmentCache``, reads, writes, the scan, a read snapshot); what is done with a
whole cache, each over a ``JudgmentCache``: export and import (``interchange``:
``CacheInterchange``) and stats, verify, prune, upgrade (``maintenance``:
``CacheMaintenance``); the team's shared tier on a database (``shared``, ``tiers``); and the
replay index's own table (``replay_store``).

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``disk``, ``entry``, ``entry_bytes``, ``interchange``, ``maintenance``,
``replay_store``, ``shared``, ``signing``, ``tiers``. This ``__init__`` imports nothing:
import from the module.
"""

__all__: list[str] = []
