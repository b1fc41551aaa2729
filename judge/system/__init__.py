"""The process's own world: the clock, files, shipped resources, process tuning.

The clock and run ids, files written atomically, where shipped and workspace rubrics and
prompts are found, baseline files on disk, process-wide tuning.

Layer: adapter. May import: ``judge.core``.

Modules: ``atomic_files``, ``baseline_files``, ``clock``, ``resources``, ``tuning``. This
``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
