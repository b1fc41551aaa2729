"""A workspace: its folder, its typed settings and their sources, its suites and rubrics.

Layer: application (``judge.app``'s rules). Imports nothing: import from the module.
"""

from __future__ import annotations

__all__: list[str] = []
