"""The warm parent: imports the application and LiteLLM once, forks a fresh child per command.

The child takes the caller's fds 0/1/2, cwd, environment and argv, runs ``judge.cli.main``
exactly as a direct run would, and its exit status goes back to the client. A request whose
installation digest differs from the one this worker started with makes it stop and remove its
socket (the client runs that command directly and the next use starts a fresh worker): stale
code is never served. The worker ends after ``JUDGE_WORKER_IDLE`` seconds idle (the client
sets it from the ``worker_idle`` setting; default 600).
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from . import client

__all__ = ["main", "serve"]


def _stream(fd: int, mode: str, like: TextIO | None, env: Mapping[str, str], *,
            line_buffering: bool = False) -> io.TextIOWrapper:
    """The caller's descriptor ``fd`` as the interpreter of a direct run would open it.

    Encoding and error handler as the warm parent's own stream of that number got them
    from the interpreter (stderr ``backslashreplace``; stdin and stdout ``surrogateescape``
    under a C or UTF-8 locale), or as the caller's ``PYTHONIOENCODING`` sets them: a file
    name that is not UTF-8 then prints as it does without the worker, not as an internal
    error (``strict``, io's default, raised on it).
    """
    encoding = like.encoding if like is not None else "utf-8"
    if env.get("PYTHONUTF8") == "1":  # the worker starts with -E: the caller's UTF-8 mode
        encoding = "utf-8"
    errors = (like.errors if like is not None else None) or "strict"
    chosen, _, handler = env.get("PYTHONIOENCODING", "").partition(":")
    encoding, errors = chosen or encoding, handler or errors
    return io.TextIOWrapper(io.FileIO(fd, mode, closefd=False), encoding=encoding,
                            errors=errors, line_buffering=line_buffering)


def _child(conn: socket.socket, head: dict[str, object], fds: list[int],
           listener: socket.socket) -> None:
    """In the forked child: become the caller's process, run the command, never return.

    The child reports its own exit code too, so a command whose worker was killed under it
    still ends as it would have (the parent's report, when it lives, says the same).
    """
    code = 70
    listener.close()  # a worker killed under us must leave no one holding its socket
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(str(head["cwd"]))
        env = head["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        argv = head["argv"]
        assert isinstance(argv, list)
        sys.argv = [str(a) for a in argv]
        sys.stdin = _stream(0, "r", sys.__stdin__, os.environ)
        sys.stdout = _stream(1, "w", sys.__stdout__, os.environ, line_buffering=os.isatty(1))
        sys.stderr = _stream(2, "w", sys.__stderr__, os.environ, line_buffering=True)
        from ..cli import main
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            code = 130
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        # The caller's streams are closed now, not by the exit: a reader of the command's
        # output (a pipe, ``$(judge ...)``) sees its end without waiting for the kernel to
        # tear down a process forked from a large parent (bench/RESULTS.md, "The warm
        # worker's fixed costs").
        for fd in (0, 1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
        except OSError:
            pass
        os._exit(code)


def _serve(conn: socket.socket, state: dict[str, float], expected: str,
           stop: threading.Event, listener: socket.socket) -> None:
    with conn:
        msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
        buf = msg
        while not buf.endswith(b"\n"):
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
        head = json.loads(buf)
        control = head.get("control")
        if control == "status":
            conn.sendall(json.dumps({"pid": os.getpid(), "digest": expected,
                                     "idle_timeout": state["idle"],
                                     "served": int(state["served"])}).encode() + b"\n")
            return
        if control == "stop":
            conn.sendall(b'{"stopped": true}\n')
            stop.set()
            return
        if head.get("digest") != expected or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.sendall(b'{"stale": true}\n')
            stop.set()
            return
        pid = os.fork()
        if pid == 0:
            _child(conn, head, fds, listener)
        state["served"] += 1
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            answer = {"signal": os.WTERMSIG(status)}
        else:
            answer = {"exit": os.WEXITSTATUS(status)}
        try:
            conn.sendall(json.dumps(answer).encode() + b"\n")
        except OSError:
            pass
        state["last"] = time.monotonic()


def serve(path: Path, idle_s: float) -> None:
    """Listen on ``path`` (mode 0600) until idle for ``idle_s`` or told to stop."""
    expected = client.digest()
    from ..cli import warm

    warm()
    path.unlink(missing_ok=True)
    old = os.umask(0o177)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    inode = path.stat().st_ino
    sock.listen(16)
    sock.settimeout(0.2)
    state = {"last": time.monotonic(), "idle": idle_s, "served": 0.0}
    busy: list[threading.Thread] = []
    stop = threading.Event()
    try:
        while not stop.is_set():
            busy = [t for t in busy if t.is_alive()]
            if not busy and time.monotonic() - state["last"] > idle_s:
                break
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            state["last"] = time.monotonic()
            t = threading.Thread(target=_serve, args=(conn, state, expected, stop, sock),
                                 daemon=True)
            t.start()
            busy.append(t)
    finally:
        sock.close()
        try:
            if path.stat().st_ino == inode:  # not a newer worker's socket
                path.unlink(missing_ok=True)
        except OSError:
            pass


def main(argv: list[str]) -> None:
    """Serve the socket ``argv[0]`` (:data:`judge.worker.client.BOOT` calls this), then exit.

    A relative or empty ``sys.path`` entry would make the commands' lazy imports look in the
    caller's folder: none is kept, whatever started this process.
    """
    sys.path[:] = [p for p in sys.path if p and os.path.isabs(p)]
    serve(Path(argv[0]), float(os.environ.get("JUDGE_WORKER_IDLE", client.DEFAULT_IDLE_S)))
    os._exit(0)  # imported libraries' non-daemon threads must not keep a stopped worker alive


if __name__ == "__main__":
    main(sys.argv[1:])
