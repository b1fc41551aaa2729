"""``judge serve``: the harness over HTTP (FastAPI on uvicorn) for the current workspace."""

from __future__ import annotations

from typing import Annotated

import typer

from ..app.bind import TOKEN_ENV, server_token
from ..app.workspace import Workspace
from ..errors import UsageError

__all__ = ["INSTALL_HINT", "register"]

INSTALL_HINT = "pip install 'judgeflow[server]'"


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command("serve")(serve)


def serve(
    host: Annotated[str, typer.Option(help="Address to bind; beyond loopback only with "
                                           f"{TOKEN_ENV} set.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535,
                                      help="Port to bind (0: a free one, printed).")] = 8787,
) -> None:
    """Serve this workspace's harness over HTTP: suites, runs, baselines, monitor, metrics.

    Writes (POST, DELETE) need `Authorization: Bearer $JUDGE_SERVER_TOKEN` when it is set.
    SIGTERM stores what active runs judged, marks them interrupted, and exits.
    """
    workspace = Workspace.open()
    token = server_token(host, workspace.env)
    try:
        # The server extra (fastapi, uvicorn, prometheus-client) is optional.
        from ..server.serving import serve as run_server
    except ImportError as exc:
        raise UsageError(f"judge serve needs the server extra ({exc.name} is not installed)",
                         fix=f"install it: {INSTALL_HINT}") from None
    try:
        run_server(workspace, host, port, token=token)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
