"""The documents adapter: files named with ``--document`` into ``documents``.

Each document is cited by its path as given and a revision that is a digest of its text
(``documents:docs/login.md@3f2a9c1e0b7d``): an edited document is a new citation. Its title
is its first Markdown heading, else its file name; its text is the excerpt (bounded).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from ..core.formats.evidence import citable_id
from .case import Collected
from .sources import read_source

__all__ = ["DocumentItem", "collect_documents", "document_item"]


class DocumentItem(TypedDict):
    """A ``documents`` item: the document's key, a revision by content, its text."""

    id: str
    key: str
    revision: str
    title: str
    excerpt: str


def document_item(key: str, text: str) -> DocumentItem:
    """One ``documents`` item for the text of the document ``key``."""
    revision = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    heading = next((line.lstrip("#").strip() for line in text.splitlines()
                    if line.startswith("#") and line.lstrip("#").strip()), None)
    return {"id": citable_id("documents", f"{key}@{revision}"), "key": key,
            "revision": revision, "title": heading or Path(key).name, "excerpt": text}


def collect_documents(paths: Sequence[Path], base: Path) -> Collected:
    """``--document FILE``... (relative to ``base``), in the order given."""
    items = [document_item(str(p), read_source(base / p, "--document", "document"))
             for p in paths]
    return Collected(source={"kind": "documents", "files": [str(p) for p in paths]},
                     evidence={"documents": items}, facts={"documents.total": len(items)})
