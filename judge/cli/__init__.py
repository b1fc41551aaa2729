"""The ``judge`` command. Start-up stays light: subcommands import what they need when they run."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``judge`` console script."""
    from ..errors import ConfigError, JudgeError, StoreError
    from .app import build_app

    app = build_app()
    try:
        app(args=argv, standalone_mode=True, prog_name="judge")
    except ConfigError as exc:
        print(f"error: {exc.render()}", file=sys.stderr)
        sys.exit(2)
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except JudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except Exception as exc:  # a bug of ours: one readable line unless asked for more
        import os

        if os.environ.get("JUDGE_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc}\n  this is a bug in judgeflow; "
              "run again with JUDGE_DEBUG=1 for the traceback", file=sys.stderr)
        sys.exit(70)
