"""``judge rescore`` (a stored run under another rubric, no model call) and ``judge config``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..redact import mask_url
from .output import console, emit_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``rescore`` and ``config`` to ``app``."""
    app.command("rescore")(rescore)
    app.command("config")(config)


def rescore(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Stored run id (or a prefix).")],
    rubric: Annotated[str, typer.Option(help="Rubric id or path to score under.")],
    store: Annotated[str | None, typer.Option(help="Run store URL.")] = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Recompute a stored run's finals under another rubric; stores a new run, calls no model."""
    from ..clock import new_run_id, utc_now
    from ..app.workspace import Workspace
    from ..errors import UsageError
    from ..panel import headline_of
    from ..rescore import RescoreError, rescore_result
    from ..resources import load_rubric
    from ..rubric import rubric_hash
    from ..store import RunStore
    from ..summary import SummaryBuilder

    ws = Workspace.open(overrides={"store_url": store})
    rub = load_rubric(rubric, ws.root)
    with ws.open_store() as runs:
        source = runs.get_run(run_id)
        now = utc_now()
        new_id = new_run_id(now)
        info = source.model_copy(update={
            "id": new_id, "rubric": rub.id, "rubricHash": rubric_hash(rub), "createdAt": now,
            "status": "running",
            "settings": {**source.settings, "rescoredFrom": source.id, "calls": 0}})
        builder = SummaryBuilder()
        batch = []
        moved = 0
        try:
            rescored = []
            for result in runs.iter_results(source.id):
                new = rescore_result(result, rub)
                moved += (new.overallScore, new.band) != (result.overallScore, result.band)
                rescored.append(new)
        except RescoreError as exc:
            raise UsageError(str(exc), fix="re-score under a rubric with the same categories")\
                from None
        runs.create_run(info)
        head_model, head_sample = headline_of(source)
        for new in rescored:
            if new.judge is None or (new.judge.model, new.judge.sample) == (head_model,
                                                                             head_sample):
                builder.add(new)
            batch.append(new)
            if len(batch) >= 500:
                runs.add_results(new_id, batch)
                batch = []
        runs.add_results(new_id, batch)
        summary = builder.build()
        totals = source.totals.model_copy(update={
            "calls": 0, "cases": summary.cases, "scored": summary.scored,
            "unscored": summary.unscored, "cacheHits": 0, "promptTokens": 0,
            "completionTokens": 0, "costUsd": 0.0, "wallSeconds": 0.0})
        final = runs.finish_run(new_id, totals=totals, status="complete")
    payload: dict[str, Any] = {"run": final.model_dump(mode="json"), "rescoredFrom": source.id,
                               "modelCalls": 0, "casesMoved": moved,
                               "summary": summary.model_dump(mode="json")}
    if json_out:
        emit_json(payload)
        return
    out = console()
    out.print(f"re-scored run {source.id} ({source.rubric}) under [bold]{rub.id}[/] as run "
              f"[bold]{new_id}[/]: 0 model calls, {moved} case(s) changed score or band")
    rate = "—" if summary.passRate is None else f"{summary.passRate:.0%}"
    out.print(f"pass rate {rate}, mean overall {summary.meanOverall}")


def config(json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the effective settings and where each one came from."""
    from rich.table import Table

    from ..app.workspace import Workspace

    ws = Workspace.open()
    # A password inside a URL (store_url, api_base) is never shown.
    values = {k: mask_url(v) if isinstance(v, str) else v
              for k, v in ws.settings.model_dump(mode="json").items()}
    if json_out:
        emit_json({k: {"value": v, "source": ws.sources.get(k, "default")}
                   for k, v in values.items()})
        return
    table = Table("setting", "value", "from")
    for key, value in values.items():
        table.add_row(key, "—" if value is None else str(value), ws.sources.get(key, "default"))
    console().print(table)
