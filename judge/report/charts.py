"""The report's charts as Plotly figures (plain dicts of data and layout), from a ReportData.

Pure: the HTML adapter embeds the figures as JSON and plotly.js draws them. Plotly reads
pseudo-HTML in every text it draws (``<b>``, ``<br>``, ``<a href>``), so each string that
comes from a run (case ids, judge and category names) is HTML-escaped here: plotly decodes
the entities back and draws the characters as text, never as markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict, cast

from ..core.formats.rubric import Band
from ..core.stats.agreement import PairStats
from .data import AgreementView, CaseMove, PairPoints, ReportData

__all__ = ["BAND_COLOURS", "MARK_COLOURS", "Figure", "Layout", "Shape", "band_colour", "figures",
           "text"]

class Layout(TypedDict, total=False):
    """A figure's Plotly layout: the keys these charts set (Plotly's JSON names)."""

    title: dict[str, Any]
    font: dict[str, Any]
    margin: dict[str, int]
    paper_bgcolor: str
    plot_bgcolor: str
    height: int
    boxmode: str
    xaxis: dict[str, Any]
    yaxis: dict[str, Any]
    legend: dict[str, Any]
    shapes: list[Shape]


class Shape(TypedDict, total=False):
    """A line drawn on a chart (a band boundary, the identity line)."""

    type: str
    x0: float
    x1: float
    y0: float
    y1: float
    xref: str
    yref: str
    line: dict[str, Any]


class Figure(TypedDict):
    """A chart as plotly.js draws it: the element it goes in, its traces, its layout."""

    id: str
    data: Sequence[Mapping[str, object]]
    """Its traces, in Plotly's JSON."""
    layout: Layout

BAND_COLOURS = ("#c0392b", "#e67e22", "#d4ac0d", "#27ae60", "#1e8449", "#148f77", "#2471a3")
"""Lowest band first; a scale with more bands reuses the last colour."""
STATUS_COLOUR = "#7f8c8d"
MARK_COLOURS = {"regressed": "#c0392b", "newly_unscored": "#922b21", "noise": "#d4ac0d",
                "improved": "#1e8449", "steady": "#5d6d7e", "missing": "#aab7b8",
                "new": "#2471a3", "unscored": "#aab7b8"}
"""After-marker colour of a case move, by its mark."""
ROW_PX = 18
"""Height of one case row in the move chart."""

_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12}


def text(value: object) -> str:
    """A run's string made safe for plotly's pseudo-HTML: drawn as the characters it holds."""
    return html.escape(str(value), quote=False)


def band_colour(index: int) -> str:
    """The colour of the band at ``index`` (0 = the lowest)."""
    return BAND_COLOURS[min(index, len(BAND_COLOURS) - 1)]


def _layout(title: str, **extra: Any) -> Layout:
    base: Layout = {"title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 14}},
                    "font": _FONT, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
                    "paper_bgcolor": "#ffffff", "plot_bgcolor": "#fbfcfc", "height": 320}
    base.update(cast(Layout, extra))
    return base


def _bands_figure(data: ReportData) -> Figure:
    names, counts, colours = [], [], []
    for i, b in enumerate(data.bands):
        names.append(text(b.band))
        counts.append(b.count)
        colours.append(band_colour(i) if b.kind == "band" else STATUS_COLOUR)
    trace = {"type": "bar", "x": names, "y": counts, "marker": {"color": colours},
             "text": counts, "textposition": "auto",
             "hovertemplate": "%{x}: %{y} case(s)<extra></extra>"}
    return {"id": "chart-bands", "data": [trace],
            "layout": _layout(f"Bands of {len(data.cases)} case(s)",
                              yaxis={"title": {"text": "cases"}, "rangemode": "tozero"})}


def _categories_figure(data: ReportData) -> Figure:
    traces = []
    kinds = (("deterministic", "#5d6d7e"), ("AI", "#8e44ad"), ("final", "#2471a3"))
    for label, colour in kinds:
        xs: list[str] = []
        ys: list[int] = []
        hover: list[str] = []
        for d in data.categories:
            values = {"deterministic": d.deterministic, "AI": d.ai, "final": d.final}[label]
            for case_id, v in zip(d.case_ids, values, strict=True):
                if v is not None:
                    xs.append(text(d.category))
                    ys.append(v)
                    hover.append(text(case_id))
        traces.append({"type": "box", "name": label, "x": xs, "y": ys, "text": hover,
                       "boxpoints": "all", "jitter": 0.4, "pointpos": 0,
                       "marker": {"color": colour, "size": 4, "opacity": 0.7},
                       "line": {"width": 1.5},
                       "hovertemplate": f"%{{text}}<br>{label} %{{y}}<extra>%{{x}}</extra>"})
    return {"id": "chart-categories", "data": traces,
            "layout": _layout("Per category: deterministic, AI and final scores",
                              boxmode="group", height=380,
                              yaxis={"title": {"text": "score"}, "range": [-3, 103]},
                              legend={"orientation": "h", "y": -0.15})}


def _band_lines(bands: Sequence[Band], axis: Literal["x", "y"]) -> list[Shape]:
    """Dotted lines at the band boundaries, across the plot, on ``axis`` (x or y)."""
    line = {"color": "#bfc9ca", "width": 1, "dash": "dot"}
    edges = [b.min - 0.5 for b in sorted(bands, key=lambda b: b.min)[1:]]
    if axis == "x":
        return [{"type": "line", "x0": e, "x1": e, "yref": "paper", "y0": 0, "y1": 1,
                 "line": line} for e in edges]
    return [{"type": "line", "y0": e, "y1": e, "xref": "paper", "x0": 0, "x1": 1, "line": line}
            for e in edges]


def _move_text(m: CaseMove) -> str:
    flip = f", band {m.band_before} → {m.band_after}" if m.band_flip else ""
    return f"{m.case_id}: {_num(m.before)} → {_num(m.after)} ({m.mark.replace('_', ' ')}{flip})"


def _move_order(m: CaseMove) -> tuple[int, int, str]:
    delta = m.delta if m.delta is not None else 0
    return (0 if m.regression else 1, delta, m.case_id)


def _moves_figure(data: ReportData) -> Figure | None:
    against = data.against
    if against is None:
        return None
    moves = sorted((m for m in against.moves if m.before is not None or m.after is not None),
                   key=_move_order)
    line_x: list[int | None] = []
    line_y: list[str | None] = []
    for m in moves:
        if m.before is not None and m.after is not None:
            line_x += [m.before, m.after, None]
            line_y += [text(m.case_id), text(m.case_id), None]
    ids = [text(m.case_id) for m in moves]
    hover = [text(_move_text(m)) for m in moves]
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": line_x, "y": line_y, "hoverinfo": "skip",
         "line": {"color": "#bfc9ca", "width": 2}, "showlegend": False},
        {"type": "scatter", "mode": "markers", "name": f"before ({text(against.label)})",
         "x": [m.before for m in moves], "y": ids, "text": hover,
         "hovertemplate": "%{text}<extra></extra>",
         "marker": {"color": "#aab7b8", "size": 8, "symbol": "circle-open",
                    "line": {"width": 2}}},
        {"type": "scatter", "mode": "markers", "name": "after (this run)",
         "x": [m.after for m in moves], "y": ids, "text": hover,
         "hovertemplate": "%{text}<extra></extra>",
         "marker": {"color": [MARK_COLOURS[m.mark] for m in moves], "size": 10,
                    "symbol": ["diamond" if m.band_flip else "circle" for m in moves],
                    "line": {"color": ["#17202a" if m.band_flip else "rgba(0,0,0,0)"
                                       for m in moves], "width": 1.5}}},
    ]
    c = against.comparison
    title = (f"Moves from {text(against.label)}: {len(c.regressed_cases)} regressed, "
             f"{len(c.newly_unscored)} newly unscored, {len(c.improved_cases)} improved, "
             f"{sum(m.band_flip for m in moves)} band flip(s) (◆)")
    layout = _layout(title, height=max(260, ROW_PX * len(moves) + 120),
                     margin={"l": 200, "r": 20, "t": 40, "b": 40},
                     xaxis={"title": {"text": "overall score"}, "range": [-3, 103]},
                     yaxis={"type": "category", "categoryorder": "array",
                            "categoryarray": ids, "autorange": "reversed",
                            "automargin": True, "tickfont": {"size": 10}},
                     legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1,
                             "xanchor": "right"},
                     shapes=_band_lines(data.rubric.bands, "x"))
    return {"id": "chart-moves", "data": traces, "layout": layout}


def _num(value: float | None, places: int = 0) -> str:
    return "—" if value is None else f"{value:.{places}f}"


def _stats_line(stats: PairStats, flips: int | None) -> str:
    parts = [f"n {stats.n}", f"κ {_num(stats.weighted_kappa, 2)}",
             f"ρ {_num(stats.spearman_rho, 2)}", f"τ {_num(stats.kendall_tau, 2)}"]
    if flips is not None:
        parts.append(f"{flips} band flip(s)")
    return " · ".join(parts)


class _Scatter(TypedDict):
    type: str
    mode: str
    name: str
    x: list[int | None]
    y: list[int | None]
    text: list[str]
    hovertemplate: str
    marker: dict[str, Any]


def _scatter(element: str, pair: PairPoints, stats: PairStats, flips: int | None,
             bands: Sequence[Band]) -> Figure:
    normal = [p for p in pair.points if not p.flip]
    flipped = [p for p in pair.points if p.flip]
    a, b = text(pair.judge_a), text(pair.judge_b)

    def trace(points: Sequence[Any], name: str, colour: str, symbol: str) -> _Scatter:
        return {"type": "scatter", "mode": "markers", "name": name,
                "x": [p.a for p in points], "y": [p.b for p in points],
                "text": [text(p.case_id) for p in points],
                "hovertemplate": "%{text}<br>%{x} → %{y}<extra></extra>",
                "marker": {"color": colour, "size": 8, "symbol": symbol, "opacity": 0.85}}

    identity: Shape = {"type": "line", "x0": 0, "y0": 0, "x1": 100, "y1": 100,
                       "line": {"color": "#7f8c8d", "width": 1, "dash": "dash"}}
    layout = _layout(f"{a} → {b}<br><sub>{_stats_line(stats, flips)}</sub>", height=440,
                     margin={"l": 60, "r": 20, "t": 64, "b": 50},
                     xaxis={"title": {"text": f"{a} (overall)"}, "range": [-3, 103],
                            "constrain": "domain"},
                     yaxis={"title": {"text": f"{b} (overall)"}, "range": [-3, 103],
                            "scaleanchor": "x"},
                     legend={"orientation": "h", "y": -0.2},
                     shapes=[identity, *_band_lines(bands, "x"), *_band_lines(bands, "y")])
    return {"id": element, "data": [trace(normal, "same band", "#2471a3", "circle"),
                                    trace(flipped, "band flip", "#c0392b", "diamond")],
            "layout": layout}


def _agreement_figures(view: AgreementView, bands: Sequence[Band]) -> list[Figure]:
    out = []
    for i, (pair, points) in enumerate(zip(view.comparison.pairs, view.pairs, strict=True)):
        out.append(_scatter(f"chart-agree-{i}", points, pair.overall, len(pair.band_flips),
                            bands))
    by_judge = {h.judge: h for h in view.comparison.human}
    for i, points in enumerate(view.human):
        h = by_judge.get(points.judge_b)
        if h is not None:
            out.append(_scatter(f"chart-human-{i}", points, h.overall, None, bands))
    return out


def _people_figure(data: ReportData) -> Figure:
    """κ with the people over the suite's runs, oldest first, with its 95 % interval."""
    points = data.people
    x = [f"{text(p.run_id[:15])}<br>{text(p.model)}" for p in points]  # two short lines
    y = [p.kappa for p in points]
    plus = [None if p.kappa is None or p.kappa_high is None else p.kappa_high - p.kappa
            for p in points]
    minus = [None if p.kappa is None or p.kappa_low is None else p.kappa - p.kappa_low
             for p in points]
    hover = [text(f"{p.model} · rubric {p.rubric}@{p.rubric_hash[:8]} · template "
                  f"{p.template_id}@{p.template_hash[:8]} · n {p.n}") for p in points]
    trace = {"type": "scatter", "mode": "lines+markers", "x": x, "y": y,
             "error_y": {"type": "data", "array": plus, "arrayminus": minus,
                         "visible": True},
             "text": hover, "marker": {"color": "#2471a3"},
             "hovertemplate": "%{text}<br>κ %{y:.2f}<extra></extra>"}
    return {"id": "chart-people", "data": [trace],
            "layout": _layout("Weighted κ with the people, run by run (95 % interval)",
                              yaxis={"title": {"text": "κ"}, "range": [-0.2, 1.05]},
                              xaxis={"type": "category", "automargin": True})}


def figures(data: ReportData) -> list[Figure]:
    """Every chart of the report, in page order."""
    out = [_bands_figure(data)]
    if data.categories:
        out.append(_categories_figure(data))
    moves = _moves_figure(data)
    if moves is not None:
        out.append(moves)
    if data.agreement is not None:
        out += _agreement_figures(data.agreement, data.rubric.bands)
    if data.people:
        out.append(_people_figure(data))
    return out
