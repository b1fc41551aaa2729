"""Real artefacts for the ``judge suite collect`` tests: a git repository, a pytest JUnit report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLE_TESTS = '''
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_fails():
    token = "sk-live0123456789abcdefXYZ"
    assert token == "expected", "login redirect lost the next parameter"

@pytest.mark.skip(reason="not on this platform")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("database unavailable")

def test_errors(broken):
    pass
'''


def git(repo: Path, *args: str, date: str = "2026-01-02T10:00:00+00:00") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada Agent", "GIT_AUTHOR_EMAIL": "ada@example.com",
           "GIT_COMMITTER_NAME": "Ada Agent", "GIT_COMMITTER_EMAIL": "ada@example.com",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, text=True,
                          capture_output=True, timeout=60).stdout


def make_repo(root: Path) -> tuple[Path, list[str]]:
    """A repository with three real commits (two conventional); their shas, newest first."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    steps = [
        ("app.py", "print('hi')\n", "Initial import", ""),
        ("app.py", "print('hi')\nprint('there')\n", "feat(app): greet twice",
         "Second line of greeting.\n\nDeploy with https://deploy:hunter2@ci.example.com/x"),
        ("docs.md", "# Docs\n\nHow to greet.\n", "docs: explain greeting", ""),
    ]
    for n, (name, text, subject, body) in enumerate(steps):
        (repo / name).write_text(text)
        git(repo, "add", name)
        message = subject + ("\n\n" + body if body else "")
        git(repo, "commit", "-q", "-m", message, date=f"2026-01-0{n + 1}T10:00:00+00:00")
    shas = git(repo, "log", "--format=%H").split()
    return repo, shas


def run_pytest_junit(root: Path) -> Path:
    """A JUnit report written by running pytest on a small passing-and-failing test file."""
    folder = root / "sample"
    folder.mkdir()
    (folder / "test_sample.py").write_text(SAMPLE_TESTS)
    (folder / "pytest.ini").write_text("[pytest]\n")  # none of this project's settings
    report = folder / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
         "test_sample.py"], cwd=folder, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a test failed, as intended
    return report
