"""Files and administration: the cache's and the store's maintenance, collecting cases.

Layer: application. Imports nothing: import from the module.
"""

from __future__ import annotations

__all__: list[str] = []
