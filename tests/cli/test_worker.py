"""The warm worker: the same bytes and exit codes as a direct run, a private
socket, signals forwarded, fallback on any worker error, restart on a changed installation,
an idle timeout.

A worker's start imports the application and LiteLLM (seconds of CPU), so the tests share one
per module (``shared``: one workspace and runtime dir, emptied before each test) unless their
subject is a start of their own: the idle timeout starts its own worker; a stale socket, a
changed digest and a killed worker each end the shared worker and the new one they start for
real is the next tests' shared worker. Every worker is stopped (and, if need be, killed) at the
end of the test or module that started it, each in its own short runtime dir under /tmp.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge
from forked import ForkedJudge, spawn_judge

from judge.app.workspace.settings import Settings, load_settings
from judge.app.workspace.workspace import Workspace
from judge.core.text.errors import UsageError
from judge.worker import client

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def _env(runtime: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "JUDGE_NO_WORKER")}
    env.update(XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(ROOT), **extra)
    return env


def _judge(args: list[str], env: dict[str, str],
           cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=TIMEOUT, check=False)


def _status(env: dict[str, str], cwd: Path = ROOT) -> dict[str, object] | None:
    """``judge workspace worker status``, as the command prints it."""
    out = _judge(["workspace", "worker", "status"], env, cwd).stdout.decode().strip()
    return None if out == "no worker running" else dict(json.loads(out))


def _wait(predicate: object, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    """The process runs (a zombie nobody reaps does not: it runs nothing)."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A runtime dir of the test's own, this process's too (it asks the worker's status)."""
    # Not under tmp_path: a Unix socket's path has at most 107 bytes, and xdist's tmp_path
    # (/tmp/pytest-of-USER/pytest-N/popen-gwK/test_…) can pass that with the socket's name.
    folder = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    try:
        _cleanup(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cleanup(folder: Path) -> None:
    """Stop every worker whose socket is in ``folder`` (whatever its workspace)."""
    for sock in folder.glob("judge-worker-*.sock"):
        client.stop(sock)
    for pid in _workers(folder):  # whatever is left (a worker still starting): stopped hard
        if not _wait(lambda p=pid: not _alive(p), 10):
            os.kill(pid, signal.SIGKILL)


def _workers(folder: Path) -> list[int]:
    """The worker processes (and their commands' children) whose socket is in ``folder``.

    The worker starts as ``python -c BOOT``: its module's name is inside an argument.
    """
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (any(b"judge.worker.server" in c for c in cmd)
                and any(str(folder).encode() in c for c in cmd)):
            found.append(int(proc.name))
    return found


def _started(env: dict[str, str], cwd: Path = ROOT) -> dict[str, object]:
    """Run a command through the worker and wait until the worker answers its status.

    Asked in this process (the runtime dir is this process's too): a ``workspace worker status``
    per poll was a process start each, while the worker imports.
    """
    assert _judge(["--version"], env, cwd).returncode == 0
    path = client.socket_path(str(cwd))
    assert _wait(lambda: client.status(path) is not None, 90)
    found = client.status(path)
    assert found is not None
    return found


@dataclass(frozen=True)
class Home:
    """The module's shared worker: its runtime dir, its workspace, a direct run's twin folder.

    ``direct`` and ``workspace`` have paths of one length: a direct run there and a worker's
    run in the workspace print paths that wrap and pad alike.
    """

    runtime: Path
    workspace: Path
    direct: Path

    @property
    def socket(self) -> Path:
        """The shared worker's socket (this process's runtime dir is ``runtime``)."""
        return client.socket_path(str(self.workspace))

    def env(self, **extra: str) -> dict[str, str]:
        """A ``judge`` command's environment in this home, the worker on: the tests' judge_env."""
        env = {k: v for k, v in judge_env().items() if k != "CI"}
        env.update(XDG_RUNTIME_DIR=str(self.runtime), PYTHONPATH=str(ROOT), JUDGE_WORKER="1",
                   **extra)
        return env


@pytest.fixture(scope="module")
def home_dirs() -> Iterator[Home]:
    base = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))  # /tmp: see ``runtime``
    home = Home(base / "run", base / "worker", base / "direct")
    home.runtime.mkdir(mode=0o700)
    home.workspace.mkdir()
    try:
        yield home
    finally:
        try:
            _cleanup(home.runtime)
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@pytest.fixture
def home(home_dirs: Home, monkeypatch: pytest.MonkeyPatch) -> Home:
    """The shared home, its workspace emptied (its worker may run, or not).

    What a test leaves there (a store, a cache, settings) is gone, as it was in a workspace
    of the test's own; the worker's parent reads none of it after its start.
    """
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(home_dirs.runtime))
    _empty(home_dirs.workspace)
    shutil.rmtree(home_dirs.direct, ignore_errors=True)
    return home_dirs


def _stopped(home: Home) -> None:
    """No worker in ``home``: the running one stopped, one still starting killed."""
    if client.stop(home.socket):
        assert _wait(lambda: not home.socket.exists(), 15)
    for pid in _workers(home.runtime):
        os.kill(pid, signal.SIGKILL)
        assert _wait(lambda p=pid: not _alive(p), 15)
    home.socket.unlink(missing_ok=True)


@pytest.fixture
def shared(home: Home) -> Home:
    """The shared home with its worker up: started here when none runs or is starting."""
    if client.status(home.socket) is None:
        if _workers(home.runtime):  # one starting (a client gave up waiting): wait for it
            _wait(lambda: client.status(home.socket) is not None, 90)
        if client.status(home.socket) is None:
            _started(home.env(), home.workspace)
    return home


RUBRICS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "rubrics").glob("*.yaml"))
COMMANDS = [
    ["--version"],
    ["rubric", "validate", *RUBRICS],
    ["rubric", "score", "examples/score.json"],
    # a file name that is not UTF-8: printed as a direct run's interpreter prints it
    ["rubric", "validate", os.fsdecode(b"bad\xff.yaml")],
    ["rubric", "validate", "no-such-rubric.yaml"],
]


def test_a_stale_socket_or_a_broken_worker_falls_back(home: Home) -> None:
    """A broken worker, then a stale socket: each command runs, its bytes a direct run's. The
    stale socket's command starts a new worker (the next tests' shared one)."""
    ws = home.workspace
    _stopped(home)  # the shared worker, if it runs: its socket is this test's
    direct = _judge(["--version"], _env(home.runtime, JUDGE_NO_WORKER="1"), ws)
    env = _env(home.runtime, JUDGE_WORKER="1")
    sock_path = home.socket
    # a broken worker: it listens and answers nonsense
    bad = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bad.bind(str(sock_path))
    bad.listen(1)
    proc = subprocess.Popen([sys.executable, "-m", "judge", "--version"], cwd=ws, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    conn, _ = bad.accept()
    conn.recv(1 << 16)
    conn.sendall(b"not json\n")
    conn.close()
    out, err = proc.communicate(timeout=TIMEOUT)
    assert (out, err, proc.returncode) == (direct.stdout, direct.stderr, direct.returncode)
    bad.close()  # now a stale socket file: nobody listens
    assert sock_path.exists()
    stale = _judge(["--version"], env, ws)
    assert (stale.stdout, stale.returncode) == (direct.stdout, direct.returncode)


def test_worker_gives_the_same_bytes_and_exit_codes(shared: Home) -> None:
    ws = shared.workspace
    for name in ("rubrics", "examples"):  # what the commands read, as in the repository
        (ws / name).symlink_to(ROOT / name)
    direct_env = _env(shared.runtime, JUDGE_NO_WORKER="1")
    worker_env = _env(shared.runtime, JUDGE_WORKER="1")
    before = client.status(shared.socket)
    assert before is not None
    codes = []
    for args in COMMANDS:
        direct = _judge(args, direct_env, ws)
        warm = _judge(args, worker_env, ws)
        assert (warm.stdout, warm.stderr, warm.returncode) == (
            direct.stdout, direct.stderr, direct.returncode), args
        codes.append(direct.returncode)
    assert codes[-1] == 2 and codes[0] == 0
    found = _status(worker_env, ws)
    assert found is not None and found["pid"] == before["pid"]  # one worker served them all
    assert int(str(found["served"])) - int(str(before["served"])) == len(COMMANDS)
    assert stat.S_IMODE(os.stat(shared.socket).st_mode) == 0o600


def test_ci_and_no_worker_switch_it_off() -> None:
    assert not client.enabled({})
    assert client.enabled({"JUDGE_WORKER": "1"})
    assert not client.enabled({"JUDGE_WORKER": "1", "CI": "true"})
    assert not client.enabled({"JUDGE_WORKER": "1", "JUDGE_NO_WORKER": "1"})


def test_a_workspace_file_cannot_turn_the_worker_on(tmp_path: Path) -> None:
    """A cloned repository's judge.toml or [tool.judge] saying ``worker = true`` starts
    nothing: only the environment does. The file's line gets a notice naming the fix, and
    ``judge workspace config`` says the value is ignored."""
    ws = str(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.judge]\nworker = true\n")
    assert not client.enabled({})
    assert "pyproject.toml [tool.judge]" in str(client.file_notice({}, ws))
    (tmp_path / "judge.toml").write_text("worker = true\nworker_idle = 30\n")
    notice = client.file_notice({}, ws)
    assert notice is not None and "judge.toml is ignored" in notice and "JUDGE_WORKER=1" in notice
    assert client.file_notice({"JUDGE_WORKER": "0"}, ws) is None  # the environment decided
    assert client.file_notice({"CI": "1"}, ws) is None
    assert client.idle_seconds({}, ws) == 30  # how long it idles is harmless: still read
    assert client.idle_seconds({"JUDGE_WORKER_IDLE": "7"}, ws) == 7
    settings, sources = load_settings(tmp_path, None, {})
    assert settings.worker is False and "ignored" in sources["worker"]
    settings, sources = load_settings(tmp_path, None, {"JUDGE_WORKER": "1"})
    assert (settings.worker, sources["worker"]) == (True, "env JUDGE_WORKER")
    (tmp_path / "judge.toml").write_text("worker_idle = 30\n")
    assert client.file_notice({}, ws) is None
    # the notice, as a direct run prints it: one line on stderr, the command unchanged
    (tmp_path / "judge.toml").write_text("worker = true\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "JUDGE_NO_WORKER", "JUDGE_WORKER")}
    done = _judge(["--version"], env, tmp_path)
    assert done.returncode == 0 and done.stderr.decode().count("\n") == 1
    assert "is ignored" in done.stderr.decode()


SHADOWS = ("json", "socket", "signal", "typing", "pathlib", "enum", "os", "sitecustomize",
           "usercustomize", "pydantic", "typer", "litellm", "yaml", "diskcache")
"""Modules a workspace could plant under the names the worker's start imports."""


def test_a_workspace_module_never_runs_in_the_worker(runtime: Path) -> None:
    """A repository planting ``json.py``, ``sitecustomize.py``, a ``judge/`` package … beside its
    judge.toml runs none of them: not through the worker (on from the environment), not in a
    direct run. The worker did serve the commands (its count says so)."""
    ws = runtime / "ws"
    ws.mkdir()
    marker = runtime / "ran"
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in SHADOWS:
        (ws / f"{name}.py").write_text(plant)
    (ws / "judge").mkdir()
    (ws / "judge" / "__init__.py").write_text(plant)
    (ws / "judge.toml").write_text("worker = true\n")
    script = str(Path(sys.executable).parent / "judge")
    env = _env(runtime, JUDGE_WORKER="1")
    env.pop("PYTHONPATH")
    commands = [["--version"],
                ["rubric", "validate", str(ROOT / "rubrics" / "task-evaluation.yaml")]]
    for args in commands:
        done = subprocess.run([script, *args], cwd=ws, env=env, capture_output=True,
                              timeout=TIMEOUT, check=False)
        assert done.returncode == 0, done.stderr
    path = client.socket_path(str(ws))
    assert _wait(lambda: client.status(path) is not None, 90)
    for args in commands:  # now surely through the worker
        done = subprocess.run([script, *args], cwd=ws, env=env, capture_output=True,
                              timeout=TIMEOUT, check=False)
        assert done.returncode == 0, done.stderr
    found = client.status(path)
    assert found is not None and int(str(found["served"])) >= len(commands)
    direct = subprocess.run([script, "--version"], cwd=ws, env={**env, "JUDGE_NO_WORKER": "1"},
                            capture_output=True, timeout=TIMEOUT, check=False)
    assert direct.returncode == 0
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("value", ["1", "0", "true", "FALSE", "yes", "no", "on", "off", "t",
                                   "n", "2", "maybe", " true", "worker"])
def test_the_client_reads_a_bool_as_the_settings_loader_does(tmp_path: Path,
                                                              value: str) -> None:
    """The client's verdict on JUDGE_WORKER is the loader's; what the loader refuses is off."""
    try:
        loaded: bool | None = load_settings(tmp_path, None, {"JUDGE_WORKER": value})[0].worker
    except UsageError:
        loaded = None
    assert client.enabled({"JUDGE_WORKER": value}) is (loaded is True)


@pytest.mark.parametrize("value", ["30", "0", "-1", "abc", "86401", "1e3"])
def test_the_idle_timeout_is_checked_as_the_loader_does(tmp_path: Path, value: str) -> None:
    try:
        loaded: float | None = load_settings(tmp_path, None,
                                             {"JUDGE_WORKER_IDLE": value})[0].worker_idle
    except UsageError:
        loaded = None
    assert client.idle_seconds({"JUDGE_WORKER_IDLE": value}, str(tmp_path)) == loaded
    assert client.DEFAULT_IDLE_S == Settings.model_fields["worker_idle"].default


def test_sigterm_to_the_client_ends_the_child(shared: Home) -> None:
    """SIGTERM to a client forwards it: the command's child ends, the client dies by it too."""
    env = _env(shared.runtime, JUDGE_WORKER="1")
    found = client.status(shared.socket)
    assert found is not None
    worker = int(str(found["pid"]))
    earlier = set(_children_of(worker))  # an earlier command's child, not yet reaped

    def children() -> list[int]:
        return [c for c in _children_of(worker) if c not in earlier]
    proc = subprocess.Popen([sys.executable, "-m", "judge", "workspace", "serve", "--port", "0"],
                            cwd=shared.workspace,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait(lambda: bool(children()), 30)
        child = children()[0]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert _wait(lambda: not _alive(child) or child not in children(), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_changed_digest_restarts_the_worker(shared: Home) -> None:
    """A client of other code stops the worker; the next command starts a fresh one (for
    real: it is the next tests' shared worker)."""
    before = client.digest()
    target = ROOT / "judge" / "worker" / "__init__.py"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    try:
        assert client.digest() != before
    finally:
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert client.digest() == before
    env = _env(shared.runtime, JUDGE_WORKER="1")
    first = client.status(shared.socket)
    assert first is not None
    sock_path = shared.socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a client of other code
        sock.settimeout(TIMEOUT)
        sock.connect(str(sock_path))
        socket.send_fds(sock, [json.dumps({"digest": "other", "argv": ["judge"], "cwd": "/",
                                           "env": {}}).encode() + b"\n"], [0, 1, 2])
        assert json.loads(sock.recv(100)) == {"stale": True}
    assert _wait(lambda: not _alive(int(str(first["pid"]))), 15)
    second = _started(env, shared.workspace)
    assert second["pid"] != first["pid"]


def test_the_idle_timeout_ends_the_worker(runtime: Path) -> None:
    env = _env(runtime, JUDGE_WORKER="1", JUDGE_WORKER_IDLE="3")
    worker = int(str(_started(env)["pid"]))
    assert _wait(lambda: not _alive(worker), 30)
    assert not any(runtime.iterdir())
    assert _status(env) is None


# -- equivalence on the loopback fake judge -------------------------------------------------

MODEL = "hosted_vllm/fake-judge"
RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                      r"(?:Z|[+-]\d{2}:\d{2})?")
SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")
PROGRESS = re.compile(r"^judged \d+/\d+ · .*\n", re.MULTILINE)
LEGITIMATE = ("run ids (a timestamp and a random tag), timestamps, wall and call durations, "
              "the process id a run records, a cache entry's digest (it covers its createdAt), "
              "the workspace's own path, and stderr's progress lines (one every 5 s: how "
              "many a run prints depends on how long it takes, the worker's point)")
"""What two direct runs in two workspaces differ by too; everything else must be the same."""
TIMED = re.compile(r'"(createdAt|finishedAt|startedAt|wallSeconds|latencyMs|elapsedMs|seconds|'
                   r'pid)": (?:"[^"]*"|[-+.\deE]+|null)')
"""JSON keys whose values are durations, moments or a process id."""


def _normal(text: str, root: Path) -> str:
    """``text`` with the legitimately different parts replaced, run ids by order of use."""
    ids: dict[str, str] = {}
    text = text.replace(str(root), "WORKSPACE")
    text = RUN_ID.sub(lambda m: ids.setdefault(m.group(), f"RUN{len(ids) + 1}"), text)
    text = re.sub(r"\b\d{8}T\d{6}\b", "STAMP", text)  # a run id's time, shown alone
    text = TIMED.sub(lambda m: f'"{m.group(1)}": T', text)
    return PROGRESS.sub("", SECONDS.sub("Ns", ISO_TIME.sub("TIME", text)))


def _made(run: Any) -> tuple[str, str]:
    """A run's place in the order they were made: its createdAt (microseconds), then id.

    Not the id alone: two runs that start within one second share the id's timestamp and
    are ordered by its random tag.
    """
    return (run.created_at, run.id)


def _rows(root: Path) -> list[str]:
    """Every stored run and case result, oldest first, less the legitimately different."""
    with Workspace.open(root, env={}).open_store() as store:
        runs = sorted(store.list_runs(limit=None), key=_made)
        rows: list[Any] = []
        for run in runs:
            rows.append(run.model_dump(mode="json"))
            rows += [r.model_dump(mode="json") for r in store.iter_results(run.id)]
    return _normal(json.dumps(rows, indent=1, sort_keys=True), root).splitlines()


def _entries(export: Path) -> list[str]:
    """A cache export's entries, each without its digest (it covers the entry's createdAt)."""
    lines = []
    for line in export.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        entry.pop("digest")
        lines.append(_normal(json.dumps(entry, indent=1, sort_keys=True), export.parent))
    return lines


def _delta(seen: dict[str, tuple[str, str, int]]) -> str:
    """Where the two sides differ, as a unified diff (the assertion's message)."""
    return "\n".join(difflib.unified_diff(
        "\n".join(map(str, seen["direct"])).splitlines(),
        "\n".join(map(str, seen["worker"])).splitlines(), "direct", "worker", lineterm=""))


def _run_ids(root: Path) -> list[str]:
    with Workspace.open(root, env={}).open_store() as store:
        return [r.id for r in sorted(store.list_runs(limit=None), key=_made)]


def test_a_set_of_commands_gives_the_same_everything_both_ways(
        shared: Home, fake_server: Any) -> None:
    """stdout and stderr bytes, exit codes, the report's and the cache export's bytes, the
    store's rows: identical with and without the worker, but for ``LEGITIMATE``.

    The direct side is ``python -m judge``, a fresh interpreter per command, not a fork of this
    (warmed) process: what the worker moves out of the command's process is the imports and
    what they do (LiteLLM's set-up, a message on stderr, settings read at import, the streams
    the interpreter opens), and only a cold process still does all of that where a user's does.
    """
    roots = {"direct": shared.direct, "worker": shared.workspace}
    env = shared.env()
    envs = {"direct": {**env, "JUDGE_NO_WORKER": "1"}, "worker": dict(env)}
    for root in roots.values():
        root.mkdir(exist_ok=True)
        shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
        (root / "judge.toml").write_text(f'model = "{MODEL}"\n'
                                         f'api_base = "{fake_server.base_url}/v1"\n')
        (root / "rubrics").mkdir()
        shutil.copy(ROOT / "rubrics" / "task-evaluation.yaml", root / "rubrics" / "heavy.yaml")
        heavy = root / "rubrics" / "heavy.yaml"
        heavy.write_text(heavy.read_text().replace("id: task-evaluation", "id: heavy", 1)
                         .replace("weight: 0.45", "weight: 0.55", 1)
                         .replace("weight: 0.25", "weight: 0.15", 1))

    worker_socket = shared.socket
    before = client.status(worker_socket)
    assert before is not None
    issued: list[list[str]] = []

    def both(args: list[str]) -> dict[str, subprocess.CompletedProcess[bytes]]:
        issued.append(args)
        done = {}
        for name, root in roots.items():
            done[name] = subprocess.run([sys.executable, "-m", "judge", *args], cwd=root,
                                        env=envs[name], capture_output=True, timeout=TIMEOUT,
                                        check=False)
        return done

    def same(args: list[str]) -> int:
        done = both(args)
        seen = {name: (_normal(p.stdout.decode(), roots[name]),
                       _normal(p.stderr.decode(), roots[name]), p.returncode)
                for name, p in done.items()}
        assert seen["worker"] == seen["direct"], (args, _delta(seen))
        return done["direct"].returncode

    assert same(["run", "suite.yaml"]) == 0  # cold: every LLM case asks the fake judge
    assert same(["run", "suite.yaml", "--json"]) == 0  # warm: all from the cache
    ids = {name: _run_ids(root) for name, root in roots.items()}
    assert len(ids["direct"]) == len(ids["worker"]) == 2
    first, second = (ids["direct"][0], ids["worker"][0]), (ids["direct"][1], ids["worker"][1])

    def per_side(make: Callable[[str], list[str]]) -> int:
        """A command naming a run: each side its own id (the ids differ legitimately)."""
        issued.append(make("direct"))
        done = {name: subprocess.run([sys.executable, "-m", "judge", *make(name)],
                                     cwd=roots[name], env=envs[name], capture_output=True,
                                     timeout=TIMEOUT, check=False) for name in roots}
        seen = {name: (_normal(p.stdout.decode(), roots[name]),
                       _normal(p.stderr.decode(), roots[name]), p.returncode)
                for name, p in done.items()}
        assert seen["worker"] == seen["direct"], (make("direct"), _delta(seen))
        return done["direct"].returncode

    side = {"direct": 0, "worker": 1}
    assert per_side(lambda n: ["rescore", first[side[n]], "--rubric", "heavy"]) == 0
    assert per_side(lambda n: ["diff", first[side[n]], second[side[n]]]) == 0
    assert per_side(lambda n: ["runs", "show", second[side[n]]]) == 0
    assert per_side(lambda n: ["report", second[side[n]], "--against", first[side[n]],
                               "-o", "report.html"]) == 0
    assert same(["history"]) == 0
    # The latest run is the rescore under another rubric: not compared, on both sides.
    assert same(["check"]) == 5
    assert same(["cache", "export", "cache.jsonl"]) == 0
    assert same(["run", "suite.yaml", "--offline", "--json"]) == 0
    assert same(["run", "no-such-suite.yaml"]) == 2
    assert same(["rubric", "validate", "rubrics/heavy.yaml"]) == 0

    reports = {name: _normal((root / "report.html").read_text(encoding="utf-8"), root)
               for name, root in roots.items()}
    assert reports["worker"] == reports["direct"], _delta(
        {n: (r, "", 0) for n, r in reports.items()})
    entries = {name: _entries(root / "cache.jsonl") for name, root in roots.items()}
    assert entries["worker"] == entries["direct"]
    assert len(entries["direct"]) >= 12  # one entry per LLM case
    assert _rows(roots["worker"]) == _rows(roots["direct"])
    served = client.status(worker_socket)
    assert served is not None and served["pid"] == before["pid"]  # one worker ran them all
    assert int(str(served["served"])) - int(str(before["served"])) == len(issued) == 12
    assert client.status(client.socket_path(str(roots["direct"]))) is None
    assert fake_server.stats()["requests"] == 2 * len(entries["direct"])


# -- what the warm parent holds ----------------------------------------------------------

WARM_PROBE = """
import json, sys
from judge.cli import main, warm
warm()
before = set(sys.modules)
try:
    main(["run", "suite.yaml", "--no-check"])
except SystemExit as exc:
    code = exc.code
with open("probe.json", "w", encoding="utf-8") as fp:
    json.dump({"code": code, "new": sorted(set(sys.modules) - before)}, fp)
"""
WARMED = ("litellm", "tiktoken", "tiktoken_ext", "diskcache", "typer", "pydantic", "jinja2",
          "sqlalchemy", "yaml", "judge")
"""Packages whose modules a child must find imported: litellm's first call, the cache, the
commands' parsing, the store, the templates, our own."""


def test_a_warm_child_imports_nothing_for_a_cold_run(fake_server: Any, tmp_path: Path) -> None:
    """After judge.cli.warm(), a cold run (no cache, no store) imports none of ``WARMED``'s
    modules: litellm's lazy first-call imports (FIRST_CALL_MODULES) have not moved."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    (root / "judge.toml").write_text(f'model = "{MODEL}"\n'
                                     f'api_base = "{fake_server.base_url}/v1"\n')
    env = {k: v for k, v in judge_env().items() if k != "CI"}
    done = subprocess.run([sys.executable, "-c", WARM_PROBE], cwd=root,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          timeout=TIMEOUT * 3, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    probe = json.loads((root / "probe.json").read_text(encoding="utf-8"))
    assert probe["code"] == 0
    assert fake_server.stats()["requests"] >= LLM_CASES  # it was cold: every LLM case asked
    late = [m for m in probe["new"] if m.split(".")[0] in WARMED]
    assert late == [], late


# -- signals on a run in flight: what was judged is kept, both ways ------------------------

LLM_CASES = 14  # the example suite's LLM cases (the other two are deterministic)


def _slow_workspace(root: Path, base_url: str) -> None:
    root.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE_SUITE, root / "suite.yaml")
    (root / "judge.toml").write_text(f'model = "{MODEL}"\napi_base = "{base_url}/v1"\n'
                                     "concurrency = 2\n")


def _cached(root: Path) -> int:
    done = run_judge(["cache", "export", "entries.jsonl"], root)
    assert done.returncode == 0, done.stderr
    return len((root / "entries.jsonl").read_text(encoding="utf-8").splitlines())


def _stored(root: Path) -> list[tuple[str, int]]:
    with Workspace.open(root, env={}).open_store() as store:
        return [(r.status, store.result_count(r.id)) for r in store.list_runs(limit=None)]


def _direct(env: dict[str, str]) -> bool:
    return env.get("JUDGE_NO_WORKER") == "1"


def _start_run(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes] | ForkedJudge:
    """The run to be signalled: the worker's client as ``python -m judge`` (what is tested is
    its forwarding), the direct command as a process forked from this one (its own pid,
    signals and exit status, without paying LiteLLM's import again: ``forked``)."""
    if _direct(env):
        return spawn_judge(["run", "suite.yaml", "--no-check"], root, env, discard=True)
    return subprocess.Popen([sys.executable, "-m", "judge", "run", "suite.yaml", "--no-check"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _children_of(worker: int) -> list[int]:
    found = []  # the fork happens in a thread: every task's children
    for task in Path(f"/proc/{worker}/task").glob("*/children"):
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    return found


def _resumed(root: Path, env: dict[str, str], server: Any) -> int:
    """Run the suite again to its end; the calls it made (the cases not yet cached).

    Through the worker, as its client; directly, in this process (nothing here is about the
    direct process: :func:`conftest.run_judge`)."""
    before = server.stats()["requests"]
    args = ["run", "suite.yaml", "--no-check"]
    done = run_judge(args, root, env=env) if _direct(env) else subprocess.run(
        [sys.executable, "-m", "judge", *args], cwd=root, env=env, capture_output=True,
        timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    return int(server.stats()["requests"]) - int(before)


@pytest.fixture
def slow_server() -> Iterator[Any]:
    """The fake judge answering in 0.4 s, so a run is in flight long enough to be signalled."""
    handle = load_fake_server().start_in_thread(latency_ms=400, seed=7)
    try:
        yield handle
    finally:
        handle.stop()


# SIGKILL of the worker's child: the client dies by signal 9 too (it once exited 1, because
# ``signal.signal(SIGKILL, SIG_DFL)`` raises OSError before the client could kill itself).
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_command_keeps_what_was_judged_as_a_direct_run_does(
        shared: Home, slow_server: Any, sig: signal.Signals) -> None:
    """Ctrl-C and SIGTERM to the client (forwarded), SIGKILL of the command's process (the
    direct process; the worker's child): the same exit, the same run status, every judged
    case cached, and a rerun asks the judge only for the rest."""
    env = shared.env()
    envs = {"direct": {**env, "JUDGE_NO_WORKER": "1"}, "worker": env}
    roots = {"direct": shared.direct, "worker": shared.workspace}
    seen = {}
    for name, env in envs.items():
        root = roots[name]
        _slow_workspace(root, slow_server.base_url)
        before = client.status(shared.socket) if name == "worker" else None
        start = slow_server.stats()["requests"]
        proc = _start_run(root, env)
        try:
            assert _wait(lambda s=start: slow_server.stats()["requests"] >= s + 3, 60)
            target = proc.pid
            if before is not None:
                found = client.status(shared.socket)
                assert found is not None and found["pid"] == before["pid"]
                assert found["served"] == int(str(before["served"])) + 1  # the worker's run
                if sig == signal.SIGKILL:  # the run's child, by now the worker's only one
                    target = _children_of(int(str(found["pid"])))[0]
            os.kill(target, sig)
            code = proc.wait(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        cached = _cached(root)
        stored = _stored(root)
        assert 1 <= cached < LLM_CASES  # stopped in flight, what was answered is kept
        assert _resumed(root, env, slow_server) == LLM_CASES - cached
        seen[name] = (code, [status for status, _ in stored])
    assert seen["worker"] == seen["direct"]
    expected = {signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}
    assert seen["direct"][0] == expected.get(sig, seen["direct"][0]), seen


def test_a_worker_killed_under_a_command_lets_it_finish(shared: Home, slow_server: Any) -> None:
    """SIGKILL of the worker while its child judges: the command ends as it would have (exit
    0, the run complete, every case judged once), and the next command starts a new worker
    (for real: it is the next tests' shared worker)."""
    env = shared.env()
    root = shared.workspace
    _slow_workspace(root, slow_server.base_url)
    before = client.status(shared.socket)
    assert before is not None
    proc = _start_run(root, env)
    try:
        assert _wait(lambda: slow_server.stats()["requests"] >= 3, 60)
        found = client.status(shared.socket)
        assert found is not None and found["served"] == int(str(before["served"])) + 1
        worker = int(str(found["pid"]))  # the run is this worker's
        os.kill(worker, signal.SIGKILL)
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert _stored(root) == [("complete", 16)]
    assert slow_server.stats()["requests"] == LLM_CASES
    assert _resumed(root, env, slow_server) == 0  # all cached; it starts a new worker
    # Waited for: under load the new worker's start can outlast the client's 10 s wait, and
    # that command then ran directly while it came up.
    assert _wait(lambda: client.status(shared.socket) is not None, 90)
    again = client.status(shared.socket)
    assert again is not None and again["pid"] != worker


def test_a_client_killed_after_its_worker_still_stops_its_commands_work(
        shared: Home, slow_server: Any) -> None:
    """SIGKILL of the worker, then of the client: the child, its worker gone, watches its
    client's connection itself and ends with it — no orphan judges on (it used to)."""
    env = shared.env()
    root = shared.workspace
    _slow_workspace(root, slow_server.base_url)
    proc = subprocess.Popen([sys.executable, "-m", "judge", "run", "suite.yaml", "--no-check"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert _wait(lambda: slow_server.stats()["requests"] >= 3, 60)
        found = client.status(shared.socket)
        assert found is not None
        worker = int(str(found["pid"]))
        children = _children_of(worker)
        assert len(children) == 1
        os.kill(worker, signal.SIGKILL)
        assert _wait(lambda: not _alive(worker), 30)
        assert _alive(children[0])  # the command goes on without its worker
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=TIMEOUT) == -signal.SIGKILL
        assert _wait(lambda: not _alive(children[0]), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert slow_server.stats()["requests"] < LLM_CASES
    assert _resumed(root, env, slow_server) >= 1  # what the killed child left is asked again
    assert _wait(lambda: client.status(shared.socket) is not None, 90)


# -- trust: the socket's folder, the peer, the frames, the descriptors -------------------

FOREIGN = 65534
"""Another user's uid (``nobody``): the owner of a planted folder, the peer of a socket."""
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="another user's folder and process need root (os.chown, "
                              "setuid); CI runs as root")


def _foreign(work: Callable[[int], None]) -> tuple[int, Any]:
    """Run ``work(out)`` in a process of uid FOREIGN forked from this one: its pid, its output.

    Forked, not started: its uid is what the tests are about, and a fresh interpreter as
    ``nobody`` could not read this one's installation. It makes system calls only (sockets,
    ``os.write``) and ends with ``os._exit``; ``work`` bounds its own waits.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(FOREIGN)
            os.setuid(FOREIGN)
            work(w)
            code = 0
        except BaseException as exc:  # said where the test reads, to show why
            os.write(w, f"error: {exc!r}".encode())
        finally:
            os._exit(code)
    os.close(w)
    return pid, os.fdopen(r, "rb")


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A short folder under /tmp that another user may enter (tmp_path's parents are private,
    and its path under xdist leaves a socket's name too little of the 107 bytes it may have)."""
    folder = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _ended(pid: int) -> int:
    """The exit status of the forked ``pid`` (its work bounds how long that takes)."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@needs_root
def test_a_runtime_folder_of_another_user_or_open_to_others_is_not_used(
        reachable: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``XDG_RUNTIME_DIR`` owned by another uid, writable by others, or a symlink: the client
    neither connects to a socket planted there nor would start a worker there; it uses its
    private folder under the temp dir instead and says why. That folder, made first by another
    user, is refused too: the command runs directly."""
    temp = reachable / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    foreign = reachable / "foreign"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, FOREIGN, FOREIGN)
    open_to_all = reachable / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o1777)  # /tmp's mode: anyone may put a socket there
    private = reachable / "private"
    private.mkdir(mode=0o700)
    (reachable / "link").symlink_to(private)
    own = temp / f"judge-{os.getuid()}"
    for folder, why in ((foreign, f"belongs to uid {FOREIGN}"), (open_to_all, "mode 1777"),
                        (reachable / "link", "symlink")):
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
        assert why in str(client.folder_problem(folder))
        assert client.socket_path().parent == own
        planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # where a worker's would be
        planted.bind(str(folder / client.socket_path().name))
        planted.listen(1)
        planted.setblocking(False)
        with planted:
            assert client.run(["judge", "--version"], start=False) is None
            with pytest.raises(BlockingIOError):
                planted.accept()  # never connected to
        assert why in capsys.readouterr().err
    assert client.folder_problem(own) is None and stat.S_IMODE(own.stat().st_mode) == 0o700
    os.chown(own, FOREIGN, FOREIGN)
    with pytest.raises(OSError, match="belongs to uid"):
        client.runtime_dir()
    assert client.run(["judge", "--version"], start=False) is None
    assert client.status() is None and client.stop() is False


@needs_root
def test_a_socket_held_by_another_user_gets_nothing(
        reachable: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Another user's process listening where the worker's socket would be (in the client's own
    private folder): the client sees its uid (SO_PEERCRED) and sends it nothing — no
    environment, no descriptor, no control message — then runs the command directly."""
    runtime = reachable / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    theirs = reachable / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, FOREIGN, FOREIGN)
    spot = theirs / "s.sock"

    def listen(out: int) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(spot))
            server.listen(4)
            server.settimeout(TIMEOUT)
            os.write(out, b"ready\n")
            got = []
            for _ in range(3):  # the command, its status, its stop
                conn, _ = server.accept()
                with conn:
                    conn.settimeout(TIMEOUT)
                    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 8)
                    got.append(f"{len(msg)}:{len(fds)}")
            os.write(out, " ".join(got).encode() + b"\n")

    pid, out = _foreign(listen)
    with out:
        assert out.readline() == b"ready\n"
        path = client.socket_path()
        os.rename(spot, path)  # the bound socket keeps working under its new name
        assert client.run(["judge", "--version"], start=False) is None
        assert client.status(path) is None
        assert client.stop(path) is False
        assert out.readline() == b"0:0 0:0 0:0\n"  # three connections, not a byte, no fd
    assert _ended(pid) == 0
    assert f"held by uid {FOREIGN}" in capsys.readouterr().err


@needs_root
def test_the_peer_check_reads_the_kernels_record_of_the_connecting_user(reachable: Path) -> None:
    """The decision both sides take, against a socket whose peer is another user for real: a
    process of uid 65534 connecting (and sending a head with descriptors) is not this user; a
    process of this user is."""
    spot = reachable / "s.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(spot))
        spot.chmod(0o666)
        server.listen(1)
        server.settimeout(TIMEOUT)

        def connect(out: int) -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(TIMEOUT)
                sock.connect(str(spot))
                with contextlib.suppress(OSError):  # the other side may have closed already
                    socket.send_fds(sock, [b'{"argv": []}\n'], [out, out, out])
                    sock.recv(1)  # until the other side closes
            os.write(out, b"done\n")

        pid, out = _foreign(connect)
        with out:
            with server.accept()[0] as conn:
                assert client.peer_uid(conn) == FOREIGN
                assert not client.same_user(conn)
            assert out.read() == b"done\n"
        assert _ended(pid) == 0
    mine, theirs = socket.socketpair(socket.AF_UNIX)
    with mine, theirs:
        assert client.peer_uid(mine) == os.getuid() and client.same_user(mine)


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _frame(path: Path, data: bytes, fds: list[int]) -> bytes:
    """Send one frame (``data`` with ``fds``) on a connection of its own; the answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(str(path))
        try:
            sent = socket.send_fds(sock, [data], fds)
            sock.sendall(data[sent:])
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while it was still sending
        answer = b""
        with contextlib.suppress(ConnectionResetError):  # closed with the frame unread
            while chunk := sock.recv(4096):
                answer += chunk
        return answer


@needs_root
def test_malformed_frames_leave_the_workers_descriptors_flat(shared: Home) -> None:
    """A few hundred frames that are not a command — not JSON, not an object, fields of other
    types, one or five descriptors, cut short, longer than MAX_HEAD, from another user's
    process — each refused, none run; the worker's descriptor count is what it was, every
    descriptor sent is closed (the pipe they carried reads its end), and it still serves.
    Each frame used to leak three descriptors; about 356 ended the worker."""
    found = client.status(shared.socket)
    assert found is not None
    worker = int(str(found["pid"]))
    before = _fd_count(worker)
    r, w = os.pipe()
    head = json.dumps({"digest": client.digest(), "argv": ["judge", "--version"], "cwd": "/",
                       "env": {}}).encode()
    frames = [(b"{not json\n", [w, w, w])] * 100 + [(b"[1, 2]\n", [w, w, w])] * 40 + [
        (b'{"digest": "x", "argv": "judge", "cwd": 1, "env": []}\n', [w, w, w])] * 40 + [
        (head + b"\n", [w])] * 40 + [(head + b"\n", [w] * 5)] * 40 + [
        (head[:20], [w, w, w])] * 40 + [(b"x" * (client.MAX_HEAD + 1), [w, w, w])] * 2
    answers = [_frame(shared.socket, data, fds) for data, fds in frames]
    assert all(b'"refused"' in a for a in answers if a), {a[:80] for a in answers}
    # another user's process: refused before a byte is read (the folder and socket opened
    # to it for this only; the folder stays unwritable by others)
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (shared.runtime.parent,
                                                          shared.runtime, shared.socket)}
    try:
        for p in modes:
            p.chmod(0o711 if p.is_dir() else 0o666)

        path = shared.socket  # found here: the other user's runtime folder is not this one

        def send(out: int) -> None:
            for _ in range(2):
                os.write(out, _frame(path, head + b"\n", [w, w, w]) or b"-")

        pid, out = _foreign(send)
        with out:
            assert out.read() == b"--"  # closed unanswered
        assert _ended(pid) == 0
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    os.close(w)
    os.set_blocking(r, False)
    assert os.read(r, 1) == b"", "a descriptor sent is still held"  # not BlockingIOError
    os.close(r)
    # ``before`` may hold a connection still closing (the status asked above, a previous
    # test's client): flat means back to at most that, not +3 a frame as it was.
    assert _wait(lambda: _fd_count(worker) <= before, 10), (_fd_count(worker), before)
    after = client.status(shared.socket)
    assert after is not None and after["pid"] == worker and after["served"] == found["served"]


def test_the_first_answer_is_the_childs_pid_however_fast_the_command(shared: Home) -> None:
    """A fast command's child used to report its exit before the worker sent its pid; the
    client took that for a stale worker and ran the command again, directly (29 of 160 under
    four concurrent clients). The child now says its pid before anything else."""
    head = json.dumps({"digest": client.digest(), "argv": ["judge", "--version"],
                       "cwd": str(shared.workspace), "env": shared.env()}).encode() + b"\n"
    null = os.open(os.devnull, os.O_RDWR)

    def first(_: int) -> tuple[bytes, bytes]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT)
            sock.connect(str(shared.socket))
            socket.send_fds(sock, [head], [null, null, null])
            with sock.makefile("rb") as answers:
                return answers.readline(), answers.read()

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(first, range(40)))
    finally:
        os.close(null)
    assert [json.loads(one).keys() for one, _ in answers] == [{"pid"}] * 40
    assert all(b'"exit": 0' in rest for _, rest in answers)


def test_a_child_holds_no_descriptor_of_another_command(shared: Home) -> None:
    """A command's child closes what the worker holds for the others: another client's
    descriptors (sent with a head still coming) and connections. A child used to inherit
    them, so another command's reader waited for this one's end to see its pipe close.
    Closing the command's connection (its client gone) then ends the child at once."""
    found = client.status(shared.socket)
    assert found is not None
    worker = int(str(found["pid"]))
    r, w = os.pipe()
    other = f"pipe:[{os.fstat(r).st_ino}]"
    stdin_r, stdin_w = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    half = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    command = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        half.connect(str(shared.socket))
        socket.send_fds(half, [b'{"digest": '], [r, w, w])  # a head still coming

        def held(pid: int) -> set[str]:
            links = set()
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    links.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            return links
        assert _wait(lambda: other in held(worker), 15)
        command.settimeout(TIMEOUT)
        command.connect(str(shared.socket))
        head = {"digest": client.digest(), "argv": ["judge", "cache", "import", "-"],
                "cwd": str(shared.workspace), "env": shared.env()}
        socket.send_fds(command, [json.dumps(head).encode() + b"\n"], [stdin_r, null, null])
        child = int(json.loads(command.makefile("rb").readline())["pid"])
        assert other not in held(child)  # it waits on its stdin meanwhile
        command.close()
        assert _wait(lambda: child not in _children_of(worker), 30)  # killed and reaped
    finally:
        for sock in (half, command):
            sock.close()
        for fd in (r, w, stdin_r, stdin_w, null):
            os.close(fd)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_a_killed_client_stops_its_commands_work_at_once(
        shared: Home, slow_server: Any, sig: signal.Signals) -> None:
    """SIGKILL or SIGHUP to a ``judge run`` using the worker: its connection closes, the worker
    kills the child, and no further judgment starts — as a direct run killed so (the child
    used to judge every case). What was answered stays cached; a rerun asks for the rest. The
    worker runs one thread: its fork never copies a lock another thread holds."""
    env = shared.env()
    root = shared.workspace
    _slow_workspace(root, slow_server.base_url)
    found = client.status(shared.socket)
    assert found is not None
    worker = int(str(found["pid"]))
    proc = subprocess.Popen([sys.executable, "-m", "judge", "run", "suite.yaml", "--no-check"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert _wait(lambda: slow_server.stats()["requests"] >= 3, 60)
        assert len(_children_of(worker)) == 1  # the run is this worker's
        assert os.listdir(f"/proc/{worker}/task") == [str(worker)]
        os.kill(proc.pid, sig)
        assert proc.wait(timeout=TIMEOUT) == -sig
        assert _wait(lambda: not _children_of(worker), 30)  # killed and reaped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert slow_server.stats()["requests"] < LLM_CASES
    cached = _cached(root)
    assert 1 <= cached < LLM_CASES
    assert _resumed(root, env, slow_server) == LLM_CASES - cached
