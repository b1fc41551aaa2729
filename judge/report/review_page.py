"""The review page's HTML: a shell with its script and style inline, under a strict CSP.

The shell holds no value of the run: the script fetches the run's cases from
``/api/review/RUN`` (``connect-src 'self'``) and puts every value in with ``textContent``, so
hostile case text, evidence or rationales stay text. The script runs and the stylesheet
(the report's, :data:`~judge.report.page_assets.STYLESHEET`) applies by their hashes: no
inline handler, no other style, and nothing loaded from elsewhere.

A case's place on the page is ``/review/RUN#case=ID&category=CAT`` (:func:`review_link`): the
page opens at that case (and category) on load and when the fragment changes. A tab opened
without the write token in its fragment asks the page's other tabs of the same origin for
it (a ``BroadcastChannel``), so a link from the report or the terminal opens a case while
``judge review RUN`` runs and its printed address is open in a tab.
"""

from __future__ import annotations

import html
from typing import Final
from urllib.parse import quote

from .page_assets import STYLESHEET, asset_text, csp_hash

__all__ = ["REVIEW_HOST", "REVIEW_PORT", "review_csp", "review_html", "review_link"]

REVIEW_HOST: Final = "127.0.0.1"
REVIEW_PORT: Final = 8765
"""``judge review RUN``'s default port: the one links to the page name."""

_SCRIPT = "review.js"


def review_csp(*, header: bool = True) -> str:
    """The page's Content-Security-Policy (a header; the meta tag's lacks frame-ancestors)."""
    return (f"default-src 'none'; script-src {csp_hash(asset_text(_SCRIPT))}; "
            f"style-src {csp_hash(asset_text(STYLESHEET))}; connect-src 'self'; img-src data:; "
            "form-action 'none'; base-uri 'none'; frame-src 'none'; object-src 'none'"
            + ("; frame-ancestors 'none'" if header else ""))


def review_link(run_id: str, case_id: str | None = None, category: str | None = None, *,
                port: int = REVIEW_PORT) -> str:
    """The review page of ``run_id`` at a case (and category) as ``judge review`` serves it.

    ``http://127.0.0.1:8765/review/RUN#case=ID&category=CAT``: every part percent-encoded, so
    the address is plain ASCII with no markup or terminal control in it, whatever the ids.
    """
    url = f"http://{REVIEW_HOST}:{port}/review/{quote(run_id, safe='')}"
    parts = [f"{name}={quote(value, safe='')}" for name, value in (("case", case_id),
                                                                    ("category", category))
             if value is not None]
    return url + ("#" + "&".join(parts) if parts else "")


def review_html(run_id: str) -> str:
    """The page for ``run_id`` (an id the route checked: ``[A-Za-z0-9_-]``)."""
    run = html.escape(run_id, quote=True)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{review_csp(header=False)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>judge review {run}</title><style>{asset_text(STYLESHEET)}</style></head>
<body><div id="review" data-run="{run}">
<header class="top"><h1 id="title">Review {run}</h1>
<div class="sub"><span id="about"></span><span id="alpha"></span></div></header>
<div class="toolbar">
<label>reviewer <input id="reviewer" autocomplete="off" placeholder="your name"></label>
<label>show <select id="filter"><option value="all">all cases</option>
<option value="disagree">my disagreements</option>
<option value="borderline">borderline (near a band edge)</option>
<option value="judges">judges differ most</option></select></label>
<span id="progress"></span><span id="status" role="status"></span>
<p class="keys">keys: <kbd>j</kbd>/<kbd>→</kbd> next · <kbd>k</kbd>/<kbd>←</kbd> previous ·
<kbd>↑</kbd>/<kbd>↓</kbd> category · <kbd>1</kbd>–<kbd>9</kbd> band or level ·
<kbd>a</kbd> agree · <kbd>d</kbd> disagree · <kbd>n</kbd> note · <kbd>Esc</kbd> leave a field</p>
</div>
<main id="case"></main></div>
<script>{asset_text(_SCRIPT)}</script></body></html>
"""
