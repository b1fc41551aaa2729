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

# --- layers ---------------------------------------------------------------------------------
# The layer of a module is its folder: a new file inherits its package's rules without anyone
# listing it. Each package names the packages it may import (besides itself); "top" is the
# doors' entry points at the top of judge/ (__init__, __main__, api, testing).
CORE = "core"
ADAPTERS = ("system", "render", "llm", "cache", "store", "report", "collect")
DOORS = ("cli", "server", "pytest_plugin", "worker", "top")
BELOW_ENGINE = frozenset({CORE, "system", "render", "llm", "cache"})
MAY_IMPORT: dict[str, frozenset[str]] = {
    CORE: frozenset(),
    "system": frozenset({CORE}),
    "render": frozenset({CORE, "system"}),
    "llm": frozenset({CORE, "system"}),
    "cache": frozenset({CORE, "system"}),
    "store": frozenset({CORE, "system"}),
    "report": frozenset({CORE, "system"}),
    "collect": frozenset({CORE, "system"}),
    "engine": BELOW_ENGINE,
    "app": frozenset({CORE, *ADAPTERS, "engine"}),
    # The doors call the application; the CLI also starts the server (``judge workspace serve``).
    "cli": frozenset({CORE, *ADAPTERS, "engine", "app", "server", "top"}),
    "server": frozenset({CORE, *ADAPTERS, "engine", "app", "top"}),
    "pytest_plugin": frozenset({CORE, *ADAPTERS, "engine", "app", "top"}),
    # The warm worker's client is standard library only; its server forks the CLI.
    "worker": frozenset({"cli"}),
    "top": frozenset({CORE, *ADAPTERS, "engine", "app", "cli", "pytest_plugin", "worker"}),
}
TOP_ENTRY_POINTS = frozenset({"__init__", "__main__", "api", "testing"})


def package_of(rel: Path) -> str:
    """The package (layer) of a module path relative to judge/ (``cli/run_cmd.py`` → cli)."""
    return rel.parts[0] if len(rel.parts) > 1 else "top"


def _modules() -> list[Path]:
    return sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py")
                  if "_data" not in p.parts)


def _target(rel: Path, node: ast.ImportFrom | ast.Import) -> list[Path]:
    """The judge modules an import statement names, as package-relative paths."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name.split(".")[0] == "judge"]
        dotted = [n.split(".")[1:] for n in names]
    elif node.level == 0:
        if not node.module or node.module.split(".")[0] != "judge":
            return []
        base = node.module.split(".")[1:]
        dotted = [[*base, a.name] for a in node.names]
    else:
        pkg = list(rel.parent.parts)
        up = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
        base = up + (node.module.split(".") if node.module else [])
        dotted = [[*base, a.name] for a in node.names]
    out = []
    for parts in dotted:
        # Longest prefix that is a module or a package.
        for n in range(len(parts), 0, -1):
            cand = Path(*parts[:n])
            if (PACKAGE / cand).with_suffix(".py").is_file():
                out.append(cand.with_suffix(".py"))
                break
            if (PACKAGE / cand / "__init__.py").is_file():
                out.append(cand / "__init__.py")
                break
    return out


def _violations(rel: Path) -> list[str]:
    tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
    mine = package_of(rel)
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for target in _target(rel, node):
            theirs = package_of(target)
            if theirs == mine or target == Path("__init__.py"):  # the version, the facade
                continue
            if theirs not in MAY_IMPORT[mine]:
                bad.append(f"line {node.lineno}: {mine} imports {theirs} ({target})")
    return bad


MODULES = _modules()
CORE_MODULES = [m for m in MODULES if package_of(m) == CORE]


def test_every_module_is_in_a_package_with_rules() -> None:
    packages = {package_of(m) for m in MODULES}
    assert packages == set(MAY_IMPORT), packages ^ set(MAY_IMPORT)
    top = {m.stem for m in MODULES if package_of(m) == "top"}
    assert top == TOP_ENTRY_POINTS, f"only the doors' entry points live at the top: {top}"
    for name in ("formats/models", "formats/rubric", "formats/evidence", "scoring/scoring",
                 "outcomes/baseline", "outcomes/summary", "text/secrets"):
        assert Path(f"core/{name}.py") in CORE_MODULES, name


@pytest.mark.parametrize("package", ["core", "app"])
def test_core_and_app_are_grouped_by_concept(package: str) -> None:
    """No flat field again: a module of the core or the application lives in its concept's
    folder (``core/stats/``, ``app/runs/`` ...), which inherits the package's rules."""
    flat = sorted(p.name for p in (PACKAGE / package).glob("*.py") if p.name != "__init__.py")
    assert not flat, f"judge/{package}/ holds only concept folders; move {flat} into one"


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_every_package_docstring_states_its_layer(package: str) -> None:
    if package == "top":
        return
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    assert doc and "Layer:" in doc and "May import:" in doc, package


@pytest.mark.parametrize("rel", MODULES, ids=str)
def test_imports_point_down_the_layers(rel: Path) -> None:
    assert not _violations(rel), f"{rel}: {_violations(rel)}"


@pytest.mark.parametrize(("probe", "imports", "found"), [
    ("core/_layer_probe.py", "from ..cache.disk import JudgmentCache\n", "core imports cache"),
    ("core/_layer_probe.py", "from ..engine import runner\n", "core imports engine"),
    ("core/_layer_probe.py", "from judge.app import workspace\n", "core imports app"),
    ("cache/_layer_probe.py", "from ..store.runs import RunStore\n", "cache imports store"),
    ("engine/_layer_probe.py", "from ..app.gate import decide\n", "engine imports app"),
])
def test_direction_checker_fails_on_an_upward_import(probe: str, imports: str,
                                                       found: str) -> None:
    # The checker itself: a new file in a folder gets that folder's rules, unlisted.
    path = PACKAGE / probe
    path.write_text(imports)
    try:
        bad = _violations(Path(probe))
    finally:
        path.unlink()
    assert len(bad) == 1 and found in bad[0], bad


FORBIDDEN = frozenset({
    "litellm", "diskcache", "jinja2", "sqlalchemy", "httpx", "aiohttp", "socket", "time",
    "os", "subprocess", "random", "asyncio", "sqlite3", "tempfile", "shutil",
    "pathlib", "io", "glob",
})
# Heavy or world-facing packages that nothing else drags in: never loaded by the pure core.
NEVER_LOADED = frozenset({
    "litellm", "diskcache", "jinja2", "sqlalchemy", "httpx", "aiohttp", "subprocess",
    "asyncio",
})
PATH_IO = frozenset({"read_text", "read_bytes", "write_text", "write_bytes", "open", "exists",
                     "is_file", "is_dir", "mkdir", "unlink", "iterdir", "glob", "rglob",
                     "stat", "touch", "rename", "resolve", "cwd", "home"})


def _source(rel: Path) -> tuple[Path, ast.Module]:
    path = PACKAGE / rel
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
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in {"open", "id", "input", "print"}:
                found.append((node.lineno, f"{func.id}()"))
            elif isinstance(func, ast.Attribute) and func.attr in PATH_IO and not (
                    isinstance(func.value, ast.Name) and func.value.id in {"re", "str"}):
                found.append((node.lineno, f".{func.attr}()"))
    return found


@pytest.mark.parametrize("rel", CORE_MODULES, ids=str)
def test_core_module_touches_no_world(rel: Path) -> None:
    _, tree = _source(rel)
    bad = [(line, mod) for line, mod in _imported_roots(tree) if mod in FORBIDDEN]
    assert not bad, f"{rel} imports {bad}"
    uses = _world_uses(tree)
    assert not uses, f"{rel} touches the world: {uses}"


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
    imports = "; ".join("import judge." + ".".join(m.with_suffix("").parts) for m in CORE_MODULES)
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
