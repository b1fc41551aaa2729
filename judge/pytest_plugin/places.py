"""Where a pytest session keeps its files and how its hints are written: no heavy imports.

The plugin module is imported by every pytest run of a project with judgeflow installed, so
what its hooks need before a session judges anything lives here, not in :mod:`.session`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["quoted_command", "session_folder"]


def quoted_command(root: Path, *argv: str) -> str:
    """``cd ROOT && argv...``, shell-quoted: a line a person can paste."""
    return f"cd {shlex.quote(str(root))} && " + " ".join(shlex.quote(a) for a in argv)


def session_folder(root: Path, token: str) -> Path:
    """The folder one pytest session (its controller and xdist workers) shares."""
    return root / ".judge" / "pytest" / token
