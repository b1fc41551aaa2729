"""Request bodies and the few response shapes that are the HTTP door's own.

A body's settings become workspace overrides, validated by
:class:`judge.app.workspace.settings.Settings` (the model behind the CLI's flags), and its filters a
:class:`judge.app.runs.running.RunRequest`. Names that could reach the file system are ids, never
paths: a rubric is named by id (no ``/``, no ``.yaml``), a suite by the id the workspace's index
knows. ``api_base``, the template and the store are not in any body: a caller cannot point the
server's keys at another host or make it read another file.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from pydantic import AfterValidator, BaseModel, Field, StrictBool

from ..app.workspace.settings import CacheModeName
from ..core.formats.suite import Case
from ..core.outcomes.baseline import Baseline
from ..core.text.frozen import Frozen

__all__ = [
    "BaselineBody",
    "BaselineItem",
    "BodyOverrides",
    "EvaluateBody",
    "HarnessAccepted",
    "HarnessBody",
    "Health",
    "RecordedBaseline",
    "RecordsBody",
    "RubricId",
    "SuiteItem",
    "Version",
]


def _rubric_id(value: str) -> str:
    if value.endswith((".yaml", ".yml")):
        raise ValueError("name a rubric by id (e.g. task-evaluation), not by file")
    return value


RubricId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"),
                     AfterValidator(_rubric_id)]
"""A rubric of the workspace or a shipped one, by id."""
ModelName = Annotated[str, Field(min_length=1, max_length=200)]


class BodyOverrides(TypedDict):
    """The workspace settings a run request sets, by setting name (None: not set)."""

    model: list[str] | None
    rubric: str | None
    seed: int | None
    samples: int | None
    cache_mode: str | None
    panel: str | None
    stable_schema: bool | None


class HarnessBody(Frozen):
    """How to run the suite; every field optional, the workspace's settings otherwise."""

    models: list[ModelName] | None = Field(default=None, max_length=16)
    """Judge models (LiteLLM names); several make a panel."""
    rubric: RubricId | None = None
    seed: int | None = None
    samples: int | None = None
    """Judge each case K times (seed, seed+1, ...); their aggregate (the workspace's
    ``sample_aggregate``: the mean unless set) heads."""
    cache_mode: CacheModeName | None = Field(None, alias="cacheMode")
    panel: Literal["median", "mean"] | None = None
    stable_schema: bool | None = Field(None, alias="stableSchema")
    """One reply schema per rubric, citations checked on the reply (prompt-cache friendly)."""
    tags: list[str] = Field(default_factory=list)
    """Only cases with every one of these tags."""
    complexity: list[Literal["simple", "medium", "complex"]] = Field(default_factory=list)
    cases: list[str] = Field(default_factory=list)
    """Only these case ids."""
    check: StrictBool = True
    """Compare with the suite's baseline (the first run records it)."""

    def overrides(self) -> BodyOverrides:
        """The settings this body sets (None: unset), by setting name."""
        return {"model": self.models, "rubric": self.rubric, "seed": self.seed,
                "samples": self.samples, "cache_mode": self.cache_mode, "panel": self.panel,
                "stable_schema": self.stable_schema}


class HarnessAccepted(BaseModel):
    """A run started; poll ``location`` or read its ``events``."""

    run: str
    suite: str
    status: Literal["running"] = "running"
    location: str
    events: str


class BaselineBody(Frozen):
    """Which run becomes the baseline."""

    run: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """A run id or unique prefix; default: the suite's latest complete run."""


class RecordedBaseline(BaseModel):
    """A baseline written to the workspace's baselines folder."""

    path: str
    changed: bool
    """False when the file already held the same baseline."""
    run: str
    baseline: Baseline


class BaselineItem(BaseModel):
    """One baseline file of the workspace, or why it cannot be read."""

    suite: str
    path: str
    baseline: Baseline | None
    error: str | None = None


class SuiteItem(BaseModel):
    """One suite of the workspace."""

    id: str
    path: str
    cases: int | None
    rubric: str | None
    error: str | None = None
    """Why the file cannot be run (file, place, fix)."""
    baseline: bool
    """The suite has a baseline file."""
    kind: str = "rubric"
    """``rubric`` (run with ``judge run``) or ``pairwise`` (``judge judges pairwise``)."""


class EvaluateBody(Frozen):
    """One case to judge, with the rubric and judge to use (the workspace's otherwise)."""

    case: Case
    rubric: RubricId | None = None
    model: ModelName | None = None


class RecordsBody(Frozen):
    """Live records for the production monitor: each is a case, judged when sampled."""

    records: list[Case] = Field(min_length=1, max_length=10_000)


class Health(BaseModel):
    """The server answers; ``ready`` once the workspace is open (``/readyz`` says the same)."""

    status: Literal["ok"] = "ok"
    ready: bool = True
    """False only in the first moments after start, while the workspace is being opened;
    requests other than ``/healthz`` wait for it meanwhile."""


class Version(BaseModel):
    """What is serving."""

    name: str = "judgeflow"
    version: str
    api: str = "1"
