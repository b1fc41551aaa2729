"""The code style is enforced, not hoped for: ruff runs with the tests, mypy --strict beside them.

mypy is marked ``typecheck``: from a clean clone (a cold cache) it takes a minute of CPU,
so the default run leaves it out and CI runs it as its own gating step
(``pytest -m typecheck -n 0``).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from code_scan import PACKAGE, modules

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def test_ruff_is_clean() -> None:
    proc = _run(str(BIN / "ruff"), "check", "judge", "tests", "bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.typecheck
def test_mypy_strict_is_clean() -> None:
    proc = _run(str(BIN / "mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


# Which issue asked for a line and which results section measured it go stale: they belong
# in commit messages and bench/RESULTS.md. A figure that justifies a choice stays, in words.
ISSUE = re.compile(r"\bissues?[ -]?#?\d+", re.IGNORECASE)
RESULTS = re.compile(r"RESULTS\.md")


def _notes(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and docstring of a module: where a reader looks for why."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            yield node.lineno, node.value.value


def _found(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    return [repr(m[0]) for m in (pattern.search(text) for pattern in patterns) if m]


def _citing(paths: list[Path], *patterns: re.Pattern[str]) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {what}" for path in paths
            for line, text in _notes(path) for what in _found(text, patterns)]


def _package_assets() -> list[Path]:
    """The package's own templates, styles and scripts (not the vendored, minified ones)."""
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in {".j2", ".css", ".js"}
                  and not p.name.endswith(".min.js"))


def test_judges_docstrings_and_comments_cite_no_issue_and_no_results_section() -> None:
    found = _citing(modules(), ISSUE, RESULTS)
    found += [f"{path.relative_to(ROOT)}: {what}" for path in _package_assets()
              for what in _found(path.read_text(encoding="utf-8"), (ISSUE, RESULTS))]
    assert not found, ("say what and why (a figure in words if it decides), not which issue "
                       "or which results section: " + "; ".join(found))


def test_tests_and_benchmarks_cite_no_issue() -> None:
    paths = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
    found = _citing(paths, ISSUE)
    assert not found, "say what a test or a benchmark checks, not which issue: " + "; ".join(found)


def test_a_citation_is_found_in_a_comment_and_in_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""What it is (issue 33)."""\n\nX = 1  # measured: bench/RESULTS.md\n'
                      'Y = "issue 7"\n')
    assert [line for line, _ in _notes(module)] == [3, 1]
    found = [what for _, text in _notes(module) for what in _found(text, (ISSUE, RESULTS))]
    assert found == ["'RESULTS.md'", "'issue 33'"]
