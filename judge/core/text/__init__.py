"""Text and safety: canonical JSON, safe YAML, strict JSON, secrets, seals, the error tree.

Layer: core. Modules: ``canonical``, ``safeyaml``, ``strict_json``, ``secrets``, ``seals``,
``errors``, ``frozen`` (the one frozen base model), ``terminal_text``, ``validation_text``.
Imports nothing: import from the module.
"""

__all__: list[str] = []
