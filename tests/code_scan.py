"""Reading judge/'s source for the whole-tree checks: each module's syntax tree, its calls."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

__all__ = ["PACKAGE", "calls", "modules", "rel", "tree"]

PACKAGE = Path(__file__).resolve().parents[1] / "judge"


def modules(*packages: str) -> list[Path]:
    """judge/'s modules (those of ``packages`` when given), sorted."""
    folders = [PACKAGE / p for p in packages] if packages else [PACKAGE]
    return sorted(p for folder in folders for p in folder.rglob("*.py")
                  if "_data" not in p.parts)


@functools.cache
def tree(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once for every check."""
    return ast.parse(path.read_text())


def rel(path: Path) -> str:
    """The module's path below judge/."""
    return str(path.relative_to(PACKAGE))


def calls(node: ast.AST) -> list[tuple[str, ast.Call]]:
    """(enclosing function, call) of every call below ``node`` (``<module>`` at the top)."""
    found: list[tuple[str, ast.Call]] = []

    def visit(parent: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(parent):
            name = child.name if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call):
                found.append((where, child))
            visit(child, name)

    visit(node, "<module>")
    return found
