"""Render a :class:`~judge.report.data.ReportData` as one self-contained HTML page.

The Jinja template, the stylesheet (shared with the review page), the page's script and
plotly.js (vendored, MIT) ship as package data in ``judge/report/assets`` and are inlined, so
the page asks nothing of the network when opened. Autoescape is on for every value;
:func:`shown` also makes bidi and control characters visible (a U+202E in a rationale
cannot reorder what a reader sees).
Chart data travels as JSON in a ``<script type="application/json">`` block with ``<``, ``>``
and ``&`` escaped, read by the page's static script with ``JSON.parse``. A Content Security
Policy allows only the page's own two scripts, by hash: even markup that slipped past the
escaping could not run.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

from ..core.formats.models import CaseResult, JudgeMeta, RunTotals
from ..core.outcomes.usage import cost_text
from ..core.stats.judge_health import HealthBuilder
from ..core.stats.judge_quality import WEAK
from ..system.atomic_files import write_atomic_bytes
from .charts import figures
from .data import CaseMove, ReportData
from .page_assets import ASSETS, STYLESHEET, asset_text, csp_hash
from .samples import SAMPLE_LIMIT, CaseSample
from .transcripts import Transcript

__all__ = [
    "ASSETS",
    "CONTROL_CHARS",
    "PLOTLY_FILE",
    "PROMPT_SOURCES",
    "render_report",
    "script_json",
    "shown",
    "write_report",
]

PLOTLY_FILE = "plotly-cartesian.min.js"
"""plotly.js cartesian bundle (npm ``plotly.js-cartesian-dist-min``), see VENDORED.md."""
CONTROL_CHARS = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"
                           "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
"""Characters shown as a visible ``U+XXXX`` tag instead of being sent to the page: bidi
embeddings, overrides and isolates, zero-width characters and C0/C1 controls."""

PROMPT_SOURCES = {"cache": "as sent, from the run's cache entry",
                  "rendered": "re-rendered from the suite", "none": "not available"}
"""How the page names where a case's prompt came from
(:data:`judge.report.samples.PromptSource`)."""

_SCRIPT_END = re.compile(r"</script|<!--", re.IGNORECASE)
_WORD_EDGE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=_)(?=[^_])")


def shown(value: object) -> Markup:
    """``value`` HTML-escaped, with each control character replaced by a visible tag."""
    escaped = str(escape("" if value is None else str(value)))
    return Markup(CONTROL_CHARS.sub(
        lambda m: f'<span class="ctl" title="control character">U+{ord(m.group()):04X}</span>',
        escaped))


def script_json(value: Any) -> Markup:
    """``value`` as JSON safe inside a ``<script>`` element (no ``<``, ``>`` or ``&``)."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _script(name: str) -> Markup:
    """A package script to inline; refused if it could end its script element early."""
    text = asset_text(name)
    if _SCRIPT_END.search(text):
        raise RuntimeError(f"{ASSETS}/{name} holds '</script' or '<!--': it cannot be "
                           f"inlined safely")
    return Markup(text)  # our own package file, not a value of the run


def _csp(scripts: Iterable[str]) -> str:
    hashes = " ".join(csp_hash(s) for s in scripts)
    return ("default-src 'none'; " f"script-src {hashes}; " "style-src 'unsafe-inline'; "
            "img-src data:; font-src data:; connect-src 'none'; form-action 'none'; "
            "base-uri 'none'; frame-src 'none'; object-src 'none'")


def _bare(value: object) -> str:
    """``value`` as text without control characters (for sort and search attributes)."""
    return CONTROL_CHARS.sub("", str(value))


def _num(value: float | None, places: int = 0) -> str:
    return "—" if value is None else f"{value:.{places}f}"


def _signed(value: float | None, places: int = 0) -> str:
    return "—" if value is None else f"{value:+.{places}f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _run_cost(totals: RunTotals) -> str:
    """What the run paid, in the CLI's words (``no paid calls``, ``$0.0123``, ``cost unknown``)."""
    return cost_text(totals.cost_usd, totals.calls + totals.batch_calls)


def _judged(judge: JudgeMeta) -> str:
    """A case's judgment: its tokens, cost and time (for a cache hit, those of its first call)."""
    facts = [] if judge.prompt_tokens is None else [
        f"{judge.prompt_tokens}+{judge.completion_tokens} tokens"]
    facts.append(cost_text(judge.cost_usd, 1 + judge.repair_turns))
    if judge.latency_ms is not None:
        facts.append(f"{judge.latency_ms / 1000:.1f} s")
    if judge.cached:
        return "from the cache: no paid calls · as first judged: " + ", ".join(facts)
    return " · ".join(facts)


def _breakable(value: object) -> Markup:
    """``value`` shown with a ``<wbr>`` at each camelCase hump and after each underscore.

    A long category id in a narrow header then wraps between its words, never inside one.
    """
    return Markup("<wbr>").join(shown(part) for part in _WORD_EDGE.split(str(value)))


def _short(value: str | None) -> str:
    return "—" if not value else value[:12]


def _value(value: Any) -> str:
    """A setting, list or mapping as one line of text (escaped later, like any value)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(value)  # judges' names, as the CLI lists them
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(shown=shown, num=_num, signed=_signed, pct=_pct, run_cost=_run_cost,
                       judged=_judged, breakable=_breakable, short=_short, value=_value,
                       bare=_bare)
    return env


class _CategoryRow(TypedDict):
    """A row of the page's category table."""

    category: str
    weight: float | str
    kind: str
    n: int
    min: int
    median: str
    mean: str
    max: int


class _CaseRow(TypedDict):
    """A case as the page's template reads it."""

    index: int
    result: CaseResult
    anchor: str
    move: CaseMove | None
    flagged: bool
    search: str
    finals: dict[str, int | None]
    evidence_anchor: dict[str, str]
    transcript: Transcript | None
    sample: CaseSample | None


def _category_rows(data: ReportData) -> list[_CategoryRow]:
    weights = {c.id: c.weight for c in data.rubric.categories}
    rows: list[_CategoryRow] = []
    for d in data.categories:
        for kind, values in (("deterministic", d.deterministic), ("AI", d.ai),
                             ("final", d.final)):
            present = [v for v in values if v is not None]
            if not present:
                continue
            rows.append({"category": d.category, "weight": weights.get(d.category, "—"),
                         "kind": kind, "n": len(present), "min": min(present),
                         "median": f"{statistics.median(present):g}",
                         "mean": f"{statistics.fmean(present):.1f}", "max": max(present)})
    return rows


def _cases(data: ReportData, moves: Mapping[str, CaseMove]) -> list[_CaseRow]:
    out: list[_CaseRow] = []
    for index, r in enumerate(data.cases):
        anchor = f"case-{index}"
        move = moves.get(r.id)
        flagged = move is not None and (move.regression or move.band_flip)
        words = [r.id, *r.tags, r.band or "", r.status, r.complexity or ""]
        out.append({
            "index": index, "result": r, "anchor": anchor, "move": move, "flagged": flagged,
            "search": _bare(" ".join(w for w in words if w).lower()),
            "finals": {c.category: c.final_score for c in r.category_scores},
            "evidence_anchor": {item.id: f"{anchor}-ev-{i}"
                                for i, item in reversed(list(enumerate(r.evidence)))},
            "transcript": data.transcripts.get(r.id),
            "sample": data.samples.get(r.id),
        })
    return out


def render_report(data: ReportData) -> str:
    """The report page as HTML text."""
    plotly_js, app_js = _script(PLOTLY_FILE), _script("report.js")
    moves = {m.case_id: m for m in data.against.moves} if data.against else {}
    table_categories = list(dict.fromkeys(
        [d.category for d in data.categories]
        + [c.category for r in data.cases for c in r.category_scores]))
    human_by_judge = ({h.judge: h for h in data.agreement.comparison.human}
                      if data.agreement else {})
    cases = _cases(data, moves)
    health, q = HealthBuilder(), data.judge_quality
    for result in data.cases:
        health.add(result)
    template = _environment().from_string(asset_text("report.html.j2"))
    return template.render(
        d=data, csp=_csp([str(plotly_js), str(app_js)]), css=Markup(asset_text(STYLESHEET)),
        plotly_js=plotly_js, app_js=app_js, figures_json=script_json(figures(data)),
        band_index={b.name: i for i, b in enumerate(data.rubric.bands)},
        category_rows=_category_rows(data), cases=cases, table_categories=table_categories,
        case_anchor={v["result"].id: v["anchor"] for v in cases},
        human_by_judge=human_by_judge, health=health.build(),
        flips=sum(m.band_flip for m in moves.values()), sample_limit=SAMPLE_LIMIT,
        prompt_sources=PROMPT_SOURCES, quality_text=q.said() if q else "",
        quality_low=q is not None and (q.rho is None or q.rho < WEAK))


def write_report(path: Path, html: str) -> int:
    """Write ``html`` to ``path`` atomically (nothing half-written); the bytes written."""
    payload = html.encode("utf-8")
    write_atomic_bytes(path, payload)
    return len(payload)
