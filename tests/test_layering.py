"""The layering rules: the pure core touches no world, the CLI stays light, ``__all__`` is kept."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "judge"

REQUIRED_PURE = ("canonical", "models", "rubric", "evidence", "scoring", "scorefile")
OPTIONAL_PURE = ("cache_entry", "cache_bytes", "parsing", "schema", "summary", "compare",
                 "baseline", "monitor", "generate", "checks", "stats", "suite", "rescore",
                 "agreement", "panel", "pairwise")
PURE_MODULES = tuple(name for name in REQUIRED_PURE + OPTIONAL_PURE
                     if (PACKAGE / f"{name}.py").is_file())

FORBIDDEN = frozenset({
    "litellm", "diskcache", "jinja2", "sqlalchemy", "httpx", "aiohttp", "socket", "time",
    "datetime", "os", "subprocess", "random", "asyncio",
})
# Heavy or world-facing packages that nothing else drags in: never loaded by the pure core.
NEVER_LOADED = frozenset({
    "litellm", "diskcache", "jinja2", "sqlalchemy", "httpx", "aiohttp", "subprocess",
    "asyncio",
})


def _source(name: str) -> tuple[Path, ast.Module]:
    path = PACKAGE / f"{name}.py"
    return path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imported_roots(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):  # walks function bodies too: local imports count
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Call):
            # importlib.import_module("os") / __import__("os")
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname in {"import_module", "__import__"} and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((node.lineno, arg.value.split(".")[0]))
    return found


def _world_uses(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id == "os" and node.attr in {
                    "environ", "getenv", "environb"}:
                found.append((node.lineno, f"os.{node.attr}"))
            if isinstance(base, ast.Name) and base.id == "time":
                found.append((node.lineno, f"time.{node.attr}"))
            if node.attr in {"now", "utcnow", "today"} and (
                    (isinstance(base, ast.Name) and base.id in {"datetime", "date"})
                    or (isinstance(base, ast.Attribute) and base.attr in {"datetime", "date"})):
                found.append((node.lineno, f"datetime.{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in {"getenv", "environ"}:
            found.append((node.lineno, node.id))
    return found


def test_pure_module_list_is_complete() -> None:
    missing = [m for m in REQUIRED_PURE if m not in PURE_MODULES]
    assert not missing, f"pure modules missing: {missing}"
    assert len(PURE_MODULES) >= 6


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_module_imports_nothing_forbidden(name: str) -> None:
    path, tree = _source(name)
    bad = [(line, mod) for line, mod in _imported_roots(tree) if mod in FORBIDDEN]
    assert not bad, f"{path.name} imports {bad}"
    uses = _world_uses(tree)
    assert not uses, f"{path.name} touches the world: {uses}"


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_module_only_imports_pure_siblings(name: str) -> None:
    _, tree = _source(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            sibling = (node.module or "").split(".")[0]
            if sibling:
                assert sibling in PURE_MODULES or sibling == "errors", (name, sibling)
            else:
                for alias in node.names:
                    assert alias.name in PURE_MODULES or alias.name == "errors", (name, alias)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("judge"):
            parts = node.module.split(".")
            assert len(parts) > 1 and (parts[1] in PURE_MODULES or parts[1] == "errors")


def test_static_checker_catches_every_import_form() -> None:
    tree = ast.parse(
        "import os.path\n"
        "from datetime import datetime\n"
        "def f():\n"
        "    import litellm\n"
        "    from time import sleep\n"
        "    return importlib.import_module('jinja2'), __import__('socket')\n"
        "x = os.environ['A']\n"
        "y = time.monotonic()\n"
        "z = datetime.now()\n"
        "w = dt.datetime.now()\n"
    )
    roots = {mod for _, mod in _imported_roots(tree)}
    assert {"os", "datetime", "litellm", "time", "jinja2", "socket"} <= roots
    uses = {what for _, what in _world_uses(tree)}
    assert {"os.environ", "time.monotonic", "datetime.now"} <= uses


def _loaded(code: str) -> list[str]:
    script = (
        f"{code}\n"
        "import sys, json\n"
        f"forbidden = {sorted(FORBIDDEN)!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in forbidden)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    result: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_pure_modules_load_nothing_forbidden_at_runtime() -> None:
    imports = "; ".join(f"import judge.{m}" for m in PURE_MODULES)
    loaded = set(_loaded(imports))
    assert not loaded & NEVER_LOADED, sorted(loaded & NEVER_LOADED)
    # The interpreter itself and pydantic (used by every model) load os, time, datetime,
    # random and socket; the pure core must add nothing to that baseline.
    baseline = set(_loaded(
        "import yaml, fractions, hashlib, json, re, difflib\n"
        "from pydantic import BaseModel, Field\n"
        "class _M(BaseModel):\n"
        "    a: int = Field(ge=0)\n"
        "_M(a=1)\n"
    ))
    assert loaded - baseline == set(), sorted(loaded - baseline)


def test_cli_app_does_not_import_litellm() -> None:
    loaded = set(_loaded("import judge.cli\nfrom judge.cli.app import build_app\nbuild_app()"))
    heavy = {"litellm", "diskcache", "jinja2", "sqlalchemy", "httpx", "aiohttp"}
    assert not loaded & heavy, sorted(loaded & heavy)


def test_help_does_not_import_litellm() -> None:
    script = (
        "import sys\n"
        "from judge.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED' if any(m.split('.')[0] == 'litellm' for m in sys.modules) else 'CLEAN')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.stdout.strip().splitlines()[-1] == "CLEAN", proc.stdout + proc.stderr


# --- __all__ ------------------------------------------------------------------------------

ALL_MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "_data" not in p.parts)


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "__all__":
                value = ast.literal_eval(node.value)  # type: ignore[arg-type]
                assert isinstance(value, list | tuple)
                return [str(v) for v in value]
    return None


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 "isort-style": CONSTANTS, then Classes, then functions and the rest
    if name.isupper():
        return 0, name
    if name[:1].isupper():
        return 1, name
    return 2, name


def test_there_are_modules_to_check() -> None:
    assert len(ALL_MODULES) >= 8


@pytest.mark.parametrize("path", ALL_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_defines_sorted_all(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = _all_of(tree)
    assert names is not None, f"{path.relative_to(ROOT)} has no __all__"
    assert names == sorted(names, key=_isort_key), f"{path.relative_to(ROOT)}: __all__ unsorted"
    assert len(set(names)) == len(names), "duplicates in __all__"
    undefined = sorted(set(names) - _defined_names(tree))
    assert not undefined, f"{path.relative_to(ROOT)}: __all__ names undefined {undefined}"
