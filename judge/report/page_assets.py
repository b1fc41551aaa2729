"""The package files the report and the review page inline, and their CSP hashes.

Both pages are self-contained: their style and scripts travel inside the page, and a
Content Security Policy lets only those exact texts run or apply. They share one
stylesheet, :data:`STYLESHEET`, so the two pages look like one tool.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib import resources

__all__ = ["ASSETS", "STYLESHEET", "asset_text", "csp_hash"]

ASSETS = "assets"
"""The package folder of the pages' template, style, scripts and plotly.js."""
STYLESHEET = "pages.css"
"""The one stylesheet of both pages."""


@cache
def asset_text(name: str) -> str:
    """The text of the package asset ``name`` (read once per process)."""
    return resources.files("judge.report").joinpath(ASSETS, name).read_text(encoding="utf-8")


def csp_hash(text: str) -> str:
    """``'sha256-…'``: the CSP source that lets exactly ``text`` run (a script) or apply."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
