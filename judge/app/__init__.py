"""The application layer: one workspace and the operations every door calls.

Layer: application. May import: the core, the adapters and the engine; never a door.
The layers and their folders are drawn in ``docs/architecture.md``;
``tests/test_layering.py`` reads them from the folders.

Packages: ``workspace`` (a folder, its typed settings and what it holds), ``runs`` (judging,
storing, gating, diffing and reporting runs), ``judges`` (a judge's quality: agreement,
calibration, noise, canaries, review, import, the monitor), ``admin`` (the cache's
maintenance, the store's, collecting cases). A feature is written once, here; a door that
needs it calls the operation.
"""

from __future__ import annotations

__all__: list[str] = []
