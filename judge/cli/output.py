"""Output helpers shared by commands: JSON to stdout and nothing else, tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console

from ..canonical import stable_json

__all__ = [
    "band_style",
    "console",
    "emit_json",
    "emit_json_streaming",
    "err_console",
]

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


def emit_json_streaming(fields: dict[str, Any], streamed: str, items: Iterable[Any]) -> None:
    """Write ``{**fields, streamed: [*items]}`` byte for byte as :func:`emit_json` would.

    One item at a time, so a 100,000-case ``--json`` never holds every case in memory.
    """
    out = sys.stdout
    keys = sorted([*fields, streamed])
    out.write("{\n")
    for n, key in enumerate(keys):
        out.write(f"  {json.dumps(key, ensure_ascii=False)}: ")
        if key != streamed:
            text = json.dumps(fields[key], sort_keys=True, indent=2, ensure_ascii=False,
                              allow_nan=False)
            out.write(text.replace("\n", "\n  "))
        else:
            first = True
            for item in items:
                out.write("[\n    " if first else ",\n    ")
                first = False
                text = json.dumps(item, sort_keys=True, indent=2, ensure_ascii=False,
                                  allow_nan=False)
                out.write(text.replace("\n", "\n    "))
            out.write("[]" if first else "\n  ]")
        out.write(",\n" if n + 1 < len(keys) else "\n")
    out.write("}\n")
    out.flush()


def band_style(band: str | None) -> str:
    """A rich style for a band name."""
    return _BAND_STYLES.get(band or "", "dim")


def console() -> Any:
    """A rich console on stdout (imported on demand)."""
    return Console(highlight=False)


def err_console() -> Any:
    """A rich console on stderr, for progress and notices that must stay out of JSON."""
    # soft_wrap: a notice stays one line in a log, not cut at 80 columns off a terminal.
    return Console(stderr=True, highlight=False, soft_wrap=True)
