"""The judgment cache: entries, their digest and signature, and where they are kept.

The entry format, the diskcache store, the team's shared tier on a database, and the
replay index's own table.

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``disk``, ``entry``, ``entry_bytes``, ``replay_store``, ``shared``, ``signing``,
``tiers``. This ``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
