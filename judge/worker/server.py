"""The warm parent: imports the application and LiteLLM once, forks a fresh child per command.

The child takes the caller's fds 0/1/2, cwd, environment and argv, runs ``judge.cli.main``
exactly as a direct run would, and its exit status goes back to the client. A request whose
installation digest differs from the one this worker started with makes it stop and remove its
socket (the client runs that command directly and the next use starts a fresh worker): stale
code is never served. The worker ends after ``JUDGE_WORKER_IDLE`` seconds idle (the client
sets it from the ``worker_idle`` setting; default 600).

One thread. Every connection, head and child is an event of one ``selectors`` loop, and the
fork happens in that loop: a fork copies the locks other threads hold, and the earlier
worker forked from a thread per connection while the others ran. A thread printing a
malformed frame's traceback held the lock of the worker's ``sys.stderr`` as another forked;
LiteLLM's log handlers write to that very object (they took ``sys.stderr`` when imported), so
that child waited for ever on a lock no thread of its own would release.

Trust and bounds: the socket's folder is checked before binding; a peer that is not this
user (``SO_PEERCRED``) is closed before a byte is read; a head is at most
:data:`judge.worker.client.MAX_HEAD` bytes, arrives within :data:`HEAD_WAIT_S` and carries
exactly three descriptors; every descriptor received is closed on every path that does not
hand it to a child, and a child closes every descriptor of the others. A client that goes
away (its connection closes: SIGKILL, SIGHUP, a crash) has its child killed at once, so no
further judgment starts, as when a direct run is killed.
"""

from __future__ import annotations

import io
import json
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from . import client

__all__ = ["HEAD_WAIT_S", "MAX_PENDING", "Head", "main", "parse_head", "serve"]

HEAD_WAIT_S = 10.0
"""Seconds a connection may take to send its whole head before it is closed."""
MAX_PENDING = 64
"""Connections still sending their heads at once; more are closed unread."""
_RECV = 64 * 1024
_FDS = 3
_TICK_S = 0.2
_ENDED = "ended"
"""What a child's pidfd is registered with: readable once it ends (reaped after the batch)."""


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


@dataclass(frozen=True)
class Head:
    """A command's head as the client sent it, its types checked."""

    digest: str
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]


def parse_head(line: bytes) -> Head | str:
    """The command head in ``line``, or the control message's name (``status``, ``stop``).

    ValueError for anything else: not JSON, not an object, a field missing or of another type.
    """
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("the head is not a JSON object")
    control = data.get("control")
    if control in ("status", "stop"):
        return str(control)
    digest, argv, cwd, env = (data.get(k) for k in ("digest", "argv", "cwd", "env"))
    if not (isinstance(digest, str) and isinstance(cwd, str) and isinstance(argv, list)
            and all(isinstance(a, str) for a in argv) and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise ValueError("the head's digest, argv, cwd or env is missing or of another type")
    return Head(digest=digest, argv=tuple(argv), cwd=cwd, env=env)


def _child(conn: socket.socket, head: Head, fds: list[int]) -> None:
    """In the forked child: become the caller's process, run the command, never return.

    It says its pid before anything else (the client forwards signals to it, and a command
    whose child said nothing never ran, so the client may run it directly), and reports its
    own exit code too, so a command whose worker was killed under it still ends as it would
    have (the parent's report, when it lives, says the same).
    """
    code = 70
    try:
        conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    except OSError:
        os._exit(code)  # the client is gone: nothing runs
    _end_with_the_client(conn)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(head.cwd)
        os.environ.clear()
        os.environ.update(head.env)
        sys.argv = list(head.argv)
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
        # tear down a process forked from a large parent (17-33 ms, measured).
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


def _end_with_the_client(conn: socket.socket) -> None:
    """Kill this child the moment its client's connection closes, worker or no worker.

    The worker kills a child whose client went away; a child whose worker was killed first
    (it goes on, so the command still ends as it would) watches the connection itself, or a
    client killed next would leave it judging on. It polls for the peer's hang-up only,
    never reading: a client sends nothing after its head.
    """
    def watch() -> None:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLRDHUP | select.POLLHUP)
        while True:
            for _, events in poller.poll():
                if events & select.POLLNVAL:
                    return  # the connection was closed here: nothing left to watch
                if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="judge-client-watch", daemon=True).start()


def _say(conn: socket.socket, answer: object) -> None:
    """Send ``answer`` as one line, never waiting: the client may be gone or not reading."""
    try:
        conn.send(json.dumps(answer).encode() + b"\n", socket.MSG_DONTWAIT)
    except OSError:
        pass


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


@dataclass
class _Pending:
    """A connection still sending its head: what came so far, the descriptors with it."""

    conn: socket.socket
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)


@dataclass
class _Running:
    """A command's child: its client's connection and a pidfd that is readable once it ends."""

    pid: int
    conn: socket.socket
    pidfd: int | None


class _Worker:
    """The loop: accept, read heads, fork, watch each child and its client, reap, idle out."""

    def __init__(self, listener: socket.socket, path: Path, expected: str,
                 idle_s: float) -> None:
        self.listener, self.path, self.expected, self.idle_s = listener, path, expected, idle_s
        self.inode = path.stat().st_ino
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ, None)
        self.pending: dict[int, _Pending] = {}
        self.running: dict[int, _Running] = {}
        self.served = 0
        self.last = time.monotonic()
        self.stopping = False

    def loop(self) -> None:
        """Serve until told to stop or idle for ``idle_s``, then until every child has ended."""
        try:
            while not self._done():
                for key, _ in self.selector.select(_TICK_S):
                    self._event(key)
                self._reap()
                self._expire()
        finally:
            self._unlisten()

    def _done(self) -> bool:
        if self.running or self.pending:
            return False
        return self.stopping or time.monotonic() - self.last > self.idle_s

    def _event(self, key: selectors.SelectorKey) -> None:
        if key.data is None:
            self._accept()
        elif isinstance(key.data, _Pending):
            try:
                self._receive(key.data)
            except (OSError, ValueError, RecursionError, UnicodeDecodeError) as exc:
                self._drop(key.data, {"refused": str(exc)[:200]})
        elif isinstance(key.data, _Running):
            self._client_said(key.data)

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:  # gone between readiness and accept, or out of descriptors
            return
        if not client.same_user(conn) or len(self.pending) >= MAX_PENDING:
            conn.close()  # another user's process: not a byte read, nothing answered
            return
        self.last = time.monotonic()
        pending = _Pending(conn, self.last + HEAD_WAIT_S)
        self.pending[conn.fileno()] = pending
        self.selector.register(conn, selectors.EVENT_READ, pending)

    def _receive(self, p: _Pending) -> None:
        """Take what came; once the head's line is whole, act on it."""
        flags = socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC
        try:
            msg, fds, got, _ = socket.recv_fds(p.conn, _RECV, _FDS + 1, flags)
        except BlockingIOError:
            return
        p.fds += fds
        if got & socket.MSG_CTRUNC or len(p.fds) > _FDS:
            raise ValueError(f"more than {_FDS} descriptors")
        if not msg:
            raise ValueError("the connection closed before the head's end")
        p.data += msg
        end = p.data.find(b"\n")
        if (end if end >= 0 else len(p.data)) > client.MAX_HEAD:
            raise ValueError(f"a head longer than {client.MAX_HEAD} bytes")
        if end >= 0:
            self._act(p, parse_head(bytes(p.data[:end])))

    def _act(self, p: _Pending, head: Head | str) -> None:
        if head == "status":
            self._drop(p, {"pid": os.getpid(), "digest": self.expected,
                           "idle_timeout": self.idle_s, "served": self.served})
        elif head == "stop":
            self._drop(p, {"stopped": True})
            self._stop()
        elif not isinstance(head, Head) or head.digest != self.expected:
            self._drop(p, {"stale": True})
            self._stop()
        elif len(p.fds) != _FDS:
            raise ValueError(f"{len(p.fds)} descriptors, not {_FDS}")
        else:
            self._fork(p, head)

    def _fork(self, p: _Pending, head: Head) -> None:
        """Fork the command's child (from this, the process's only thread) and watch it."""
        self._forget(p)
        pid = os.fork()
        if pid == 0:
            self._leave_to(p.conn)
            _child(p.conn, head, p.fds)
        self.served += 1
        _close(p.fds)
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None  # reaped on the loop's tick instead
        running = self.running[pid] = _Running(pid, p.conn, pidfd)
        self.selector.register(p.conn, selectors.EVENT_READ, running)
        if pidfd is not None:
            self.selector.register(pidfd, selectors.EVENT_READ, _ENDED)

    def _leave_to(self, conn: socket.socket) -> None:
        """In a child: close everything of the worker's but ``conn`` (and its descriptors).

        The listener, the loop, the other connections and the descriptors they sent: the
        caller of another command sees its pipe's end when that command ends, not this one.
        """
        self.selector.close()
        self.listener.close()
        for other in self.pending.values():
            other.conn.close()
            _close(other.fds)
        for running in self.running.values():
            running.conn.close()
            if running.pidfd is not None:
                os.close(running.pidfd)

    def _client_said(self, running: _Running) -> None:
        """The client sent bytes or went away; gone, its child is killed at once."""
        try:
            data = running.conn.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            return  # a client sends nothing after its head: ignored
        self.selector.unregister(running.conn)
        try:
            os.kill(running.pid, signal.SIGKILL)
        except OSError:
            pass

    def _reap(self) -> None:
        """Report each child that ended to its client and forget it."""
        for pid, running in list(self.running.items()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours to report: the client hears the end alone
                done, status = pid, -1
            if done == 0:
                continue
            if status >= 0 and os.WIFSIGNALED(status):
                _say(running.conn, {"signal": os.WTERMSIG(status)})
            elif status >= 0:
                _say(running.conn, {"exit": os.WEXITSTATUS(status)})
            del self.running[pid]
            for fd in (running.conn, running.pidfd):
                if fd is not None and self._registered(fd):
                    self.selector.unregister(fd)
            running.conn.close()
            if running.pidfd is not None:
                os.close(running.pidfd)
            self.last = time.monotonic()

    def _registered(self, fd: socket.socket | int) -> bool:
        try:
            self.selector.get_key(fd)
        except (KeyError, ValueError):  # ValueError: a socket already closed
            return False
        return True

    def _expire(self) -> None:
        """Close the connections whose head did not come whole in time."""
        now = time.monotonic()
        for p in [p for p in self.pending.values() if p.deadline < now]:
            self._drop(p, {"refused": f"no whole head within {HEAD_WAIT_S:g} s"})

    def _forget(self, p: _Pending) -> None:
        self.pending.pop(p.conn.fileno(), None)
        if self._registered(p.conn):
            self.selector.unregister(p.conn)

    def _drop(self, p: _Pending, answer: object) -> None:
        """Answer ``p`` once, close it and every descriptor it sent."""
        self._forget(p)
        _close(p.fds)
        _say(p.conn, answer)
        p.conn.close()

    def _stop(self) -> None:
        """Take no new command; the children running are still watched to their end."""
        self.stopping = True
        self._unlisten()

    def _unlisten(self) -> None:
        if self.listener.fileno() < 0:
            return
        if self._registered(self.listener):
            self.selector.unregister(self.listener)
        self.listener.close()
        try:
            if self.path.stat().st_ino == self.inode:  # not a newer worker's socket
                self.path.unlink(missing_ok=True)
        except OSError:
            pass


def serve(path: Path, idle_s: float) -> None:
    """Listen on ``path`` (mode 0600) until idle for ``idle_s`` or told to stop.

    Nothing is bound unless ``path``'s folder is a private folder of this user
    (:func:`judge.worker.client.folder_problem`).
    """
    problem = client.folder_problem(path.parent)
    if problem is not None:
        raise OSError(f"{path.parent} {problem}")
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
    sock.listen(16)
    sock.setblocking(False)
    _Worker(sock, path, expected, idle_s).loop()


def main(argv: list[str]) -> None:
    """Serve the socket ``argv[0]`` (:data:`judge.worker.client.BOOT` calls this), then exit.

    A relative or empty ``sys.path`` entry would make the commands' lazy imports look in the
    caller's folder: none is kept, whatever started this process.
    """
    sys.path[:] = [p for p in sys.path if p and os.path.isabs(p)]
    try:
        serve(Path(argv[0]), float(os.environ.get("JUDGE_WORKER_IDLE", client.DEFAULT_IDLE_S)))
    finally:
        os._exit(0)  # imported libraries' non-daemon threads must not keep a stopped worker


if __name__ == "__main__":
    main(sys.argv[1:])
