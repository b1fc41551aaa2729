"""Process-wide state is the entry point's: library code leaves the GC, env and atexit alone."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "judge"
# (module, function) allowed to touch process state: what it may do (None: anything), and why.
ALLOWED: dict[tuple[str, str], frozenset[str] | None] = {
    ("tuning.py", "tune_process"): None,  # the entry point's one call
    ("tuning.py", "settle_heap"): None,  # the entry point's, once set-up is built
    ("tuning.py", "_quiet_shutdown"): None,  # registered by tune_process
    ("tuning.py", "load_frozen"): None,  # the warm worker's parent, once, before it forks
    # litellm reads two variables during its import only: set for it, then restored.
    ("client.py", "load_litellm"): frozenset({"os.environ[...] =", "os.environ.pop"}),
    # Called by a door after a run (skips litellm's exit flush), never by a library call.
    ("client.py", "quiet_exit"): frozenset({"atexit.unregister"}),
    # The warm worker's forked child becomes the caller's process (its environment), once,
    # before it runs the command; the worker itself keeps its own.
    ("server.py", "_child"): frozenset({"os.environ.clear", "os.environ.update"}),
}
GC_CALLS = {"freeze", "unfreeze", "disable", "enable", "set_threshold", "collect"}
ENV_WRITES = {"setdefault", "update", "pop", "clear", "popitem", "__setitem__"}


def _library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "cli" not in p.relative_to(PACKAGE).parts and "_data" not in p.parts)


def _touches(tree: ast.Module) -> list[tuple[str, int, str]]:
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                base, attr = child.func.value, child.func.attr
                if isinstance(base, ast.Name) and base.id == "gc" and attr in GC_CALLS:
                    found.append((where, child.lineno, f"gc.{attr}"))
                if isinstance(base, ast.Name) and base.id == "atexit":
                    found.append((where, child.lineno, f"atexit.{attr}"))
                if isinstance(base, ast.Name) and base.id == "os" and attr in {
                        "putenv", "unsetenv"}:
                    found.append((where, child.lineno, f"os.{attr}"))
                if isinstance(base, ast.Attribute) and base.attr == "environ" \
                        and attr in ENV_WRITES:
                    found.append((where, child.lineno, f"os.environ.{attr}"))
            if isinstance(child, ast.Assign | ast.AugAssign | ast.Delete):
                targets = child.targets if isinstance(child, ast.Assign | ast.Delete) \
                    else [child.target]
                for target in targets:
                    if isinstance(target, ast.Subscript) and isinstance(
                            target.value, ast.Attribute) and target.value.attr == "environ":
                        found.append((where, child.lineno, "os.environ[...] ="))
            visit(child, name)

    visit(tree, "<module>")
    return found


def test_the_scan_sees_every_form() -> None:
    tree = ast.parse("import gc, os, atexit\ngc.freeze()\ndef f():\n    os.environ['A'] = '1'\n"
                     "    os.environ.setdefault('B', '2')\n    atexit.register(f)\n"
                     "    del os.environ['A']\n")
    assert {what for _, _, what in _touches(tree)} == {
        "gc.freeze", "os.environ[...] =", "os.environ.setdefault", "atexit.register"}


@pytest.mark.parametrize("path", _library_modules(), ids=lambda p: p.name)
def test_library_code_leaves_process_state_alone(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for where, line, what in _touches(tree):
        key = (path.name, where)
        allowed = ALLOWED[key] if key in ALLOWED else frozenset()
        if allowed is not None and what not in allowed:
            bad.append((where, line, what))
    assert not bad, f"{path.name} touches process state: {bad} (see judge/system/tuning.py)"


def _child(code: str) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_importing_litellm_through_the_client_changes_no_process_state() -> None:
    seen = _child(
        "import gc, json, os\n"
        "before = dict(os.environ); threshold = gc.get_threshold()\n"
        "from judge.llm.client import load_litellm\n"
        "lit = load_litellm()\n"
        "from litellm.litellm_core_utils.get_model_cost_map import _cost_map_source_info\n"
        "print(json.dumps({'env': dict(os.environ) == before, 'frozen': gc.get_freeze_count(),\n"
        "                  'gc': gc.isenabled(), 'threshold': gc.get_threshold() == threshold,\n"
        "                  'source': _cost_map_source_info.source,\n"
        "                  'mode': lit.litellm_mode}))\n")
    assert seen == {"env": True, "frozen": 0, "gc": True, "threshold": True,
                    "source": "local", "mode": "PRODUCTION"}


def test_tune_process_sets_defaults_once_and_lets_the_user_win() -> None:
    seen = _child(
        "import gc, json, os\n"
        "os.environ['LITELLM_MODE'] = 'DEV'\n"
        "from judge.system.tuning import GC_THRESHOLDS, tune_process\n"
        "tune_process(); tune_process()\n"
        "print(json.dumps({'map': os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'),\n"
        "                  'mode': os.environ['LITELLM_MODE'],\n"
        "                  'threshold': list(gc.get_threshold()) == list(GC_THRESHOLDS)}))\n")
    assert seen == {"map": "True", "mode": "DEV", "threshold": True}
