"""The task adapter: a small YAML or JSON file about the task into ``taskMetadata``.

Known keys: ``id``, ``title``, ``description``, ``input`` (what the agent was asked;
default: the title and description), ``output`` (its final report; default: the agent log's
last assistant message), ``tags`` and ``complexity``. Any other key (priority, labels,
assignee, url...) is kept as a reference of the ``taskMetadata`` item. Loaded with a safe
YAML loader that leaves times as the strings written: :func:`judge.core.text.safeyaml.load_yaml`,
the one loader for everything (alias bound, duplicate keys refused naming both lines, depth and
size limits).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.formats.evidence import citable_id
from ..core.formats.limits import MAX_COLLECTED_BYTES
from ..core.formats.rubric import format_validation_error
from ..core.text.errors import UsageError
from ..core.text.safeyaml import load_yaml
from .case import Collected
from .sources import read_source

__all__ = ["TaskFile", "collect_task", "parse_task"]


class TaskFile(BaseModel):
    """A task file; keys beyond these are kept as the task's references."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str | int | None = None
    """The task's id in its tracker (``SHOP-1287``); cites the item."""
    title: str | None = None
    description: str | None = None
    """What the task asks, in full; the item's excerpt."""
    input: Any = None
    """What the agent was asked, when it differs from title and description."""
    output: Any = None
    """The agent's final report: what is judged."""
    tags: tuple[str, ...] = ()
    complexity: Literal["simple", "medium", "complex"] | None = None


def parse_task(text: str, source: str) -> Collected:
    """The task file's ``taskMetadata`` item, the case's input, output, tags and complexity."""
    data = load_yaml(text, source, UsageError, max_chars=MAX_COLLECTED_BYTES, timestamps=False)
    if not isinstance(data, dict):
        raise UsageError("a task file is a mapping (id, title, description, ...)", file=source,
                         where="--task", fix="write e.g. `id: SHOP-1287` and `title: ...`")
    try:
        task = TaskFile.model_validate(data)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise UsageError(msg, file=source, where=where,
                         fix="tags is a list of strings; complexity is simple, medium or "
                             "complex") from None
    item: dict[str, Any] = {"id": citable_id("taskMetadata", str(task.id or "task"))}
    if task.title:
        item["title"] = task.title
    if task.description:
        item["description"] = task.description
    reserved = set(TaskFile.model_fields)
    item.update({k: v for k, v in data.items() if k not in reserved})
    if task.id is not None and item["id"] != str(task.id):
        item["task"] = str(task.id)
    asked = task.input
    if asked is None:
        asked = "\n\n".join(t for t in (task.title, task.description) if t) or None
    return Collected(source={"kind": "task", "file": source}, evidence={"taskMetadata": [item]},
                     input=asked, output=task.output, tags=task.tags,
                     complexity=task.complexity)


def collect_task(path: Path, base: Path) -> Collected:
    """``--task FILE`` (relative to ``base``)."""
    return parse_task(read_source(base / path, "--task", "task file"), str(path))
