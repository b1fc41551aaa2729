"""One home for each concept, in fact: each test fails when a second definition appears.

The atomic writer's own check is tests/system/test_atomic_files.py.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest
from code_scan import calls as _calls
from code_scan import modules as _modules
from code_scan import rel as _rel
from code_scan import tree as _tree

ROOT = Path(__file__).resolve().parents[1]

# --- structured values as prompt text ---------------------------------------------------------
# Where JSON is written in the packages that make prompt text, and why it is not evidence text.
JSON_WRITERS = {
    ("core/formats/evidence.py", "<module>"):
        "structured_text's encoder: the one form of evidence text",
    ("core/text/canonical.py", "<module>"): "canonical JSON, for what is hashed",
    ("core/text/canonical.py", "stable_json"): "files people diff (baselines, exports)",
    ("core/formats/output_schema.py", "_base_schema"): "a rubric's output schema",
    ("core/formats/suite.py", "case_lines"): "a compiled suite's lines (read back, never shown)",
    ("render/prompts.py", "input_text"): "a case's input, quoted as an indented block",
}


def _json_writers(tree: ast.AST) -> set[str]:
    return {where for where, call in _calls(tree)
            if ast.unparse(call.func) in {"json.dumps", "json.dump", "json.JSONEncoder"}}


def test_structured_values_become_prompt_text_in_one_place() -> None:
    extra = sorted((_rel(p), w) for p in _modules("core", "collect", "render")
                   for w in _json_writers(_tree(p)) if (_rel(p), w) not in JSON_WRITERS)
    assert not extra, (f"JSON written in {extra}: a structured value becomes prompt text "
                       "through judge.core.formats.evidence.structured_text")


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
    assert not found, f"{found} hash their own json.dumps: use judge.core.text.canonical.sha256_hex"


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


# --- a cost for people ------------------------------------------------------------------------
DOLLARS = re.compile(r"\$\{[^}]*:\.\d+f\}")
"""A dollar figure formatted in place (``f"${cost:.4f}"``): zero and unknown need words."""


def _dollar_lines(source: str) -> list[int]:
    return [n for n, line in enumerate(source.splitlines(), 1) if DOLLARS.search(line)]


def test_costs_are_said_in_one_place() -> None:
    found = [f"{_rel(p)}:{n}" for p in _modules("cli", "pytest_plugin", "server", "report")
             for n in _dollar_lines(p.read_text())]
    assert not found, f"{found} format a cost: use judge.core.outcomes.usage.cost_text"


def test_the_cost_checker_sees_a_second_formatter() -> None:
    assert _dollar_lines('x = 1\ncost = f"${t.cost_usd:.4f}"\n') == [2]


# --- other libraries' private names --------------------------------------------------------------
# Each one still used: (module, name) -> the test that fails when the library moves it (the
# one-line reason is beside the use). os._exit is the standard library's documented call.
FOREIGN_PRIVATE: dict[tuple[str, str], str] = {
    ("cli/app.py", "typer._click.core"):
        "tests/cli/test_cli_help.py::test_typer_builds_commands_of_the_click_we_import",
    ("cli/app.py", "typer._click.formatting"):
        "tests/cli/test_cli_help.py::test_typer_builds_commands_of_the_click_we_import",
    ("llm/client.py", "_flush_on_exit"):
        "tests/llm/test_client_respx.py::test_litellm_still_has_what_quiet_exit_reads",
    ("llm/client.py", "litellm._service_logger"):
        "tests/cli/test_worker.py::test_a_warm_child_imports_nothing_for_a_cold_run",
    ("worker/client.py", "_exit"): "",
    ("worker/server.py", "_exit"): "",
}
_DOTTED = re.compile(r"^[A-Za-z]\w*(\.\w+)+$")
_ATTR_CALLS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_names(trees: list[ast.Module]) -> set[str]:
    """Every name judge/ binds itself: its functions, classes, variables and attributes."""
    own: set[str] = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(n.name)
            elif isinstance(n, ast.Name | ast.Attribute) and isinstance(n.ctx, ast.Store):
                own.add(n.id if isinstance(n, ast.Name) else n.attr)
            elif isinstance(n, ast.arg):
                own.add(n.arg)
    return own


def _foreign_private(tree: ast.Module, own: set[str]) -> set[str]:
    """Private modules, attributes and names of other libraries that ``tree`` uses."""
    found: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module \
                and n.module.split(".")[0] != "judge":
            if any(_private(part) for part in n.module.split(".")):
                found.add(n.module)
            found |= {f"{n.module}.{a.name}" for a in n.names if _private(a.name)}
        elif isinstance(n, ast.Import):
            found |= {a.name for a in n.names if any(map(_private, a.name.split(".")))}
        elif isinstance(n, ast.Attribute) and _private(n.attr) and n.attr not in own:
            found.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) \
                and _DOTTED.match(n.value) and any(map(_private, n.value.split(".")[1:])):
            found.add(n.value)  # a module's dotted path
        elif isinstance(n, ast.Call) and ast.unparse(n.func) in _ATTR_CALLS \
                and len(n.args) > 1 and isinstance(name := n.args[1], ast.Constant) \
                and isinstance(name.value, str) and _private(name.value) \
                and name.value not in own:
            found.add(name.value)
    return found


def test_other_libraries_private_names_only_where_a_test_holds_them() -> None:
    trees = {_rel(p): _tree(p) for p in _modules()}
    own = _own_names(list(trees.values()))
    used = {(rel, name) for rel, tree in trees.items() for name in _foreign_private(tree, own)}
    assert used <= FOREIGN_PRIVATE.keys(), (
        f"another library's private names {sorted(used - FOREIGN_PRIVATE.keys())}: use its "
        "public API, or add a one-line reason beside the use, a test that fails when the "
        "library moves it, and a row here")
    assert not FOREIGN_PRIVATE.keys() - used, "rows for names no longer used: remove them"
    for guard in filter(None, FOREIGN_PRIVATE.values()):
        file, name = guard.split("::")
        assert f"def {name}(" in (ROOT / file).read_text(), guard


@pytest.mark.parametrize("source", [
    "from typer._click.core import Command\n", "import litellm._service_logger\n",
    "hidden = response._hidden_params\n", "x = getattr(response, '_hidden_params', None)\n",
    "MODULES = ('litellm._service_logger',)\n",
])
def test_the_private_name_checker_sees_each_form(source: str) -> None:
    assert _foreign_private(ast.parse(source), own=set())


# --- untyped dicts cross no layer ----------------------------------------------------------------
# The functions left returning ``dict[str, Any]`` / ``list[dict[str, Any]]``: each at a JSON
# door (a JSON Schema or OpenAPI document, a provider's wire, a parsed file, a --json or HTTP
# document), and its docstring says so. Everything else returns a model, a TypedDict or a view.
JSON_DOORS = frozenset({
    ("app/runs/gate.py", "_wire"), ("app/judges/reviewing.py", "review_page_data"),
    ("cli/runs_batch.py", "_job_json"), ("core/formats/output_schema.py", "output_schema"),
    ("core/formats/output_schema.py", "stable_schema"),
    ("core/formats/output_schema.py", "expected_schema"),
    ("core/stats/pairwise.py", "verdict_schema"), ("core/scoring/signal_rules.py", "record"),
    ("core/text/strict_json.py", "_pairs"), ("core/formats/suite.py", "read_suite_document"),
    ("llm/client.py", "request_body"), ("server/app.py", "openapi"),
    ("server/problems.py", "document_problems"), ("server/routes_review.py", "review_data"),
    ("server/routes_review.py", "post_labels"),
})
JSON_DOOR_LIMIT = 15
_UNTYPED = frozenset({"dict[str, Any]", "list[dict[str, Any]]", "Dict[str, Any]"})


def _untyped(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(name, function) of each function returning an untyped dict (aliases resolved)."""
    aliases = {t.id: ast.unparse(n.value) for n in tree.body if isinstance(n, ast.Assign)
               for t in n.targets if isinstance(t, ast.Name)}
    aliases |= {n.target.id: ast.unparse(n.value) for n in tree.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                and n.value is not None and "TypeAlias" in ast.unparse(n.annotation)}
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.returns is not None:
            parts = [aliases.get(p, p) for p in ast.unparse(n.returns).split(" | ")]
            if any(p in _UNTYPED for p in parts if p != "None"):
                found.append((n.name, n))
    return found


def test_untyped_dicts_are_returned_only_at_json_doors() -> None:
    found = {(_rel(p), name): fn for p in _modules() for name, fn in _untyped(_tree(p))}
    assert found.keys() <= JSON_DOORS, (
        f"functions returning dict[str, Any]: {sorted(found.keys() - JSON_DOORS)}: return a "
        "model, a TypedDict or a view; a JSON door says so in its docstring and is listed here")
    assert len(found) <= JSON_DOOR_LIMIT
    assert not JSON_DOORS - found.keys(), "rows for doors that are typed now: remove them"
    unsaid = [key for key, fn in found.items() if "JSON" not in (ast.get_docstring(fn) or "")]
    assert not unsaid, f"JSON doors whose docstring does not say so: {unsaid}"


def test_the_untyped_dict_checker_resolves_aliases() -> None:
    source = ("Row = dict[str, Any]\n"
              "def a() -> dict[str, Any] | None: ...\n"
              "def b() -> Row: ...\n"
              "def c() -> list[dict[str, Any]]: ...\n"
              "def d() -> dict[str, int]: ...\n")
    assert [name for name, _ in _untyped(ast.parse(source))] == ["a", "b", "c"]
