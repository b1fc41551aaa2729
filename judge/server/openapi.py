"""The HTTP API's schema, ``docs/openapi.json``, generated from the app.

It is checked in and compared with the app by a test, so a change to the contract shows
in a diff.

Regenerate: ``python -m judge.server.openapi`` (writes ``docs/openapi.json`` beside
``judge/``), or ``python -m judge.server.openapi PATH``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..app.workspace.settings import Settings
from ..app.workspace.workspace import Workspace
from ..system.atomic_files import write_atomic
from .app import create_app

__all__ = ["DEFAULT_PATH", "main", "openapi_text"]

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def openapi_text() -> str:
    """The schema as the checked-in file holds it (no workspace, no environment in it)."""
    workspace = Workspace(root=Path("."), settings=Settings(), sources={}, env={})
    spec = create_app(workspace).openapi()
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schema to the path given (default: ``docs/openapi.json``)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    write_atomic(path, openapi_text())
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
