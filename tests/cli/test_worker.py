"""The warm worker (issue 32, item 1): the same bytes and exit codes as a direct run, a private
socket, signals forwarded, fallback on any worker error, restart on a changed installation,
an idle timeout. Every worker a test starts lives in its own short runtime dir under /tmp and is
stopped (and, if need be, killed) at the test's end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.app.settings import Settings, load_settings
from judge.core.errors import UsageError
from judge.worker import client

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def _env(runtime: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "JUDGE_NO_WORKER")}
    env.update(XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(ROOT), **extra)
    return env


def _judge(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=ROOT, env=env,
                          capture_output=True, timeout=TIMEOUT, check=False)


def _status(env: dict[str, str]) -> dict[str, object] | None:
    out = _judge(["worker", "status"], env).stdout.decode().strip()
    return None if out == "no worker running" else dict(json.loads(out))


def _wait(predicate: object, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def runtime() -> Iterator[Path]:
    # Not under tmp_path: a Unix socket's path has at most 107 bytes, and xdist's tmp_path
    # (/tmp/pytest-of-USER/pytest-N/popen-gwK/test_…) can pass that with the socket's name.
    folder = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
    yield folder
    try:
        _cleanup(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cleanup(folder: Path) -> None:
    _judge(["worker", "stop"], _env(folder))
    for pid in _workers(folder):  # whatever is left (a worker still starting): stopped hard
        if not _wait(lambda p=pid: not _alive(p), 10):
            os.kill(pid, signal.SIGKILL)


def _workers(folder: Path) -> list[int]:
    """The worker processes whose socket is in ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"judge.worker.server" in cmd and any(str(folder).encode() in c for c in cmd):
            found.append(int(proc.name))
    return found


def _started(env: dict[str, str]) -> dict[str, object]:
    """Run a command through the worker and wait until the worker answers its status."""
    assert _judge(["--version"], env).returncode == 0
    assert _wait(lambda: _status(env) is not None, 60)
    found = _status(env)
    assert found is not None
    return found


RUBRICS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "rubrics").glob("*.yaml"))
COMMANDS = [
    ["--version"],
    ["rubric", "validate", *RUBRICS],
    ["score", "examples/score.json"],
    ["rubric", "validate", "no-such-rubric.yaml"],
]


def test_worker_gives_the_same_bytes_and_exit_codes(runtime: Path) -> None:
    direct_env = _env(runtime, JUDGE_NO_WORKER="1")
    worker_env = _env(runtime, JUDGE_WORKER="1")
    pid = _started(worker_env)["pid"]
    codes = []
    for args in COMMANDS:
        direct = _judge(args, direct_env)
        warm = _judge(args, worker_env)
        assert (warm.stdout, warm.stderr, warm.returncode) == (
            direct.stdout, direct.stderr, direct.returncode), args
        codes.append(direct.returncode)
    assert codes[-1] == 2 and codes[0] == 0
    found = _status(worker_env)
    assert found is not None and found["pid"] == pid  # one worker served them all
    mode = stat.S_IMODE(os.stat(runtime / next(p.name for p in runtime.iterdir())).st_mode)
    assert mode == 0o600


def test_ci_and_no_worker_switch_it_off(tmp_path: Path) -> None:
    assert not client.enabled({}, str(tmp_path))
    assert client.enabled({"JUDGE_WORKER": "1"}, str(tmp_path))
    assert not client.enabled({"JUDGE_WORKER": "1", "CI": "true"}, str(tmp_path))
    assert not client.enabled({"JUDGE_WORKER": "1", "JUDGE_NO_WORKER": "1"}, str(tmp_path))


def test_the_worker_setting_and_its_precedence(tmp_path: Path) -> None:
    """judge.toml's ``worker`` turns it on; JUDGE_WORKER overrides the file; CI and
    JUDGE_NO_WORKER win over both; pyproject's [tool.judge] counts only without judge.toml."""
    ws = str(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.judge]\nworker = true\n")
    assert client.enabled({}, ws)
    (tmp_path / "judge.toml").write_text("worker = false\n")  # judge.toml first, as the loader
    assert not client.enabled({}, ws)
    (tmp_path / "judge.toml").write_text("worker = true\nworker_idle = 30\n")
    assert client.enabled({}, ws)
    assert client.idle_seconds({}, ws) == 30
    assert client.idle_seconds({"JUDGE_WORKER_IDLE": "7"}, ws) == 7
    assert not client.enabled({"JUDGE_WORKER": "0"}, ws)
    assert not client.enabled({"CI": "1"}, ws)
    assert not client.enabled({"JUDGE_WORKER": "1", "JUDGE_NO_WORKER": "yes"}, ws)
    settings, sources = load_settings(tmp_path, None, {})
    assert (settings.worker, settings.worker_idle, sources["worker"]) == (True, 30, "judge.toml")
    (tmp_path / "judge.toml").write_text("worker = [true\n")  # malformed: off, direct names it
    assert not client.enabled({}, ws)
    with pytest.raises(UsageError, match="invalid TOML"):
        load_settings(tmp_path, None, {})


@pytest.mark.parametrize("value", ["1", "0", "true", "FALSE", "yes", "no", "on", "off", "t",
                                   "n", "2", "maybe", " true", "worker"])
def test_the_client_reads_a_bool_as_the_settings_loader_does(tmp_path: Path,
                                                              value: str) -> None:
    """Env and file: the client's verdict is the loader's; what the loader refuses is off."""
    try:
        loaded: bool | None = load_settings(tmp_path, None, {"JUDGE_WORKER": value})[0].worker
    except UsageError:
        loaded = None
    assert client.enabled({"JUDGE_WORKER": value}, str(tmp_path)) is (loaded is True)
    (tmp_path / "judge.toml").write_text(f"worker = {json.dumps(value)}\n")
    try:
        loaded = load_settings(tmp_path, None, {})[0].worker
    except UsageError:
        loaded = None
    assert client.enabled({}, str(tmp_path)) is (loaded is True)


@pytest.mark.parametrize("value", ["30", "0", "-1", "abc", "86401", "1e3"])
def test_the_idle_timeout_is_checked_as_the_loader_does(tmp_path: Path, value: str) -> None:
    try:
        loaded: float | None = load_settings(tmp_path, None,
                                             {"JUDGE_WORKER_IDLE": value})[0].worker_idle
    except UsageError:
        loaded = None
    assert client.idle_seconds({"JUDGE_WORKER_IDLE": value}, str(tmp_path)) == loaded
    assert client.DEFAULT_IDLE_S == Settings.model_fields["worker_idle"].default


def test_sigterm_to_the_client_ends_the_child(runtime: Path) -> None:
    env = _env(runtime, JUDGE_WORKER="1")
    found = _started(env)
    worker = int(str(found["pid"]))
    proc = subprocess.Popen([sys.executable, "-m", "judge", "serve", "--port", "0"], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def children() -> list[int]:
            found = []  # the fork happens in a thread: every task's children
            for task in Path(f"/proc/{worker}/task").glob("*/children"):
                try:
                    found += [int(p) for p in task.read_text().split()]
                except OSError:
                    continue
            return found
        assert _wait(lambda: bool(children()), 30)
        child = children()[0]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert _wait(lambda: not _alive(child) or child not in children(), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_stale_socket_or_a_broken_worker_falls_back(runtime: Path) -> None:
    direct = _judge(["--version"], _env(runtime, JUDGE_NO_WORKER="1"))
    # a broken worker: it listens and answers nonsense
    path = Path(str(runtime)) / "x"
    env = _env(runtime, JUDGE_WORKER="1")
    sock_path = Path(subprocess.run(
        [sys.executable, "-c", "from judge.worker import client; print(client.socket_path())"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=True,
    ).stdout.strip())
    del path
    bad = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bad.bind(str(sock_path))
    bad.listen(1)
    proc = subprocess.Popen([sys.executable, "-m", "judge", "--version"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    conn, _ = bad.accept()
    conn.recv(1 << 16)
    conn.sendall(b"not json\n")
    conn.close()
    out, err = proc.communicate(timeout=TIMEOUT)
    assert (out, err, proc.returncode) == (direct.stdout, direct.stderr, direct.returncode)
    bad.close()  # now a stale socket file: nobody listens
    assert sock_path.exists()
    stale = _judge(["--version"], env)
    assert (stale.stdout, stale.returncode) == (direct.stdout, direct.returncode)


def test_a_changed_digest_restarts_the_worker(runtime: Path) -> None:
    before = client.digest()
    target = ROOT / "judge" / "worker" / "__init__.py"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    try:
        assert client.digest() != before
    finally:
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert client.digest() == before
    env = _env(runtime, JUDGE_WORKER="1")
    first = _started(env)
    sock_path = Path(runtime) / next(p.name for p in runtime.iterdir())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a client of other code
        sock.settimeout(TIMEOUT)
        sock.connect(str(sock_path))
        socket.send_fds(sock, [json.dumps({"digest": "other", "argv": ["judge"], "cwd": "/",
                                           "env": {}}).encode() + b"\n"], [0, 1, 2])
        assert json.loads(sock.recv(100)) == {"stale": True}
    assert _wait(lambda: not _alive(int(str(first["pid"]))), 15)
    second = _started(env)
    assert second["pid"] != first["pid"]


def test_the_idle_timeout_ends_the_worker(runtime: Path) -> None:
    env = _env(runtime, JUDGE_WORKER="1", JUDGE_WORKER_IDLE="3")
    worker = int(str(_started(env)["pid"]))
    assert _wait(lambda: not _alive(worker), 30)
    assert not any(runtime.iterdir())
    assert _status(env) is None
