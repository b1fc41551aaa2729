"""``judge review``: the review page, labels in and out, what to label next.

The work is :mod:`judge.app.judges.reviewing`; this module parses the flags and renders the
results. ``judge review RUN`` serves the workspace on 127.0.0.1
with a fresh review token, which only reads and labels that run (every other route needs
``JUDGE_SERVER_TOKEN``; without it they are closed), and prints the page's address; the
token rides in the address's fragment, which the browser never sends.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..app.judges.reviewing import export_labels, import_labels, next_cases
from ..app.workspace.bind import TOKEN_ENV
from ..app.workspace.workspace import Workspace
from ..report.review_page import REVIEW_PORT, review_link
from .options import JsonFlag, StoreOption
from .output import console, emit_json, plural, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``review`` to ``app``."""
    app.command("review")(review)


def review(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Stored run id (or a prefix).")],
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free one).")] = REVIEW_PORT,
    export: Annotated[bool, typer.Option(
        "--export", help="Write the labels from the store to the labels file and exit.")] = False,
    import_file: Annotated[Path | None, typer.Option(
        "--import", help="Read a labels file into the store (idempotent) and exit.")] = None,
    allow_unsealed: Annotated[bool, typer.Option(
        "--allow-unsealed", help="With --import: take a labels file whose seal is missing or "
        "does not match (made by hand or by another tool), on purpose.")] = False,
    out: Annotated[Path | None, typer.Option(
        help="With --export: the file (default: <suite>.labels.jsonl beside the suite).")] = None,
    next_n: Annotated[int | None, typer.Option(
        "--next", help="Print the N unlabelled cases whose labels would tell most.")] = None,
    store: StoreOption = None,
    json_out: JsonFlag = False,
) -> None:
    """Review a run's verdicts in the browser; export, import labels; what to label next."""
    workspace = Workspace.open(overrides={"store_url": store})
    if export:
        path = export_labels(workspace, run_id, out)
        console().print(f"labels written to {escape(str(path))}")
        return
    if import_file is not None:
        changed = import_labels(workspace, run_id, import_file, allow_unsealed=allow_unsealed)
        console().print(f"{plural(changed, 'label')} changed in the store")
        return
    if next_n is not None:
        picked = next_cases(workspace, run_id, next_n)
        if json_out:
            emit_json([{"case": c, "why": w} for c, w in picked])
            return
        table(["case", "why"], [[c, w] for c, w in picked])
        return
    _serve_review(workspace, run_id, port)


def _serve_review(workspace: Workspace, run_id: str, port: int) -> None:
    from ..server.security import ReviewGrant
    from ..server.serving import serve

    with workspace.open_store() as store:
        run = store.get_run(run_id)
    if port == 0:  # a free port now, so the address printed is the one served
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
    grant = ReviewGrant(run.id, secrets.token_urlsafe(24))
    typer.echo(f"review page: {review_link(run.id, port=port)}#token={grant.token}", err=True)
    serve(workspace.root, "127.0.0.1", port, env=workspace.env,
          token=workspace.env.get(TOKEN_ENV) or None, review=grant)
