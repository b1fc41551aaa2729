"""Shared fixtures: the loopback fake model server and an isolated workspace."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_SUITE = ROOT / "examples" / "task-evaluation" / "suite.yaml"
REPORTS: list[str] = []
"""Findings a test wants shown in the run's output whether it passes or fails."""


class FakeClient:
    """What :class:`judge.judging.Completer` declares besides ``complete()``, for test fakes.

    A fake model subclasses it and writes ``complete()``; counting its calls in ``attempts``
    makes them show as a run's calls.
    """

    engine: Mapping[str, Any] | None = None
    max_concurrency: int | None = None
    attempts: int = 0
    retries: int = 0


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


def run_judge(args: list[str], cwd: Path, *, env: dict[str, str] | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, in ``cwd``."""
    return subprocess.run([sys.executable, "-m", "judge", *args], cwd=cwd, text=True,
                          capture_output=True, env=env or judge_env(), timeout=timeout,
                          check=False)
