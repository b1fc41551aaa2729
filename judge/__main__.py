"""``python -m judge``: the same as the ``judge`` command."""

from __future__ import annotations

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
