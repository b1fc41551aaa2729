"""In-process doors for tests: ``judge ...`` through its entry point, a run through the operation.

Both replace a ``python -m judge`` subprocess where the process boundary adds nothing (the
handful of true end-to-end subprocess tests live in test_run_e2e.py). ``cli`` returns the
same three facts a subprocess gives (exit status, stdout, stderr); ``run`` returns the
payload ``judge run --json`` prints, judged through LiteLLM against the loopback fake server.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import judge_env

from judge.app.running import RunRequest, run_suite
from judge.app.runs import iter_results
from judge.app.workspace import Workspace
from judge.cli import main

__all__ = ["Done", "cli", "run"]


@dataclass(frozen=True)
class Done:
    """What a command left: its exit status and its two streams."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cli(args: list[str], cwd: Path, *, env: Mapping[str, str] | None = None) -> Done:
    """Run ``judge ARGS`` in this process, in ``cwd``, under ``env`` (default: judge_env())."""
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with (_environment(judge_env() if env is None else env), contextlib.chdir(cwd),
          contextlib.redirect_stdout(out), contextlib.redirect_stderr(err)):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
    assert not isinstance(code, str), code
    return Done(returncode=code or 0, stdout=out.getvalue(), stderr=err.getvalue())


def run(root: Path, url: str | None, *, suite: str = "suite.yaml", check: bool = False,
        **settings: Any) -> dict[str, Any]:
    """Judge ``suite`` in ``root`` (against the fake server at ``url``) as ``judge run --json``
    would; ``settings`` are the flags (``model=``, ``samples=``, ``rubric=``, ...)."""
    overrides = {**settings, "api_base": f"{url}/v1" if url else None}
    ws = Workspace.open(root, overrides, env=judge_env())
    report = run_suite(ws, RunRequest(suite=Path(suite), check=check))
    assert report.exit_code in (0, 1), report
    verdict = report.verdict
    return {"run": report.run.model_dump(mode="json"),
            "summary": report.summary.model_dump(mode="json"),
            "baseline": verdict.public() if verdict is not None else None,
            "exitCode": report.exit_code,
            "cases": [r.model_dump(mode="json") for r in iter_results(ws, report.run.id)]}
