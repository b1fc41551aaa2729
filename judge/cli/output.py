"""Output helpers shared by commands: JSON to stdout and nothing else, tables for people."""

from __future__ import annotations

import sys
from typing import Any

from ..canonical import stable_json

__all__ = ["band_style", "console", "emit_json", "err_console"]

_BAND_STYLES = {
    "failing": "red",
    "weak": "yellow",
    "acceptable": "cyan",
    "strong": "green",
    "excellent": "bold green",
}


def emit_json(value: Any) -> None:
    """Write ``value`` as stable JSON (sorted keys) to stdout."""
    sys.stdout.write(stable_json(value))
    sys.stdout.flush()


def band_style(band: str | None) -> str:
    """A rich style for a band name."""
    return _BAND_STYLES.get(band or "", "dim")


def console() -> Any:
    """A rich console on stdout (imported on demand)."""
    from rich.console import Console

    return Console(highlight=False)


def err_console() -> Any:
    """A rich console on stderr, for progress and notices that must stay out of JSON."""
    from rich.console import Console

    # soft_wrap: a notice stays one line in a log, not cut at 80 columns off a terminal.
    return Console(stderr=True, highlight=False, soft_wrap=True)
