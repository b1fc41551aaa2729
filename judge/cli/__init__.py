"""The ``judge`` command: parse, call one operation of :mod:`judge.app`, render its result.

Process-wide tuning (environment defaults for LiteLLM, the collector's thresholds) happens
here, once, at the entry point — never inside a library call.
"""

from __future__ import annotations

import os
import sys

from ..errors import ConfigError, JudgeError, StoreError
from ..process import tune_process
from ..redact import Redactor, secret_values
from .app import build_app

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``judge`` console script.

    Called with ``argv`` None it owns the process (the console script, ``python -m judge``)
    and tunes it; called with arguments (from another program) it leaves the process alone.
    """
    if argv is None:
        tune_process()
    app = build_app()
    try:
        app.main(args=argv, prog_name="judge", standalone_mode=True)
    except ConfigError as exc:
        _error(f"error: {exc.render()}", 2)
    except StoreError as exc:
        _error(f"error: {exc}", 2)
    except JudgeError as exc:
        _error(f"error: {exc}", 1)
    except Exception as exc:  # a bug of ours: one readable line unless asked for more
        if os.environ.get("JUDGE_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc}\n  this is a bug in judgeflow; "
               "run again with JUDGE_DEBUG=1 for the traceback", 70)


def _error(text: str, code: int) -> None:
    """Print an error with every credential of the environment masked, and exit ``code``."""
    print(Redactor(secret_values(os.environ))(text), file=sys.stderr)
    sys.exit(code)
