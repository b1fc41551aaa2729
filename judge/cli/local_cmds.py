"""``judge local serve|status|stop``: the embedded local judge's server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .output import emit_json

__all__ = ["register"]

ModelArg = Annotated[str, typer.Option("--model", help="Local model, e.g. local/smollm2.")]


def register(app: typer.Typer) -> None:
    """Add the ``local`` group to ``app``."""
    local = typer.Typer(help="Run the embedded local judge (llama.cpp) on this machine.",
                        no_args_is_help=True)
    local.command("serve")(serve)
    local.command("status")(status)
    local.command("stop")(stop)
    app.add_typer(local, name="local")


def serve(model: ModelArg = "local/smollm2",
          port: Annotated[int | None, typer.Option(help="Port (default: a free one).")] = None,
          json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Start the local server in the background; runs reuse it until `judge local stop`."""
    from ..local import server_status, start_server

    running = server_status(model, Path.cwd())
    if running is None:
        running = start_server(model, Path.cwd(), port=port, detached=True)
        running.pop("_process", None)
        verb = "started"
    else:
        verb = "already running"
    if json_out:
        emit_json({**running, "state": verb})
        return
    typer.echo(f"{model} {verb}: {running['apiBase']} (pid {running['pid']}, "
               f"log {running['log']})")


def status(model: ModelArg = "local/smollm2",
           json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Say whether the local server is running; exit 1 if it is not."""
    from ..local import local_available, server_status

    running = server_status(model, Path.cwd())
    if json_out:
        emit_json({"installed": local_available(), "running": running is not None,
                   "server": running})
    elif running is None:
        typer.echo(f"{model}: not running (installed: {'yes' if local_available() else 'no'})")
    else:
        typer.echo(f"{model}: running at {running['apiBase']} (pid {running['pid']})")
    if running is None:
        raise typer.Exit(1)


def stop(model: ModelArg = "local/smollm2") -> None:
    """Stop the server `judge local serve` started."""
    from ..local import stop_server

    typer.echo(f"{model}: {'stopped' if stop_server(model, Path.cwd()) else 'was not running'}")
