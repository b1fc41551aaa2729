"""A guarded child ends with the process that started it, SIGKILL included.

The child here is a long-running Python process that writes its pid to a file, standing in
for llama.cpp's server (``judge.llm.local.start_server`` starts that one the same way).
The "judge" is a Python process that calls :func:`start_guarded` and then sleeps; the test
kills it and watches the child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.system.child_guard import GRACE, start_guarded

ROOT = Path(__file__).resolve().parents[2]
WAIT = 20.0  # seconds a test waits for a process to start or to end (machine under load)
SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)"


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, dead but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone (between the open and the read: ProcessLookupError)
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _until(what: str, test: object, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(test) and test():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


def _pid_in(path: Path) -> int:
    _until(f"the child wrote its pid to {path}",
           lambda: path.is_file() and path.read_text().strip().isdigit())
    return int(path.read_text())


@pytest.fixture
def kill_left() -> Iterator[list[int]]:
    """Pids the test started: any still running at the end is killed, and fails the test."""
    pids: list[int] = []
    yield pids
    left = [pid for pid in pids if _running(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"process(es) {left} left running"


def _judge_like(tmp_path: Path, *, fork_holder: bool = False) -> subprocess.Popen[str]:
    """A parent that starts a guarded sleeper (``fork_holder``: and forks a child of its own
    that keeps the tether's write end open), prints its pids, then waits to be killed."""
    script = textwrap.dedent(f"""
        import os, sys, time
        from judge.system.child_guard import start_guarded
        guard = start_guarded([sys.executable, "-c", {SLEEPER!r}, {str(tmp_path / "pid")!r}])
        holder = os.fork() if {fork_holder!r} else -1
        if holder == 0:
            time.sleep(300)
            os._exit(0)
        print(guard.pid, holder, flush=True)
        time.sleep(300)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=env)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_child_ends_when_its_starter_is_killed(tmp_path: Path, kill_left: list[int],
                                                   sig: signal.Signals) -> None:
    judge = _judge_like(tmp_path)
    assert judge.stdout is not None
    guard_pid, _ = map(int, judge.stdout.readline().split())
    child = _pid_in(tmp_path / "pid")
    kill_left.extend([judge.pid, guard_pid, child])
    assert _running(child) and _running(guard_pid)
    judge.send_signal(sig)
    assert judge.wait(WAIT) == -sig
    judge.stdout.close()
    _until(f"the guarded child {child} ends after its starter got {sig.name}",
           lambda: not _running(child))
    _until("the guard ends", lambda: not _running(guard_pid))


def test_a_forked_holder_of_the_pipe_does_not_keep_the_child_alive(
        tmp_path: Path, kill_left: list[int]) -> None:
    # The tether's write end is shared with a forked child of the starter: no end of file
    # reaches the guard, and its parent pid changing is what ends the child.
    judge = _judge_like(tmp_path, fork_holder=True)
    assert judge.stdout is not None
    guard_pid, holder = map(int, judge.stdout.readline().split())
    child = _pid_in(tmp_path / "pid")
    kill_left.extend([judge.pid, guard_pid, child, holder])
    judge.kill()
    judge.wait(WAIT)
    judge.stdout.close()
    _until(f"the guarded child {child} ends", lambda: not _running(child))
    _until("the guard ends", lambda: not _running(guard_pid))
    assert _running(holder)  # the pipe was still open: the parent pid is what told
    os.kill(holder, signal.SIGKILL)
    _until("the holder ends", lambda: not _running(holder))


def test_closing_the_tether_or_terminating_the_guard_ends_the_child(
        tmp_path: Path, kill_left: list[int]) -> None:
    for n, end in enumerate(("close", "terminate")):
        pid_file = tmp_path / f"pid{n}"
        guard = start_guarded([sys.executable, "-c", SLEEPER, str(pid_file)])
        child = _pid_in(pid_file)
        kill_left.extend([guard.pid, child])
        assert guard.stdin is not None
        if end == "close":
            guard.stdin.close()
        else:
            guard.terminate()
        code = guard.wait(WAIT + GRACE)
        guard.stdin.close()
        assert not _running(child), end
        assert code == 128 + signal.SIGTERM  # the child's end, told by the guard's status


def test_the_guard_exits_with_the_childs_status(tmp_path: Path) -> None:
    # start_server polls the guard to see the server fail while starting.
    guard = start_guarded([sys.executable, "-c", "raise SystemExit(3)"])
    assert guard.wait(WAIT) == 3
    assert guard.stdin is not None
    guard.stdin.close()
