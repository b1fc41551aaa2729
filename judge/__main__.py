"""``python -m judge`` and the ``judge`` console script.

Before anything heavy is imported, the warm worker (:mod:`judge.worker`) is asked to run the
command when the environment enables it (``JUDGE_WORKER=1``; never under ``CI`` or
``JUDGE_NO_WORKER=1``; a workspace's settings file cannot); on any worker error the command runs
directly, exactly as without the worker. ``judge workspace worker status|stop`` is answered
here, before the CLI loads (its old spelling ``judge worker …`` too, with the deprecation line
:func:`judge.cli.aliases.deprecation` words).
"""

from __future__ import annotations

import json
import sys

__all__ = ["main", "worker_command"]

_WORKER_ACTIONS = ("status", "stop")


def worker_command(action: str) -> int:
    """``judge workspace worker status|stop``: print the answer; the exit code (0)."""
    from .worker import client

    if action == "stop":
        print("stopped" if client.stop() else "no worker running")
    else:
        found = client.status()
        print(json.dumps(found) if found else "no worker running")
    return 0


def _worker_action(args: list[str]) -> str | None:
    """The worker action ``args`` ask for, in the new spelling or the old one (said)."""
    if len(args) == 3 and args[:2] == ["workspace", "worker"] and args[2] in _WORKER_ACTIONS:
        return args[2]
    if len(args) == 2 and args[0] == "worker" and args[1] in _WORKER_ACTIONS:
        sys.stderr.write(f"`judge worker {args[1]}` is now `judge workspace worker {args[1]}`; "
                         "the old name goes in the next release\n")
        return args[1]
    return None


def main(argv: list[str] | None = None) -> None:
    """Entry point: the worker when enabled and healthy, else the CLI in this process."""
    if argv is None:
        from .worker import client
        args = sys.argv[1:]
        action = _worker_action(args)
        if action is not None:
            sys.exit(worker_command(action))
        if client.enabled():
            code = client.run(["judge", *args])
            if code is not None:
                client.exit_now(code)
        elif notice := client.file_notice():
            sys.stderr.write(notice)
    from .cli import main as cli_main
    cli_main(argv)


if __name__ == "__main__":
    main()
