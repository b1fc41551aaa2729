"""The prompt renderer: sandboxed Jinja templates into a judge's chat messages.

The shipped templates live in the repo's ``prompts/`` (the wheel's ``judge/_data``).

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``prompts``. This ``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
