"""How every command prints: JSON on stdout and nothing else, tables for people, lines for logs.

One decision, made here for all commands. On a terminal a table is a rich table, when it
fits the terminal's width. Off a terminal (a pipe, a CI log, a file), with ``judge --plain``,
or when the table would not fit, it is plain aligned lines: one line per row, every cell
whole (no ellipsis, no wrapping, no box drawing), no colour codes. ``NO_COLOR`` turns the
colour off everywhere (rich honours it); the layout stays.

Cells are plain ``str`` (printed as given, never read as markup, so an id like ``[x]`` is
safe) or rich :class:`~rich.text.Text` for a styled cell (:func:`styled`, :func:`markup`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.formats.models import JudgeLedger
from ..core.outcomes.usage import cost_text
from ..core.stats.intervals import Interval
from ..core.text.canonical import stable_json
from .app import forced_plain

__all__ = [
    "PLAIN_WIDTH",
    "SECTION",
    "Cell",
    "Column",
    "band_style",
    "calls_text",
    "console",
    "emit_json",
    "emit_json_streaming",
    "err_console",
    "interval_text",
    "ledger_lines",
    "markup",
    "number_text",
    "plain_output",
    "plural",
    "print_detail_hint",
    "share_text",
    "short_text",
    "styled",
    "table",
]

PLAIN_WIDTH = 1_000_000
"""The console width off a terminal: a line is never cut or wrapped by us."""

SECTION = None
"""A row that is this value separates groups of rows (a rule on a terminal, nothing in plain)."""

Cell = str | Text

_BAND_STYLES = {
    "failing": "red",
    "weak": "yellow",
    "acceptable": "cyan",
    "strong": "green",
    "excellent": "bold green",
}


@dataclass(frozen=True)
class Column:
    """A table column: its header and how its cells line up."""

    name: str
    justify: str = "left"
    """``left`` or ``right``."""


def _stdout_is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def plain_output() -> bool:
    """Whether stdout gets plain lines: ``--plain``, or stdout is not a terminal."""
    return forced_plain() or not _stdout_is_terminal()


def emit_json(value: Any) -> None:
    """Write ``value`` (a model: its wire form) as stable JSON (sorted keys) to stdout."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
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


def styled(text: str, style: str) -> Text:
    """A cell or line part in a style; ``text`` is never read as markup."""
    return Text(text, style=style)


def markup(text: str) -> Text:
    """A cell built from trusted rich markup (escape untrusted parts with rich's ``escape``)."""
    return Text.from_markup(text)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 case``, ``2 cases``."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def number_text(value: float | None, places: int = 2) -> str:
    """A statistic with ``places`` decimals, ``—`` when unknown."""
    return "—" if value is None else f"{value:.{places}f}"


def short_text(value: Any) -> str:
    """A value in a cell: a sha256 as its first 12 digits, a list joined, ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef"
                                                           for c in value):
        return value[:12]
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "—"
    return str(value)


def share_text(value: float | None) -> str:
    """A share as a whole percentage (``83%``), ``—`` when unknown."""
    return "—" if value is None else f"{value:.0%}"


def interval_text(value: str, interval: Interval | None, places: int = 2) -> str:
    """``value [low, high]``: a statistic with its 95 % interval when known."""
    if interval is None or interval.low is None or interval.high is None:
        return value
    return f"{value} [{interval.low:.{places}f}, {interval.high:.{places}f}]"


def print_detail_hint(what: str) -> None:
    """The last line of a short view: what ``--detail`` adds to it."""
    console().print(f"--detail: {what}", markup=False, highlight=False)


def calls_text(entry: JudgeLedger) -> str:
    """``18 calls = 14 requests + 4 retries (timeout 4)``: a judge's calls, itemised."""
    parts = [plural(entry.requests, "request")]
    if entry.repair_turns:
        parts.append(plural(entry.repair_turns, "repair turn"))
    if entry.retries:
        why = ", ".join(f"{reason} {n}" for reason, n in entry.retries.items())
        parts.append(f"{plural(sum(entry.retries.values()), 'retry', 'retries')} ({why})")
    if entry.fallbacks:
        parts.append(plural(entry.fallbacks, "output-mode fallback"))
    return f"{plural(entry.calls, 'call')} = {' + '.join(parts)}"


def ledger_lines(ledger: Mapping[str, JudgeLedger]) -> list[str]:
    """One line per judge: calls itemised, cache hits, tokens, cost."""
    lines = []
    for model, e in ledger.items():
        reused = f" ({e.cached_tokens} prompt tokens from the provider's cache)" \
            if e.cached_tokens else ""
        lines.append(f"judge {model}: {calls_text(e)}; cache hits {e.cache_hits} of "
                     f"{plural(e.judgments, 'judgment')}; tokens {e.prompt_tokens}+"
                     f"{e.completion_tokens}{reused}; {cost_text(e.cost_usd, e.calls)}")
    return lines


class _Console(Console):
    """A rich console that leaves a closed pipe to :func:`judge.cli.main` (exit 141).

    Rich's own handling exits with 1, which a CI step would read as a regression.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


def console() -> Console:
    """The stdout console: colour on a terminal; off one, no colour; lines never broken."""
    if plain_output():
        return _Console(highlight=False, emoji=False, no_color=True, color_system=None,
                        soft_wrap=True, width=PLAIN_WIDTH)
    # soft_wrap: a long line is the terminal's to wrap; rich inserts no line break in it.
    return _Console(highlight=False, emoji=False, soft_wrap=True)


def err_console() -> Console:
    """A rich console on stderr, for progress and notices that must stay out of JSON."""
    # soft_wrap: a notice stays one line in a log, not cut at 80 columns off a terminal.
    return _Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


def _as_text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def _plain(cell: Cell) -> str:
    text = cell.plain if isinstance(cell, Text) else cell
    return " ".join(text.split("\n")).rstrip()


def _columns(columns: Sequence[str | Column]) -> list[Column]:
    return [c if isinstance(c, Column) else Column(c) for c in columns]


def table(columns: Sequence[str | Column], rows: Iterable[Sequence[Cell] | None], *,
          title: str | None = None, caption: str | None = None,
          show_header: bool = True) -> None:
    """Print a table on stdout: rich on a terminal when it fits, else plain aligned lines.

    Every cell is printed whole either way. ``rows`` may hold :data:`SECTION` separators.
    """
    cols = _columns(columns)
    body = list(rows)
    out = console()
    if not plain_output():
        rich_table = Table(*[c.name for c in cols], title=title, caption=caption,
                           title_justify="left", caption_justify="left",
                           show_header=show_header)
        for column, spec in zip(rich_table.columns, cols, strict=True):
            column.no_wrap = True
            column.justify = "right" if spec.justify == "right" else "left"
        for row in body:
            if row is SECTION:
                rich_table.add_section()
            else:
                rich_table.add_row(*[_as_text(c) for c in row])
        # Measured unbounded: Measurement.get would clamp the width to the terminal's.
        wide = out.options.update(width=PLAIN_WIDTH, max_width=PLAIN_WIDTH)
        if rich_table.__rich_measure__(out, wide).maximum <= out.width:
            out.print(rich_table)
            return
    _plain_table(out, cols, [r for r in body if r is not SECTION], title, caption,
                 show_header)


def _plain_table(out: Console, cols: Sequence[Column], rows: Sequence[Sequence[Cell]],
                 title: str | None, caption: str | None, show_header: bool) -> None:
    lines = [[c.name for c in cols]] if show_header else []
    lines += [[_plain(c) for c in row] for row in rows]
    widths = [max((cell_len(line[i]) for line in lines), default=0) for i in range(len(cols))]
    printed = [title] if title else []
    for line in lines:
        cells = []
        for i, (cell, spec) in enumerate(zip(line, cols, strict=True)):
            pad = " " * (widths[i] - cell_len(cell))
            cells.append(pad + cell if spec.justify == "right" else cell + pad)
        printed.append("  ".join(cells).rstrip())
    if caption:
        printed.append(caption)
    if printed:
        # One print for the whole table: rich's cost is per call, not per line.
        out.print("\n".join(printed), markup=False)
