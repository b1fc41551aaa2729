"""The code style is enforced, not hoped for: ruff runs with the tests, mypy --strict beside them.

mypy is marked ``typecheck``: from a clean clone (a cold cache) it takes a minute of CPU,
so the default run leaves it out and CI runs it as its own gating step
(``pytest -m typecheck -n 0``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_ruff_is_clean() -> None:
    proc = _run(str(BIN / "ruff"), "check", "judge", "tests", "bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.typecheck
def test_mypy_strict_is_clean() -> None:
    proc = _run(str(BIN / "mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
