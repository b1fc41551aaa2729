"""A judge's quality: agreement with people, calibration, noise, canaries, review, import.

Layer: application. Imports nothing: import from the module.
"""

from __future__ import annotations

__all__: list[str] = []
