"""The process's own world: the clock, files, shipped resources, process tuning.

The clock and run ids, files written atomically, where shipped and workspace rubrics and
prompts are found, baseline files on disk, process-wide tuning, a child process that ends
with the process that started it.

Layer: adapter. May import: ``judge.core``.

Modules: ``atomic_files``, ``baseline_files``, ``child_guard``, ``clock``, ``resources``,
``tuning``. This ``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
