"""``judge ARGS`` as a process of its own, forked from the test process.

A fresh interpreter pays LiteLLM's import again for every child (seconds of CPU each on
these machines); a fork starts with it already imported. The child is still a process of
its own, so what these tests are about stays real: its own pid, signals and exit status,
its own sockets to the judge, its own handles on the cache and the store, racing another
process. It runs ``judge``'s console entry point as ``python -m judge`` would (the process
is the CLI's: the entry point tunes it). Start-up itself, and anything that needs a clean
interpreter, is tested with :func:`conftest.run_judge_subprocess`.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import IO, TextIO

from conftest import EXAMPLE_SUITE, load_fake_server, run_judge

__all__ = ["ForkedJudge", "spawn_judge"]

POLL_SECONDS = 0.02
_warm = False


def _warm_up() -> None:
    """Once per test process: one small run in-process, so its imports are done before forks.

    LiteLLM, the store's SQLAlchemy and Alembic, the CLI's modules: a child that had to
    import them would pay seconds of CPU each time.
    """
    global _warm
    if _warm:
        return
    with tempfile.TemporaryDirectory(prefix="judge-warm-") as folder:
        shutil.copy(EXAMPLE_SUITE, Path(folder) / "suite.yaml")
        server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
        try:
            done = run_judge(["run", "suite.yaml", "--model", "hosted_vllm/fake-judge",
                              "--api-base", f"{server.base_url}/v1", "--json"], Path(folder))
        finally:
            server.stop()
    assert done.returncode == 0, done.stderr
    _warm = True



class ForkedJudge:
    """The parts of :class:`subprocess.Popen` the tests use, for a forked ``judge``."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], *,
                 server: bool = False, discard: bool = False, pipes: bool = False) -> None:
        _warm_up()
        self.args = args
        self.returncode: int | None = None
        self.stdout: TextIO | None = None
        self.stderr: TextIO | None = None
        # A command's output goes to unnamed files read by communicate(), or with ``discard``
        # to /dev/null (Popen's DEVNULL); a server's stdout to /dev/null and its stderr to a
        # pipe read as it is written (its log); with ``pipes`` both to pipes read as written.
        self._files: list[IO[bytes]] = [] if server or discard or pipes else [
            tempfile.TemporaryFile(), tempfile.TemporaryFile()]
        read, write = os.pipe() if server or pipes else (-1, -1)
        read_out, write_out = os.pipe() if pipes else (-1, -1)
        sys.stdout.flush()
        sys.stderr.flush()
        # The child's entry point collects garbage once before judging: frozen, what it
        # inherits is not scanned again (a second of CPU with LiteLLM's heap).
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            if pipes:
                os.close(read)
                os.close(read_out)
                _child(args, cwd, env, write_out, write)
            if server:
                os.close(read)
                _child(args, cwd, env, os.open(os.devnull, os.O_WRONLY), write)
            if discard:
                null = os.open(os.devnull, os.O_WRONLY)
                _child(args, cwd, env, null, null)
            _child(args, cwd, env, self._files[0].fileno(), self._files[1].fileno())
        gc.unfreeze()
        self.pid = pid
        if server or pipes:
            os.close(write)
            self.stderr = open(read, encoding="utf-8", errors="replace")
        if pipes:
            os.close(write_out)
            self.stdout = open(read_out, encoding="utf-8", errors="replace")

    def poll(self) -> int | None:
        """The exit status once it has ended (``-N`` for signal N, as Popen), else None."""
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        """Wait for the end; :class:`subprocess.TimeoutExpired` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(POLL_SECONDS)
        assert self.returncode is not None
        return self.returncode

    def communicate(self, timeout: float) -> tuple[str, str]:
        """Wait for the end, then its stdout and stderr (a server's: both empty)."""
        self.wait(timeout)
        texts = []
        for file in self._files:
            file.seek(0)
            texts.append(file.read().decode("utf-8", errors="replace"))
            file.close()
        self._files = []
        return (texts[0], texts[1]) if texts else ("", "")

    def terminate(self) -> None:
        """SIGTERM it."""
        self.send_signal(signal.SIGTERM)

    def send_signal(self, sig: int) -> None:
        """Signal it, unless it has already been reaped."""
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        """SIGKILL it if it still runs, and reap it: never leave one behind."""
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.wait(30)


def spawn_judge(args: list[str], cwd: Path, env: dict[str, str], *, server: bool = False,
                discard: bool = False, pipes: bool = False) -> ForkedJudge:
    """Start ``judge ARGS`` in ``cwd`` with exactly ``env``, as a forked process."""
    return ForkedJudge(args, cwd, env, server=server, discard=discard, pipes=pipes)


def _child(args: list[str], cwd: Path, env: dict[str, str], out: int, err: int) -> None:
    code = 70
    try:
        # What a freshly started `python -m judge` has: default signal dispositions
        # (a background shell may have started the tests with SIGINT ignored), its own
        # standard streams and folder, and only the environment it was given.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as CPython sets it at start-up
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [str(Path(sys.executable).parent / "judge"), *args]
        from judge.cli import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # the child must report and exit, never return
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
