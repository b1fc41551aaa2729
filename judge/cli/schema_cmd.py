"""``judge schema suite|rubric|reference``: the file formats, from the models (no workspace).

The work is :mod:`judge.app.workspace.schemas`; this door prints. The checked-in copies are
``docs/schemas/*.schema.json`` and ``docs/reference.md`` (kept current by a test).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from ..app.workspace.schemas import SchemaKind, reference_page, schema_text

__all__ = ["register"]


class _What(StrEnum):
    suite = "suite"
    rubric = "rubric"
    reference = "reference"


def register(app: typer.Typer) -> None:
    """Add ``schema`` to ``app``."""
    app.command("schema")(schema)


def schema(
    what: Annotated[_What, typer.Argument(
        metavar="suite|rubric|reference", case_sensitive=False,
        help="suite or rubric: that file's JSON Schema; reference: the Markdown page of "
             "every key of both.")],
) -> None:
    """Print the JSON Schema (draft 2020-12) of a suite or rubric file, or the reference page.

    Editors use the schema for completion and validation of YAML: put
    `# yaml-language-server: $schema=PATH/suite.schema.json` on a file's first line.
    Regenerate the checked-in copies with
    `judge schema suite > docs/schemas/suite.schema.json` (and rubric, and
    `judge schema reference > docs/reference.md`).
    """
    text = reference_page() if what is _What.reference else schema_text(SchemaKind(what.value))
    sys.stdout.write(text)
    sys.stdout.flush()
