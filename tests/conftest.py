"""Shared fixtures: the loopback fake model server and an isolated workspace."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
pytest_plugins = ("pytester",)  # the pytest plugin's tests run inner pytest sessions
REPORTS: list[str] = []
"""Findings a test wants shown in the run's output whether it passes or fails."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print what tests measured and reported (e.g. whether the local engine is deterministic)."""
    if REPORTS:
        terminalreporter.section("judgeflow reports")
        for line in REPORTS:
            terminalreporter.write_line(line)


def load_fake_server() -> ModuleType:
    """bench/fake_server.py as a module (bench/ is not a package)."""
    if "fake_server" in sys.modules:
        return sys.modules["fake_server"]
    spec = importlib.util.spec_from_file_location("fake_server",
                                                  ROOT / "bench" / "fake_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_server"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake_server() -> Iterator[Any]:
    """A fake OpenAI-compatible judge on 127.0.0.1, stopped after the test."""
    handle = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder: its own cache, store and baselines."""
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def judge_env(**extra: str) -> dict[str, str]:
    """The environment for a `judge` subprocess: no provider keys, no stray settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUDGE_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))}
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
