"""``python -m judge`` and the ``judge`` console script.

Before anything heavy is imported, the warm worker (:mod:`judge.worker`) is asked to run the
command when the environment enables it (``JUDGE_WORKER=1``; never under ``CI`` or
``JUDGE_NO_WORKER=1``; a workspace's settings file cannot); on any worker error the command runs
directly, exactly as without the worker.
"""

from __future__ import annotations

import json
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point: the worker when enabled and healthy, else the CLI in this process."""
    if argv is None:
        from .worker import client
        args = sys.argv[1:]
        if args[:1] == ["worker"] and len(args) == 2 and args[1] in ("status", "stop"):
            if args[1] == "stop":
                print("stopped" if client.stop() else "no worker running")
            else:
                found = client.status()
                print(json.dumps(found) if found else "no worker running")
            sys.exit(0)
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
