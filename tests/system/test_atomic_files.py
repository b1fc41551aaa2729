"""The one atomic writer: whole files or nothing, and no module writing a file of its own."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from code_scan import calls

from judge.system.atomic_files import atomic_path, atomic_writer, write_atomic, write_atomic_bytes

PACKAGE = Path(__file__).resolve().parents[2] / "judge"
HOME = PACKAGE / "system" / "atomic_files.py"

# Calls that write, rename or replace a file (by the attribute called).
WRITES = frozenset({"write_text", "write_bytes", "rename", "mkstemp", "mkdtemp",
                    "NamedTemporaryFile", "TemporaryFile", "link"})
OS_CALLS = frozenset({"replace", "rename", "renames", "link", "open"})
# (module, function, call) that open a file for writing, and why it is no file written whole.
STREAMS: dict[tuple[str, str, str], str] = {
    ("llm/local.py", "start_server", "open(w)"): "the server's log, written while it runs",
    ("llm/local_weights.py", "derive_f16", "open(w)"): "the converter's log, appended to",
    ("worker/client.py", "spawn", "open(w)"): "os.devnull, the detached worker's stdout",
    ("cli/__init__.py", "_pipe_closed", "os.open"): "os.devnull, put where stdout was closed",
    ("pytest_plugin/session.py", "_locked", ".open(w)"): "a lock file, never written to",
}


def _writes(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(function, line, call) of every call in ``tree`` that writes a file by itself."""
    return [(where, call.lineno, written) for where, call in calls(tree)
            if (written := _written(call)) is not None]


def _written(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Name) and base.id == "os" and func.attr in OS_CALLS:
            return f"os.{func.attr}" if func.attr != "open" or _writing(call, 1) else None
        if func.attr in WRITES:
            return func.attr
        if func.attr == "fdopen" and _writing(call, 1):
            return "fdopen(w)"
        if func.attr == "open" and _writing(call, 0):
            return ".open(w)"
    if isinstance(func, ast.Name) and func.id == "open" and _writing(call, 1):
        return "open(w)"
    return None


def _writing(call: ast.Call, at: int) -> bool:
    """Whether the call's mode argument (positional ``at`` or ``mode=``/flags) writes."""
    args = [*call.args[at:at + 1], *(k.value for k in call.keywords
                                      if k.arg in {"mode", "flags"})]
    return any(isinstance(a, ast.Constant) and isinstance(a.value, str)
               and set(a.value) & set("wax+") for a in args) or any(
        "O_WRONLY" in ast.unparse(a) or "O_CREAT" in ast.unparse(a) for a in args)


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p != HOME and "_data" not in p.parts)


def test_every_file_is_written_through_the_atomic_writer() -> None:
    found = []
    for path in _modules():
        rel = str(path.relative_to(PACKAGE))
        found += [(rel, where, line, call) for where, line, call in
                  _writes(ast.parse(path.read_text())) if (rel, where, call) not in STREAMS]
    assert not found, (f"files written outside the atomic writer {found}: use "
                       "judge.system.atomic_files (write_atomic, write_atomic_bytes, "
                       "atomic_writer, atomic_path)")


@pytest.mark.parametrize("source", [
    "p.write_text('x')", "tmp.rename(p)", "os.replace(a, b)", "tempfile.mkstemp()",
    "tempfile.NamedTemporaryFile()", "open(p, 'wb')", "p.open('a')", "os.fdopen(fd, 'w')",
    "os.open(p, os.O_WRONLY | os.O_CREAT)", "os.link(a, b)",
])
def test_the_checker_sees_each_way_of_writing(source: str) -> None:
    assert _writes(ast.parse(f"def f():\n    {source}\n")), source


@pytest.mark.parametrize("source", ["open(p)", "p.open(encoding='utf-8')", "p.read_text()",
                                    "os.open(p, os.O_RDONLY)", "text.replace('a', 'b')"])
def test_the_checker_lets_reads_through(source: str) -> None:
    assert not _writes(ast.parse(f"def f():\n    {source}\n")), source


def test_text_and_bytes_replace_whole_files_as_0644(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.html"
    write_atomic_bytes(target, b"\x00one")
    assert target.read_bytes() == b"\x00one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    write_atomic(target, "two ✓\n")
    assert target.read_text(encoding="utf-8") == "two ✓\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]


def test_an_existing_files_permissions_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "baseline.json"
    target.write_text("{}")
    target.chmod(0o600)
    write_atomic(target, "{\"a\": 1}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failure_leaves_the_old_file_and_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "suite.yaml"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_writer(target) as out:
        out.write("half")
        raise RuntimeError("killed midway")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["suite.yaml"]


def test_without_replace_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "suite.yaml"
    write_atomic(target, "first", replace=False)
    with pytest.raises(FileExistsError):
        write_atomic(target, "second", replace=False)
    with pytest.raises(FileExistsError), atomic_path(tmp_path / "late.bin", replace=False) as tmp:
        (tmp_path / "late.bin").write_text("created meanwhile")
        tmp.write_bytes(b"mine")
    assert target.read_text() == "first"
    assert (tmp_path / "late.bin").read_text() == "created meanwhile"


def test_a_file_another_program_fills_appears_whole(tmp_path: Path) -> None:
    target = tmp_path / "model.F16.gguf"
    with atomic_path(target) as tmp:
        subprocess.run([sys.executable, "-c",
                        f"open({str(tmp)!r}, 'wb').write(b'weights')"], check=True)
        assert not target.exists()
    assert target.read_bytes() == b"weights"
    assert os.listdir(tmp_path) == ["model.F16.gguf"]
