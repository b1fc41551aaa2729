"""``judge judges monitor FILE``: the production monitor over a file of judged live records.

``judge judges canary`` asks whether the *judge* drifted (it re-asks cached judgments);
this asks whether the *product* did (the pass rate of what the judge scored live). The
sampling rate, seed and minimum sample default to the ``monitor_*`` settings, as the live
monitor of ``judge workspace serve`` reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.text import Text

from ..app.judges.monitor_file import monitor_file
from ..app.workspace.workspace import Workspace
from ..core.formats.rubric import format_validation_error
from ..core.outcomes.monitor import MonitorConfig
from ..core.text.errors import UsageError
from .options import JsonFlag
from .output import console, emit_json

__all__ = ["register"]

_STATUS_STYLES = {"healthy": "green", "warning": "yellow", "critical": "red",
                  "insufficient": "dim"}


def register(app: typer.Typer) -> None:
    """Add ``monitor`` to ``app``."""
    app.command("monitor")(monitor)


def monitor(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl",
                                         help="Judged live records, one JSON object a line.")],
    rate: Annotated[float | None, typer.Option(
        "--rate", min=0.0, max=1.0,
        help="Fraction of records to sample (default: setting monitor_rate, 0.1).")] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Sampling seed (default: setting monitor_seed, 0).")] = None,
    warning: Annotated[float, typer.Option("--warning", min=0.0, max=1.0,
                                           help="Warn below this pass rate.")] = 0.85,
    critical: Annotated[float, typer.Option("--critical", min=0.0, max=1.0,
                                            help="Critical below this pass rate.")] = 0.70,
    pass_score: Annotated[int, typer.Option(
        "--pass-score", min=0, max=100,
        help="A record without 'passed' passes at this overallScore.")] = 60,
    min_samples: Annotated[int | None, typer.Option(
        "--min-samples", min=1,
        help="Scored samples needed for a verdict (default: setting monitor_min_samples, "
             "20).")] = None,
    json_out: JsonFlag = False,
) -> None:
    """Production monitor: sample judged live records and check their pass rate.

    Watches the product (what the judge scored live); `judge judges canary` watches the
    judge itself (re-asks cached judgments).

    Sampling hashes the seed with each record's id (or its JSON): a record is sampled the
    same way on every run and in any order. A record passes by its 'passed' field, else by
    overallScore >= --pass-score; with neither it is unscored.

    Exit 0: healthy, warning (printed in yellow) or insufficient samples. Exit 1: critical.
    Exit 2: a malformed line (named) or bad options.
    """
    workspace = Workspace.open(overrides={"monitor_rate": rate, "monitor_seed": seed,
                                          "monitor_min_samples": min_samples})
    s = workspace.settings
    try:
        config = MonitorConfig(sample_rate=s.monitor_rate, seed=s.monitor_seed,
                               warning_below=warning, critical_below=critical,
                               pass_score=pass_score, min_samples=s.monitor_min_samples)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise UsageError(msg, where=where, fix="--critical must not exceed --warning") from None
    status = monitor_file(workspace, file, config)
    if json_out:
        emit_json(status.model_dump(mode="json"))
    else:
        style = _STATUS_STYLES[status.status]
        rate_text = "—" if status.pass_rate is None else f"{status.pass_rate:.2%}"
        out = console()
        out.print(Text.assemble((status.status, style), f"  pass rate {rate_text} "
                                f"(warning below {status.warning_below:.0%}, critical below "
                                f"{status.critical_below:.0%})"))
        out.print(f"seen {status.seen}, sampled {status.sampled} (rate {status.sample_rate:g}, "
                  f"seed {status.seed}): {status.passed} passed, {status.failed} failed, "
                  f"{status.unscored} unscored")
        if status.status == "insufficient":
            out.print(f"[dim]fewer than {status.min_samples} scored samples: no verdict yet[/]")
    if status.status == "critical":
        raise typer.Exit(1)
