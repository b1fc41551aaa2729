"""The one base of judgeflow's values: frozen pydantic models that refuse unknown fields.

Every file format and result is one of these: a typo in a rubric or suite fails loudly with
the file and the field (``extra="forbid"``), and a result cannot change once made.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen"]


class Frozen(BaseModel):
    """A frozen model with no extra fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
