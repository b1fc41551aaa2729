"""Runs: judge a suite, store it, gate it, diff and re-score it, report it, export it.

Layer: application. Imports nothing: import from the module.
"""

from __future__ import annotations

__all__: list[str] = []
