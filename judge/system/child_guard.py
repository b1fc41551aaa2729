"""A child process that cannot outlive the process that started it, by standard-library means.

:func:`start_guarded` runs ``python -m judge.system.child_guard PARENT_PID -- CMD...``: a
small guard that starts ``CMD`` as its own child and ends it when the parent ends. The
parent holds the write end of the guard's stdin; when the parent dies (exit, crash,
``SIGKILL``) the kernel closes it and the guard reads end-of-file. The guard also ends
``CMD`` when its own parent pid changes, for a pipe that a forked child of the parent still
holds open. Ending is ``SIGTERM``, then ``SIGKILL`` after :data:`GRACE` seconds. ``SIGTERM``,
``SIGINT`` and ``SIGHUP`` sent to the guard end ``CMD`` the same way; the guard exits with
``CMD``'s status (``128 + signal`` when a signal ended it), so a caller polling the guard
sees ``CMD`` fail.

Why a guard: the kernel's own means (``prctl(PR_SET_PDEATHSIG)``) has no binding in the
standard library, and calling libc from Python through a foreign-function binding is a
second, unchecked path; the guard costs one small Python process beside a child that
lives for a whole run (``judge.llm.local``'s llama.cpp server).
``tests/system/test_child_guard.py`` kills a parent with ``SIGKILL`` and checks the child
is gone.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType
from typing import IO, Any

__all__ = ["GRACE", "guard", "start_guarded"]

GRACE = 5.0
"""Seconds between ``SIGTERM`` and ``SIGKILL`` when the guard ends its child."""
_POLL = 0.5  # seconds between looks at the parent pid while the pipe stays open
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def start_guarded(cmd: Sequence[str], *, stdout: IO[Any] | int | None = None,
                  stderr: IO[Any] | int | None = None) -> subprocess.Popen[bytes]:
    """Start ``cmd`` under a guard that ends it when this process ends; returns the guard.

    Keep the returned process object (its ``stdin`` is the tether): closing its stdin, or
    sending it ``SIGTERM``, ends ``cmd``. ``stdout``/``stderr`` are ``cmd``'s too.
    """
    guard_cmd = [sys.executable, "-m", "judge.system.child_guard", str(os.getpid()), "--",
                 *cmd]
    return subprocess.Popen(guard_cmd, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr)


class _Stop(Exception):
    """A signal asked the guard to end its child."""


def _stop_on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


def _end(child: subprocess.Popen[bytes], grace: float) -> int:
    if child.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            child.terminate()
        try:
            child.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            child.wait()
    code = child.returncode
    return 128 - code if code < 0 else code


def _parent_gone(parent: int, tether: int) -> bool:
    if os.getppid() != parent:
        return True
    ready, _, _ = select.select([tether], [], [], _POLL)
    return bool(ready) and not os.read(tether, 4096)  # readable and empty: end of file


def guard(cmd: Sequence[str], *, parent: int, tether: int = 0, grace: float = GRACE) -> int:
    """Run ``cmd`` until it exits or ``parent`` is gone (``tether`` at end of file); its status."""
    if os.getppid() != parent:  # the parent died before we got here
        return 128 + signal.SIGTERM
    for signum in _SIGNALS:
        signal.signal(signum, _stop_on_signal)
    child: subprocess.Popen[bytes] | None = None
    try:
        child = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL)
        while child.poll() is None and not _parent_gone(parent, tether):
            pass
    except _Stop:
        pass
    finally:
        for signum in _SIGNALS:  # ending now: a second signal must not cut that short
            signal.signal(signum, signal.SIG_IGN)
    return 128 + signal.SIGTERM if child is None else _end(child, grace)


def _main(argv: list[str]) -> int:  # pragma: no cover - the guard process itself
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        sys.stderr.write("usage: python -m judge.system.child_guard PARENT_PID -- CMD...\n")
        return 2
    return guard(argv[2:], parent=int(argv[0]))


if __name__ == "__main__":  # pragma: no cover - started by start_guarded
    sys.exit(_main(sys.argv[1:]))
