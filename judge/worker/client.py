"""The worker's client: tiny, standard library only, decided before anything heavy is imported.

Protocol (one Unix stream connection per command): the client sends one JSON line
``{"digest", "argv", "cwd", "env"}`` with fds 0/1/2 attached (SCM_RIGHTS); the worker answers
``{"pid": N}`` (the child, for forwarding SIGINT/SIGTERM) or ``{"stale": true}``, then
``{"exit": CODE}`` or ``{"signal": SIG}``. Anything else is a worker error: the client runs the
command directly, as without the worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BOOT", "DEFAULT_IDLE_S", "FILE_IGNORED", "KILLED", "digest", "enabled", "exit_now",
           "file_notice", "file_settings", "idle_seconds", "run", "runtime_dir", "socket_path",
           "spawn", "status", "stop", "workspace"]

PACKAGE = Path(__file__).resolve().parents[1]
START_WAIT_S = 10.0
KILLED = 128 + signal.SIGKILL
FORWARDED = (signal.SIGINT, signal.SIGTERM)
"""The signals the client passes on to the command's child."""
"""The exit code when the worker and the command's child died with no report."""
DEFAULT_IDLE_S = 600.0


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


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR``, else a 0700 folder under the temp dir named for the uid."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg)
    import tempfile  # here: every command pays the client's imports

    path = Path(tempfile.gettempdir()) / f"judge-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise OSError(f"{path} is not a private folder of this user")
    return path


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
    pays it (bench/RESULTS.md, "The warm worker's fixed costs").
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


def _answer(sock: socket.socket) -> dict[str, int]:
    """The first ``exit`` or ``signal`` line, else ``{}`` at the end of the stream.

    The child reports its exit code itself before it ends (the parent says the same once it
    has reaped it): the client goes on at the child's line, without waiting for the
    parent's ``waitpid`` (bench/RESULTS.md, "The warm worker's fixed costs").
    """
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return {}
        data += chunk
        *lines, data = data.split(b"\n")
        for line in lines:
            if line.strip():
                answer: dict[str, int] = json.loads(line)
                if "exit" in answer or "signal" in answer:
                    return answer


def run(argv: list[str], start: bool = True) -> int | None:
    """Run ``argv`` in the worker; its exit code, or None when the caller must run directly."""
    try:
        path = socket_path()
        sock = _connect(path, start)
        if sock is None:
            return None
        with sock:
            head = {"digest": digest(), "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
            # Ctrl-C or SIGTERM between the fork and the forwarder would end this client and
            # leave the child running: held until the forwarder is in place, then delivered.
            signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
            try:
                socket.send_fds(sock, [json.dumps(head).encode() + b"\n"], [0, 1, 2])
                sock.settimeout(START_WAIT_S)  # a worker that accepts but never answers
                first = b""
                while not first.endswith(b"\n"):
                    chunk = sock.recv(1)
                    if not chunk:
                        return None
                    first += chunk
                sock.settimeout(None)
                hello = json.loads(first)
                if "pid" not in hello:
                    return None  # stale: the worker restarts itself; this run goes direct
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
                last = _answer(sock)
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
    """Send the worker the control message ``name``; its one-line answer (OSError: none runs)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(path))
        sock.sendall(b'{"control": "%s"}\n' % name.encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


def exit_now(code: int) -> None:
    """End this client with ``code`` once its streams are flushed, skipping teardown.

    The command ran in the worker's child: this process holds nothing to finalise (no exit
    hooks, no files of its own), and the interpreter's teardown was a visible part of a
    short command's wall time (bench/RESULTS.md, "The warm worker's fixed costs").
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def stop(path: Path | None = None) -> bool:
    """Ask the worker to stop; True when one was running."""
    path = path or socket_path()
    try:
        _control(path, "stop")
    except OSError:
        return False
    return True


def status(path: Path | None = None) -> dict[str, object] | None:
    """The worker's status (pid, digest, idle timeout), or None when none runs."""
    path = path or socket_path()
    try:
        result: dict[str, object] = json.loads(_control(path, "status"))
    except (OSError, ValueError):
        return None
    return result
