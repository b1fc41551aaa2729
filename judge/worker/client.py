"""The worker's client: tiny, standard library only, decided before anything heavy is imported.

Protocol (one Unix stream connection per command): the client sends one JSON line
``{"digest", "argv", "cwd", "env"}`` (at most :data:`MAX_HEAD` bytes) with fds 0/1/2 attached
(SCM_RIGHTS); the command's child answers ``{"pid": N}`` before it does anything else (for
forwarding SIGINT/SIGTERM), or the worker answers ``{"stale": true}`` or ``{"refused": WHY}``;
then ``{"exit": CODE}`` or ``{"signal": SIG}``. Anything else before the pid is a worker error:
nothing ran, and the client runs the command directly, as without the worker.

Trust: the socket's folder must be a private folder of this user (:func:`private_folder`) and
the process at the other end of the socket this user (:func:`same_user`, ``SO_PEERCRED``)
before a byte is sent; otherwise the command runs directly and nothing (no environment, no
descriptor) reaches that socket.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["BOOT", "DEFAULT_IDLE_S", "FILE_IGNORED", "KILLED", "MAX_ANSWER", "MAX_HEAD", "digest",
           "enabled", "exit_now", "file_notice", "file_settings", "folder_problem", "idle_seconds",
           "peer_uid", "run", "runtime_dir", "same_user", "socket_path", "spawn", "status", "stop",
           "workspace"]

PACKAGE = Path(__file__).resolve().parents[1]
START_WAIT_S = 10.0
KILLED = 128 + signal.SIGKILL
"""The exit code when the worker and the command's child died with no report."""
FORWARDED = (signal.SIGINT, signal.SIGTERM)
"""The signals the client passes on to the command's child."""
DEFAULT_IDLE_S = 600.0
MAX_HEAD = 16 * 1024 * 1024
"""The largest head line, in bytes; the worker refuses a longer one unread, and the client
runs a command whose head would be longer directly. Linux caps a process's arguments and
environment together at 2 MiB (``ARG_MAX``) and JSON escapes a byte as at most six: a real
head stays under 12 MiB."""
MAX_ANSWER = 4096
"""The largest line the worker may answer with (its answers are a few dozen bytes)."""


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
"""The strings pydantic reads as a bool: the settings loader and this client agree."""


def _as_bool(value: object) -> bool | None:
    """``value`` as the settings loader reads a bool; None when it would refuse it."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.lower()
        return True if word in _TRUE else False if word in _FALSE else None
    return None


def file_settings(cwd: str | None = None) -> dict[str, object]:
    """The settings file the application reads in ``cwd`` (judge.toml, else pyproject's).

    ``judge.toml``, else ``pyproject.toml``'s ``[tool.judge]``; empty when absent or
    unreadable (the direct run that follows then names the error).
    """
    import tomllib  # here: a command that the environment sends to the worker never reads it

    folder = Path(cwd or os.getcwd())
    for name, section in (("judge.toml", ()), ("pyproject.toml", ("tool", "judge"))):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data: object = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
            return {}
        for part in section:
            data = data.get(part) if isinstance(data, dict) else None
        if data is None and section:
            continue
        return dict(data) if isinstance(data, dict) else {}
    return {}


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    """Whether this command goes to the worker; the first rule that speaks decides.

    1. ``JUDGE_NO_WORKER`` true: off.  2. ``CI`` set (non-empty): off.
    3. ``JUDGE_WORKER``: its value.  4. off. A value the settings loader would refuse counts
    as off. Only the environment turns it on: a workspace's ``judge.toml`` is a file a cloned
    repository controls, and the worker is a long-lived process holding the caller's keys.
    """
    if _as_bool(env.get("JUDGE_NO_WORKER", "")) or env.get("CI"):
        return False
    return _as_bool(env.get("JUDGE_WORKER", "")) is True


FILE_IGNORED = ("judge: `worker` in {name} is ignored: a repository's settings file cannot "
                "start the warm worker (it would run with your keys); to use it, set "
                "JUDGE_WORKER=1 in your own environment, and remove the line\n")
"""The notice a settings file that asks for the worker gets, once per command."""


def file_notice(env: Mapping[str, str] = os.environ, cwd: str | None = None) -> str | None:
    """The notice for a settings file that sets ``worker`` where the environment did not decide.

    None when the file does not set it, or the environment already says on or off.
    """
    if env.get("JUDGE_WORKER") or env.get("JUDGE_NO_WORKER") or env.get("CI"):
        return None
    found = file_settings(cwd)
    if "worker" not in found:
        return None
    name = "judge.toml" if (Path(cwd or os.getcwd()) / "judge.toml").is_file() else \
        "pyproject.toml [tool.judge]"
    return FILE_IGNORED.format(name=name)


def idle_seconds(env: Mapping[str, str] = os.environ, cwd: str | None = None) -> float | None:
    """The idle timeout a new worker gets, in seconds; None when it is not valid.

    ``JUDGE_WORKER_IDLE``, else the ``worker_idle`` setting, else 600 s. None when it is not
    a number the settings loader takes (0 < s ≤ a day): the command runs directly and the
    loader names the error.
    """
    raw = env.get("JUDGE_WORKER_IDLE") or file_settings(cwd).get("worker_idle", DEFAULT_IDLE_S)
    if isinstance(raw, bool):
        return None
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if 0 < seconds <= 86_400 else None


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a private folder of this user, or None when it is one.

    Private: a folder itself (not a symlink to one), owned by this uid, that neither its group
    nor others may write to — else another user could put their own socket where the
    client looks for the worker's, or remove the worker's.
    """
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder" + (" (a symlink)" if stat.S_ISLNK(st.st_mode) else "")
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    if st.st_mode & 0o022:
        return f"may be written by its group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _xdg_problem() -> str | None:
    """Why ``$XDG_RUNTIME_DIR`` is set but not used, or None (unset, or private)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if not xdg:
        return None
    if not os.path.isabs(xdg):
        return f"XDG_RUNTIME_DIR {xdg!r} is not an absolute path"
    problem = folder_problem(Path(xdg))
    return None if problem is None else f"XDG_RUNTIME_DIR {xdg} {problem}"


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR`` when it is a private folder of this user, else ``judge-<uid>``.

    The fallback is a 0700 folder under the temp dir made by this user; OSError when that is
    not private either (someone else made it first): the command then runs directly.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _xdg_problem() is None:
        return Path(xdg)
    import tempfile  # here: every command pays the client's imports

    path = Path(tempfile.gettempdir()) / f"judge-{os.getuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    problem = folder_problem(path)
    if problem is not None:
        raise OSError(f"{path} {problem}")
    return path


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of the Unix socket ``sock``, by ``SO_PEERCRED``.

    The kernel's record of who connected (or listened), which the peer cannot forge. None
    where the platform has no ``SO_PEERCRED``: no peer is trusted there.
    """
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        cred = sock.getsockopt(socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    except OSError:
        return None
    return int.from_bytes(cred[4:8], sys.byteorder)


def same_user(sock: socket.socket) -> bool:
    """Whether the peer of ``sock`` is this user: the only peer we send to or take from."""
    return peer_uid(sock) == os.getuid()


def workspace(cwd: str | None = None) -> Path:
    """The nearest folder upwards holding judge.toml or pyproject.toml, else the cwd."""
    start = Path(cwd or os.getcwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "judge.toml").is_file() or (folder / "pyproject.toml").is_file():
            return folder
    return start


def socket_path(cwd: str | None = None) -> Path:
    """One socket per user (the runtime dir) and workspace (a hash of its path)."""
    tag = hashlib.sha256(str(workspace(cwd)).encode()).hexdigest()[:16]
    return runtime_dir() / f"judge-worker-{tag}.sock"


def digest() -> str:
    """The installation: every package file's path, mtime and size, the interpreter, the locks.

    Walked with ``os.scandir`` (``os.walk``), not pathlib: every command through the worker
    pays it (measured 22 ms through pathlib, 2 ms through ``os.scandir``).
    """
    h = hashlib.sha256(sys.executable.encode())
    files: list[str] = []
    for folder, dirs, names in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [os.path.join(folder, n) for n in names]
    files.sort()
    root = str(PACKAGE.parent)
    files += sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith(".lock"))
    for p in files:
        st = os.stat(p)
        h.update(f"{p}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
    return h.hexdigest()


BOOT = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('judge', sys.argv[1] + '/__init__.py', "
    "submodule_search_locations=[sys.argv[1]])\n"
    "sys.modules['judge'] = package = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(package)\n"
    "from judge.worker.server import main\n"
    "main(sys.argv[2:])\n"
)
"""How the worker starts: ``python -E -P -c BOOT PACKAGE SOCKET``.

``-P`` puts neither the working directory nor a script's folder on ``sys.path`` and ``-E``
ignores ``PYTHONPATH`` (whose empty entry means the working directory): a workspace's
``json.py`` or ``judge/`` is never imported. The package itself is loaded from this client's
own folder (the files its digest names), not looked up on the path."""


def spawn(path: Path, idle_s: float = DEFAULT_IDLE_S) -> None:
    """Start a worker for ``path`` in its own session, detached from this terminal.

    Its working directory is the workspace (it parses the workspace's rubrics and templates
    before it forks), which is on no import path (:data:`BOOT`).
    """
    import subprocess  # here: only the command that starts a worker needs it

    with open(os.devnull, "rb") as null_in, open(os.devnull, "wb") as null_out:
        subprocess.Popen(
            [sys.executable, "-E", "-P", "-c", BOOT, str(PACKAGE), str(path)],
            stdin=null_in, stdout=null_out, stderr=null_out, start_new_session=True,
            cwd=str(workspace()), env={**os.environ, "JUDGE_WORKER_IDLE": repr(idle_s)},
        )


def _try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def _connect(path: Path, start: bool) -> socket.socket | None:
    sock = _try_connect(path)
    if sock is not None or not start:
        return sock
    idle = idle_seconds()
    if idle is None:
        return None
    if path.exists():  # a stale socket: nobody listens
        path.unlink(missing_ok=True)
    spawn(path, idle)
    deadline = time.monotonic() + START_WAIT_S
    while sock is None and time.monotonic() < deadline:
        time.sleep(0.02)
        sock = _try_connect(path)
    return sock


def _lines(sock: socket.socket) -> Iterator[bytes]:
    """The worker's answer lines as they come, until the end of the stream.

    Bounded: a line longer than :data:`MAX_ANSWER` is a worker error (ValueError).
    """
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return
        data += chunk
        *lines, data = data.split(b"\n")
        yield from (line for line in lines if line.strip())
        if len(data) > MAX_ANSWER:
            raise ValueError("the worker's answer is not a line of its protocol")


def _answer(lines: Iterator[bytes]) -> dict[str, int]:
    """The first ``exit`` or ``signal`` line, else ``{}`` at the end of the stream.

    The child reports its exit code itself before it ends (the parent says the same once it
    has reaped it): the client goes on at the child's line, without waiting for the
    parent's ``waitpid`` (measured 39-49 ms of a short command).
    """
    for line in lines:
        answer = json.loads(line)
        if isinstance(answer, dict) and ("exit" in answer or "signal" in answer):
            return answer
    return {}


def _trusted(sock: socket.socket, path: Path) -> bool:
    """Whether the worker at ``path`` is this user's; said on stderr when it is not."""
    uid = peer_uid(sock)
    if uid == os.getuid():
        return True
    who = "a process of unknown owner" if uid is None else f"uid {uid}"
    sys.stderr.write(f"judge: the warm worker's socket {path} is held by {who}, not by you: "
                     "nothing was sent to it, the command ran directly\n")
    return False


def _send_head(sock: socket.socket, argv: list[str]) -> bool:
    """Send the command's head with fds 0/1/2; False (nothing sent) when it is too long."""
    head = json.dumps({"digest": digest(), "argv": argv, "cwd": os.getcwd(),
                       "env": dict(os.environ)}).encode() + b"\n"
    if len(head) > MAX_HEAD:
        return False
    sent = socket.send_fds(sock, [head], [0, 1, 2])
    sock.sendall(head[sent:])
    return True


def run(argv: list[str], start: bool = True) -> int | None:
    """Run ``argv`` in the worker; its exit code, or None when the caller must run directly."""
    if getattr(socket, "SO_PEERCRED", None) is None:
        return None  # no peer can be checked here: nothing is sent to any
    try:
        path = socket_path()
        if (problem := _xdg_problem()) is not None:
            sys.stderr.write(f"judge: {problem}: the warm worker uses {path.parent} instead\n")
        sock = _connect(path, start)
        if sock is None:
            return None
        with sock:
            if not _trusted(sock, path):
                return None
            # Ctrl-C or SIGTERM between the fork and the forwarder would end this client and
            # leave the child running: held until the forwarder is in place, then delivered.
            signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
            try:
                if not _send_head(sock, argv):
                    return None
                sock.settimeout(START_WAIT_S)  # a worker that accepts but never answers
                lines = _lines(sock)
                hello = json.loads(next(lines, b"{}"))
                sock.settimeout(None)
                if "pid" not in hello:
                    return None  # stale or refused: no child started; this run goes direct
                child = int(hello["pid"])

                def forward(signum: int, _frame: object) -> None:
                    try:
                        os.kill(child, signum)
                    except OSError:
                        pass
                old = {s: signal.signal(s, forward) for s in FORWARDED}
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
            try:
                last = _answer(lines)
            except (OSError, ValueError):
                last = {}
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # before the child started: nothing ran, the direct run is the run
    # From here on the command has started: whatever happens, it is never run twice.
    if "signal" in last:  # die the way the child died, as a direct run would have
        sig = int(last["signal"])
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL's disposition cannot be set (EINVAL): it is always the default
        os.kill(os.getpid(), sig)
        return 128 + sig
    if "exit" in last:
        return int(last["exit"])
    print("judge: the warm worker was killed while running this command", file=sys.stderr)
    return KILLED


def _control(path: Path, name: str) -> bytes:
    """Send the worker the control message ``name``; its one-line answer.

    OSError when none runs, or when the socket is not this user's worker (nothing sent).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(path))
        if not same_user(sock):
            raise OSError(f"{path} is not this user's worker")
        sock.sendall(b'{"control": "%s"}\n' % name.encode())
        return next(_lines(sock), b"")


def exit_now(code: int) -> None:
    """End this client with ``code`` once its streams are flushed, skipping teardown.

    The command ran in the worker's child: this process holds nothing to finalise (no exit
    hooks, no files of its own), and the interpreter's teardown was a visible part of a
    short command's wall time (measured 25-38 ms).
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def stop(path: Path | None = None) -> bool:
    """Ask the worker to stop; True when one was running."""
    try:
        _control(path or socket_path(), "stop")
    except OSError:
        return False
    return True


def status(path: Path | None = None) -> dict[str, object] | None:
    """The worker's status (pid, digest, idle timeout), or None when none runs."""
    try:
        result: dict[str, object] = json.loads(_control(path or socket_path(), "status"))
    except (OSError, ValueError):
        return None
    return result
