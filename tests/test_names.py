"""Python names in Python, the wire's names on the wire.

Model attributes are snake_case; the camelCase of the JSON, the HTTP API, exports and stored
payloads lives only in the fields' aliases. This scans every module of the package and the
report template for an attribute access with a camelCase name: one that slips back in (a
field declared camelCase, or code reaching for the wire name) fails here, naming the place.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "judge"
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]\w*")
ALLOWED: dict[str, str] = {}
"""camelCase attributes of other libraries that judge/ uses, with the reason; none today."""
TEMPLATE_ACCESS = re.compile(r"\b[a-z_][a-z0-9_]*\.([a-z][a-z0-9]*[A-Z]\w*)\b")


def _typed_dict_keys(tree: ast.Module) -> set[int]:
    """Ids of the key declarations of the module's TypedDicts: dict keys, the wire's own names."""
    dicts: set[str] = set()
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for _ in classes:  # a TypedDict may derive from one declared below it
        dicts |= {c.name for c in classes  # ``total=`` is a TypedDict's keyword alone
                  if any(ast.unparse(b) in {"TypedDict", *dicts} for b in c.bases)
                  or any(k.arg == "total" for k in c.keywords)}
    return {id(item) for c in classes if c.name in dicts for item in c.body}


def _camel_attributes(source: str, where: str) -> list[str]:
    found = []
    tree = ast.parse(source)
    keys = _typed_dict_keys(tree)
    for node in ast.walk(tree):
        names: list[tuple[int, str]] = []
        if isinstance(node, ast.Attribute):
            names.append((node.lineno, node.attr))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and id(node) not in keys:
            names.append((node.lineno, node.target.id))  # a field declared camelCase
        found += [f"{where}:{line}: .{name}"
                  for line, name in names if CAMEL.fullmatch(name) and name not in ALLOWED]
    return found


def test_no_camel_case_attribute_in_the_package() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in _camel_attributes(path.read_text(encoding="utf-8"),
                                          str(path.relative_to(PACKAGE.parent)))]
    assert found == [], "camelCase attributes (use the snake_case field; the alias keeps " \
        "the wire's name):\n" + "\n".join(found)


def test_no_camel_case_attribute_in_the_templates() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.j2")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.name}:{number}: .{m}" for m in TEMPLATE_ACCESS.findall(line)
                      if m not in ALLOWED]
    assert found == [], "\n".join(found)


def test_the_scan_sees_a_camel_case_access() -> None:
    """The scan is not vacuous: it finds a declaration and an access of the old shape."""
    source = "class R:\n    overallScore: int\n\ndef f(r):\n    return r.judgedBy, r.run_id\n"
    assert sorted(_camel_attributes(source, "probe")) == ["probe:2: .overallScore",
                                                          "probe:5: .judgedBy"]
    assert TEMPLATE_ACCESS.findall("{{ case.overallScore }} {{ case.overall_score }}") == \
        ["overallScore"]


def test_typed_dict_keys_are_wire_names_and_model_fields_are_not() -> None:
    source = ("class Row(TypedDict):\n    diffBase: str\n"
              "class More(Row, total=False):\n    mergedAt: str\n"
              "class Model(Frozen):\n    diffBase: str\n")
    assert _camel_attributes(source, "m.py") == ["m.py:6: .diffBase"]
