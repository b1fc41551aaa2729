"""The warm worker: a per-user, per-workspace process that runs ``judge`` commands.

Each command runs in a child forked from a parent that has already imported the application.

Off by default: on with ``JUDGE_WORKER=1`` in the environment (a workspace's ``judge.toml``
cannot turn it on), never when ``CI`` is set or ``JUDGE_NO_WORKER=1``
(:func:`judge.worker.client.enabled` holds the order). Any worker error falls back to the
direct run, unchanged.

Layer: door (the CLI's front). May import: the CLI (the server side only); ``judge.__main__``
imports the client, which imports nothing but the standard library: it decides before typer.

Modules: ``client`` (decide, check the socket's folder and its peer, connect, pass fds,
forward signals, fall back), ``server`` (the warm parent: one thread that listens, checks
each peer and head, forks a child per command and kills it when its client goes, idles out,
checks the digest).
"""

from __future__ import annotations

__all__: list[str] = []
