"""The engine that judges: one case, a suite run concurrently, and replay.

Judging one case (prepare, ask, parse, score), the runner that streams results, and the
replay index that finds a cached judgment without rendering its prompt.

Layer: engine. May import: ``judge.core`` and the adapters ``system``, ``render``, ``llm``,
``cache``.

Modules: ``judging``, ``replay``, ``runner``. This ``__init__`` imports nothing: import from the
module.
"""

__all__: list[str] = []
