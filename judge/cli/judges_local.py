"""``judge judges local start|status|stop``: the embedded judge's server (app.judges.local_ops)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..app.judges.local_ops import local_status, serve_local, stop_local
from ..app.workspace.workspace import DEFAULT_LOCAL, Workspace
from .options import JsonFlag
from .output import emit_json

__all__ = ["register"]

ModelArg = Annotated[str, typer.Option("--model", help="Local model, e.g. local/smollm2.")]


def register(app: typer.Typer) -> None:
    """Add the ``local`` group to ``app``."""
    local = typer.Typer(help="Run the embedded local judge (llama.cpp) on this machine.",
                        no_args_is_help=True)
    local.command("start")(start)
    local.command("status")(status)
    local.command("stop")(stop)
    app.add_typer(local, name="local")


def start(model: ModelArg = DEFAULT_LOCAL,
          port: Annotated[int | None, typer.Option(help="Port (default: a free one).")] = None,
          json_out: JsonFlag = False) -> None:
    """Start the local server in the background; runs reuse it until `judge judges local stop`."""
    report = serve_local(Workspace.open(), model, port)
    running = report.server
    if json_out:
        emit_json({**running.model_dump(mode="json"), "state": report.state})
        return
    typer.echo(f"{model} {report.state}: {running.api_base} (pid {running.pid}, "
               f"log {running.log})")


def status(model: ModelArg = DEFAULT_LOCAL, json_out: JsonFlag = False) -> None:
    """Say whether the local server is running; exit 1 if it is not."""
    found = local_status(Workspace.open(), model)
    if json_out:
        emit_json({"installed": found.installed, "running": found.running,
                   "server": found.server.model_dump(mode="json") if found.server else None})
    elif found.server is None:
        typer.echo(f"{model}: not running (installed: {'yes' if found.installed else 'no'})")
    else:
        typer.echo(f"{model}: running at {found.server.api_base} (pid {found.server.pid})")
    if not found.running:
        raise typer.Exit(1)


def stop(model: ModelArg = DEFAULT_LOCAL) -> None:
    """Stop the server `judge judges local start` started."""
    stopped = stop_local(Workspace.open(), model)
    typer.echo(f"{model}: {'stopped' if stopped else 'was not running'}")
