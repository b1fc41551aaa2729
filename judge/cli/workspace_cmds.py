"""``judge workspace config|worker|reference``: this folder's settings and the warm worker.

``config`` shows the settings in effect and where each came from
(:mod:`judge.app.workspace.configview`); ``worker status|stop`` the warm worker (the entry
point answers these before the CLI loads: :func:`judge.__main__.worker_command`);
``reference`` the Markdown reference of the files people write. ``judge workspace serve`` is
:mod:`judge.cli.workspace_serve`'s.
"""

from __future__ import annotations

import sys

import typer

from ..app.workspace.configview import config_view
from ..app.workspace.schemas import reference_page
from ..app.workspace.workspace import Workspace
from .options import JsonFlag
from .output import emit_json, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``config``, ``worker status|stop`` and ``reference`` to ``app``."""
    app.command("config")(config)
    worker = typer.Typer(help="The warm worker (docs/worker.md): status, stop.",
                         no_args_is_help=True)
    worker.command("status")(worker_status)
    worker.command("stop")(worker_stop)
    app.add_typer(worker, name="worker")
    app.command("reference")(reference)


def config(json_out: JsonFlag = False) -> None:
    """Show the effective settings and where each one came from (URL credentials masked)."""
    view = config_view(Workspace.open())
    if json_out:
        emit_json(view.public())
        return
    table(["setting", "value", "from"],
          [[s.name, "—" if s.value is None else str(s.value), s.source]
           for s in (*view.settings, *view.derived)])


def worker_status() -> None:
    """Say whether the warm worker runs here: its record as JSON, or `no worker running`."""
    from .. import __main__ as entry

    raise typer.Exit(entry.worker_command("status"))


def worker_stop() -> None:
    """Stop the warm worker, if one runs."""
    from .. import __main__ as entry

    raise typer.Exit(entry.worker_command("stop"))


def reference() -> None:
    """Print the Markdown reference of suite, rubric and settings files (docs/reference.md).

    Every key, its type, its default and its meaning, from the models; every setting's
    environment variable, and the variables that are not settings.
    """
    sys.stdout.write(reference_page())
    sys.stdout.flush()
