"""Shared fixtures: the loopback fake model server and an isolated workspace."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import io
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# numpy's extension loads once per process: an inner pytest session (pytester) drops what it
# imported from sys.modules, and a later import of numpy (the gate's Student's t, the
# agreement kernels) would fail. Loaded here, before any session snapshots sys.modules.
import scipy.special  # noqa: F401

from judge.llm.client import load_litellm

ROOT = Path(__file__).resolve().parent.parent
# Tests mirror the packages (tests/core/, tests/cache/, ...) and a few share helpers across
# folders by module name (``from test_store import make_run``): every folder is importable.
for _folder in sorted(Path(__file__).resolve().parent.iterdir()):
    if _folder.is_dir() and not _folder.name.startswith((".", "_")):
        sys.path.insert(0, str(_folder))
EXAMPLE_SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
pytest_plugins = ("pytester",)  # the pytest plugin's tests run inner pytest sessions
REPORTS: list[str] = []
"""Findings a test wants shown in the run's output whether it passes or fails."""


class FakeClient:
    """What :class:`judge.engine.judging.Completer` declares besides ``complete()``, for test fakes.

    A fake model subclasses it and writes ``complete()``; counting its calls in ``attempts``
    makes them show as a run's calls.
    """

    engine: Mapping[str, Any] | None = None
    max_concurrency: int | None = None
    attempts: int = 0
    retries: int = 0


PG_LOCK_SECONDS = 900


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """Tests of a PostgreSQL server shared by the xdist workers run one at a time.

    Some restart or stop the server; no other worker may be using it then. CI's server (from
    ``JUDGE_TEST_POSTGRES_URL``) is one for both workers: its tests take a lock on a file
    named for the URL around setup, call and teardown. Without the URL each worker starts a
    cluster of its own and needs none. (xdist's ``--dist loadgroup`` cannot do this here:
    it renames node ids through an attribute pytest 9 no longer reads, so groups were
    silently spread over both workers.)
    """
    url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
    if not url or "postgres_server" not in getattr(item, "fixturenames", ()):
        return (yield)
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"judge-test-pg-{name}.lock", "a") as lock:
        deadline = time.monotonic() + PG_LOCK_SECONDS
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the PostgreSQL test lock was held over "
                                       f"{PG_LOCK_SECONDS} s") from None
                time.sleep(0.05)
        try:
            return (yield)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print what tests measured and reported (e.g. whether the local engine is deterministic)."""
    if REPORTS:
        terminalreporter.section("judgeflow reports")
        for line in REPORTS:
            terminalreporter.write_line(line)


def load_fake_server() -> ModuleType:
    """The loopback fake judge, tests/fakes/fake_server.py (its folder is on the path above)."""
    return importlib.import_module("fake_server")


@pytest.fixture
def fake_server() -> Iterator[Any]:
    """A fake OpenAI-compatible judge on 127.0.0.1, stopped after the test."""
    handle = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def litellm_httpx(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """LiteLLM on its httpx transport, so respx sees its async calls (it cannot see aiohttp).

    Its HTTP clients are cached per process: flushed before, so they are made anew on that
    transport, and after, so later tests get aiohttp ones again.
    """
    lit = load_litellm()
    monkeypatch.setattr(lit, "disable_aiohttp_transport", True)
    lit.in_memory_llm_clients_cache.flush_cache()
    yield lit
    lit.in_memory_llm_clients_cache.flush_cache()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder: its own cache, store and baselines."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


# Under CI the gate requires a committed baseline (a first run fails there): a test that
# means CI sets it itself, so the suite behaves the same in CI and on a laptop.
os.environ.pop("CI", None)


def judge_env(**extra: str) -> dict[str, str]:
    """The environment for a `judge` subprocess: no provider keys, no stray settings, no CI."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_")) and k != "CI"}
    env.update(extra)
    return env


def run_judge_subprocess(args: list[str], cwd: Path, *, env: dict[str, str] | None = None,
                         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in ``cwd``, as its own process (signals, start-up, exit)."""
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, text=True,
                          capture_output=True, env=env or judge_env(), timeout=timeout,
                          check=False)


def run_judge(args: list[str], cwd: Path, *, env: dict[str, str] | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI in this process: the same entry point, arguments, folder and environment.

    The door is the same code either way; a process per call only adds start-up (and
    LiteLLM's import, seconds each). Tests of signals, start-up and exit use
    :func:`run_judge_subprocess`. ``timeout`` is kept for the call sites' sake.
    """
    del timeout
    from judge.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code = 0
    os.environ.clear()
    os.environ.update(env or judge_env())
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess([sys.executable, "-m", "judge", *args], code,
                                       out.getvalue(), err.getvalue())
# --- PostgreSQL (tests marked `postgres`) -----------------------------------------------------
# CI (.ci/run) starts a cluster with .ci/postgres.sh and exports JUDGE_TEST_POSTGRES_URL (and
# JUDGE_TEST_POSTGRES_DATA, so a test can restart it). Locally, with no URL but Debian's
# PostgreSQL installed, the session starts a throwaway cluster on loopback itself.

PG_START_SECONDS = 30


@dataclass
class PostgresServer:
    """A PostgreSQL server on loopback: its admin URL and, when we may, its data folder."""

    url: str
    data: Path | None = None
    bin: Path | None = None

    def _as_owner(self, args: list[str]) -> list[str]:
        return (["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args)

    def _pg_ctl(self, *args: str) -> None:
        if self.data is None or self.bin is None:
            pytest.skip("the PostgreSQL server is not ours to stop "
                        "(set JUDGE_TEST_POSTGRES_DATA to its data folder)")
        subprocess.run(self._as_owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-w",
                                       "-t", str(PG_START_SECONDS), *args]),
                       check=True, capture_output=True, timeout=PG_START_SECONDS * 2)

    def restart(self) -> None:
        """Restart the server (fast shutdown: every connection is dropped)."""
        assert self.data is not None
        # With a log file: otherwise the server inherits our stdout pipe and holds it open.
        self._pg_ctl("-l", str(self.data.parent / "server.log"), "-m", "fast", "restart")

    def stop(self) -> str:
        """Stop the server (fast); returns the options to start it again with."""
        assert self.data is not None
        # postmaster.opts: the server's command line; drop the binary and its -D DIR.
        words = shlex.split((self.data / "postmaster.opts").read_text())[1:]
        at = words.index("-D")
        options = shlex.join(words[:at] + words[at + 2:])
        self._pg_ctl("-m", "fast", "stop")
        return options

    def start(self, options: str) -> None:
        """Start the server stopped by :meth:`stop`."""
        assert self.data is not None
        self._pg_ctl("-l", str(self.data.parent / "server.log"), "-o", options, "start")


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                   else 0)
    return found[-1].parent if found else None


def free_port() -> int:
    """A port on 127.0.0.1 free at the moment of asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """The configured server, else a throwaway cluster of our own, else a skip (why)."""
    url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
    binary = _pg_bin()
    if url:
        data = os.environ.get("JUDGE_TEST_POSTGRES_DATA")
        yield PostgresServer(url=url, data=Path(data) if data else None, bin=binary)
        return
    if binary is None:
        pytest.skip("no PostgreSQL: set JUDGE_TEST_POSTGRES_URL=postgresql+psycopg://... or "
                    "install Debian's postgresql (CI does both)")
    root = Path(tempfile.mkdtemp(prefix="judge-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    server = PostgresServer(url="", data=root / "db", bin=binary)
    port = free_port()
    subprocess.run(server._as_owner([str(binary / "initdb"), "-D", str(server.data), "-U",
                                     "judge", "--auth=trust", "-E", "UTF8"]),
                   check=True, capture_output=True, timeout=120)
    subprocess.run(server._as_owner([
        str(binary / "pg_ctl"), "-D", str(server.data), "-l", str(root / "server.log"), "-w",
        "-t", str(PG_START_SECONDS), "-o",
        f"-k /tmp -c listen_addresses=127.0.0.1 -p {port} -c fsync=off", "start"]),
        check=True, capture_output=True, timeout=PG_START_SECONDS * 2)
    server.url = f"postgresql+psycopg://judge@127.0.0.1:{port}/postgres"
    try:
        yield server
    finally:
        subprocess.run(server._as_owner([str(binary / "pg_ctl"), "-D", str(server.data), "-m",
                                         "immediate", "-w", "stop"]),
                       capture_output=True, timeout=PG_START_SECONDS * 2, check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the server for one test (dropped after it)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    name = f"judge_t_{uuid.uuid4().hex[:12]}"
    # No pool: a test may restart the server between creating and dropping the database.
    admin = create_engine(postgres_server.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(postgres_server.url).set(database=name).render_as_string(
            hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
