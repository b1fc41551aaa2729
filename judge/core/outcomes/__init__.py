"""What a run adds up to: summaries, baselines and their comparison, the ledger, usage.

Layer: core. Modules: ``summary``, ``baseline``, ``ledger``, ``usage``, ``monitor``,
``miss_reasons``. Imports nothing: import from the module.
"""

__all__: list[str] = []
