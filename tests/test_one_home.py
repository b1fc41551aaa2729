"""One home for each concept, in fact: each test fails when a second definition appears.

The atomic writer's own check is tests/system/test_atomic_files.py.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "judge"


def _modules(*packages: str) -> list[Path]:
    folders = [PACKAGE / p for p in packages] if packages else [PACKAGE]
    return sorted(p for folder in folders for p in folder.rglob("*.py")
                  if "_data" not in p.parts)


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for every check here."""
    return ast.parse(path.read_text())


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def _calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    """(enclosing function, call) of every call in ``tree``."""
    found: list[tuple[str, ast.Call]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call):
                found.append((where, child))
            visit(child, name)

    visit(tree, "<module>")
    return found


# --- structured values as prompt text ---------------------------------------------------------
# Where JSON is written in the packages that make prompt text, and why it is not evidence text.
JSON_WRITERS = {
    ("core/evidence.py", "<module>"): "structured_text's encoder: the one form of evidence text",
    ("core/canonical.py", "<module>"): "canonical JSON, for what is hashed",
    ("core/canonical.py", "stable_json"): "files people diff (baselines, exports)",
    ("core/output_schema.py", "_base_schema"): "a rubric's output schema",
    ("core/suite.py", "case_lines"): "a compiled suite's lines (read back, never shown)",
    ("render/prompts.py", "input_text"): "a case's input, quoted as an indented block",
}


def _json_writers(tree: ast.AST) -> set[str]:
    return {where for where, call in _calls(tree)
            if ast.unparse(call.func) in {"json.dumps", "json.dump", "json.JSONEncoder"}}


def test_structured_values_become_prompt_text_in_one_place() -> None:
    extra = sorted((_rel(p), w) for p in _modules("core", "collect", "render")
                   for w in _json_writers(_tree(p)) if (_rel(p), w) not in JSON_WRITERS)
    assert not extra, (f"JSON written in {extra}: a structured value becomes prompt text "
                       "through judge.core.evidence.structured_text")


def test_the_json_checker_sees_a_second_writer() -> None:
    assert _json_writers(ast.parse("def f(v):\n    return json.dumps(v, sort_keys=True)\n")) \
        == {"f"}


# --- each class defined once ------------------------------------------------------------------
def _class_names() -> dict[str, list[str]]:
    names: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                names[node.name].append(f"{_rel(path)}:{node.lineno}")
    return names


def test_each_public_class_name_is_defined_once() -> None:
    twice = {name: where for name, where in _class_names().items() if len(where) > 1}
    assert not twice, f"defined more than once (one home, or two names): {twice}"


# --- what is hashed is canonical JSON ---------------------------------------------------------
def _hashed_json(tree: ast.AST) -> list[int]:
    """Lines where a ``json.dumps`` text is hashed (instead of ``canonical_json``)."""
    return sorted({call.lineno for _, call in _calls(tree)
                   if ast.unparse(call.func).startswith("hashlib.")
                   and any(isinstance(n, ast.Call) and ast.unparse(n.func) == "json.dumps"
                           for n in ast.walk(call))})


def test_what_is_hashed_is_canonical_json() -> None:
    found = [(_rel(p), line) for p in _modules() for line in _hashed_json(_tree(p))]
    assert not found, f"{found} hash their own json.dumps: use judge.core.canonical.sha256_hex"


def test_the_hash_checker_sees_a_json_dumps_hashed() -> None:
    source = "d = hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()\n"
    assert _hashed_json(ast.parse(source)) == [1]


# --- database URLs: one resolver, one way to show one -----------------------------------------
SQL_URL_CALLS = frozenset({"make_url", "render_as_string", "URL.create"})


def _sql_url_calls(tree: ast.AST) -> set[str]:
    return {name for _, call in _calls(tree)
            if (name := ast.unparse(call.func).rsplit(".", 1)[-1]) in SQL_URL_CALLS
            or ast.unparse(call.func) in SQL_URL_CALLS}


def test_database_urls_are_read_and_shown_in_one_place() -> None:
    found = sorted(_rel(p) for p in _modules()
                   if _rel(p) != "system/sql_urls.py" and _sql_url_calls(_tree(p)))
    assert not found, f"{found} parse or render a database URL: use judge.system.sql_urls"


def test_the_url_checker_sees_a_second_resolver() -> None:
    source = "u = make_url(s)\nshown = u.render_as_string(hide_password=True)\n"
    assert _sql_url_calls(ast.parse(source)) == {"make_url", "render_as_string"}
