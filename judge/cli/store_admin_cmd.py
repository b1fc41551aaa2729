"""``judge store upgrade``: migrate the run store's schema to this judgeflow's revision."""

from __future__ import annotations

from typing import Annotated

import typer

from ..app.store_admin import upgrade_store
from ..app.workspace import Workspace
from .output import console, emit_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``store upgrade`` to ``app``."""
    store_app = typer.Typer(help="Administer the run store (schema migrations).",
                            no_args_is_help=True)
    store_app.command("upgrade")(upgrade)
    app.add_typer(store_app, name="store")


def upgrade(
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL",
        help="Run store URL (default: setting store_url).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Bring the run store's schema to this judgeflow's revision (every pending migration).

    Additive migrations are applied on open anyway; this also applies those that change
    existing data, so back the store up first. Exit 2: the store is newer than this
    judgeflow, or cannot be opened.
    """
    done = upgrade_store(Workspace.open(overrides={"store_url": store}))
    if json_out:
        emit_json({"store": done.url, "before": done.before, "after": done.after,
                   "changed": done.changed})
        return
    if not done.changed:
        console().print(f"{done.url}: already at schema revision {done.after}")
        return
    before = "empty" if done.before is None else f"revision {done.before}"
    legacy = " (from before migrations)" if done.stamped_legacy else ""
    console().print(f"{done.url}: upgraded from {before}{legacy} to revision {done.after}")
