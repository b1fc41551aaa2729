"""The HTTP door, ``judge workspace serve``: the harness over HTTP with FastAPI on uvicorn.

Routes translate a request into the typed inputs of :mod:`judge.app` operations, call one,
and render its result; every feature lives in the application layer, shared with the CLI.
Needs the ``server`` extra (``pip install 'judgeflow[server]'``): only ``judge workspace serve``
imports this package.

Layer: door. May import: the application and everything below it.
"""

from __future__ import annotations

__all__: list[str] = []
