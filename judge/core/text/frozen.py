"""The one base of judgeflow's values: frozen pydantic models that refuse unknown fields.

Every file format and result is one of these: a typo in a rubric or suite fails loudly with
the file and the field (``extra="forbid"``), and a result cannot change once made.

Python names in Python, the wire's names on the wire: a field is named in snake_case and keeps
its camelCase wire name as an alias (``overall_score: ... = Field(alias="overallScore")``).
The settings below make that hold without anyone passing ``by_alias``: every dump, JSON text,
JSON schema and HTTP body speaks the alias; parsing takes the alias (files, stored payloads,
request bodies) and the Python name (constructors in our code).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "FrozenView", "wire_value"]


class Frozen(BaseModel):
    """A frozen model with no extra fields, written on the wire by its aliases."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)


class FrozenView(BaseModel):
    """A frozen model written on the wire by its aliases that does not refuse unknown fields.

    The views the application hands its doors (a run's view and progress, the gate's verdict,
    the live monitor's answers, a page of a listing) were published this way: their OpenAPI
    schemas stay open (no ``additionalProperties: false``), which :class:`Frozen` would close.
    """

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)


def wire_value(model: BaseModel, name: str) -> Any:
    """The value of ``model``'s field written ``name`` on the wire (its alias, else its name).

    For code that holds a statistic's or a setting's wire name as data (a table of the names
    it tracks, printed and stored as they are) and reads the field it names.
    """
    for attr, info in type(model).model_fields.items():
        if (info.alias or attr) == name:
            return getattr(model, attr)
    raise KeyError(f"{type(model).__name__} has no field written {name!r}")
