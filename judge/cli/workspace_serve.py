"""``judge workspace serve``: the harness over HTTP (FastAPI on uvicorn) for this workspace.

Nothing heavy is imported here: the server listens first and opens the workspace behind
its socket (:mod:`judge.server.serving`), so ``/healthz`` answers well within a second.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path
from typing import Annotated

import typer

from ..app.workspace.bind import TOKEN_ENV, server_token
from ..core.text.errors import UsageError

__all__ = ["INSTALL_HINT", "SERVER_MODULES", "register"]

INSTALL_HINT = "pip install 'judgeflow[server]'"
SERVER_MODULES = ("fastapi", "uvicorn", "prometheus_client")
"""What the server extra installs; looked for (not imported) before binding."""


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
    `/healthz` answers as soon as the socket listens; `/readyz` once the workspace is open.
    SIGTERM stores what active runs judged, marks them interrupted, and exits.
    """
    env = dict(os.environ)
    token = server_token(host, env)
    missing = next((name for name in SERVER_MODULES if find_spec(name) is None), None)
    if missing is not None:
        raise UsageError(f"judge workspace serve needs the server extra ({missing} is not "
                         "installed)",
                         fix=f"install it: {INSTALL_HINT}")
    # The server extra is optional; present (checked above), it is imported only now.
    from ..server.serving import serve as run_server

    try:
        run_server(Path.cwd(), host, port, env=env, token=token)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
