"""Seals: what tells a record that decides a verdict from one edited or damaged since written.

One rule for every such record: the run store's rows (runs, results, labels) and the files a
verdict is read from (baselines, noise models, calibrations, labels files). A seal is the
SHA-256 (``sha256:``) of the record's canonical JSON, or with the team secret
(``JUDGE_CACHE_SECRET``) its HMAC-SHA256 (``hmac-sha256:``). Pure: the secret comes in.

What each promises. A plain digest is public arithmetic: it catches damage (a flipped bit, a
torn write, an edit that forgot the digest), not someone who recomputes it. The keyed seal
catches that too. So with the secret set, a record without a keyed seal is refused: written
without the secret, its seal stripped, or edited — there is no telling which, and using it
would let anyone with write access decide the verdict (a noise model's spread edited to 50
turned a real regression into "within noise").

Decisions:

- A store row has one ``seal`` column (:meth:`Sealer.seal`, :meth:`Sealer.problem`): keyed
  under the secret, else plain. A row sealed with the secret and read without it is refused
  (nothing can be checked); a row with no seal (written before seals) is read as before
  without the secret, and refused with it.
- A file carries ``digest`` (plain, always) and, written under the secret, ``seal`` (keyed)
  beside its value (:func:`file_seals`, :meth:`Sealer.file_problem`). A reader with the
  secret needs a matching ``seal``; a reader without it checks ``digest`` (files are committed
  and read by people who do not hold the secret; for them a digest is what a baseline always
  promised). A file with neither is from before seals: read as before without the secret.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from .canonical import canonical_json, stable_json
from .errors import ConfigError
from .strict_json import strict_model

__all__ = [
    "DIGEST_FIELD",
    "KEYED",
    "NO_SECRET",
    "PLAIN",
    "SEAL_FIELD",
    "SECRET_ENV",
    "Sealer",
    "checked_file",
    "file_seals",
    "sealed_text",
    "split_seals",
]

SECRET_ENV: Final = "JUDGE_CACHE_SECRET"
"""The environment variable holding the team secret (read by the doors, never here)."""
KEYED: Final = "hmac-sha256:"
PLAIN: Final = "sha256:"
DIGEST_FIELD: Final = "digest"
"""A file's plain digest of its value (``sha256:<hex>``)."""
SEAL_FIELD: Final = "seal"
"""A file's keyed seal of its value (``hmac-sha256:<hex>``), written under the secret only."""

_Model = TypeVar("_Model", bound=BaseModel)

_NO_SECRET = f"it was sealed with the team secret; set {SECRET_ENV} to read it"
_UNSEALED = (f"it carries no seal under the team secret ({SECRET_ENV} is set): written "
             f"without the secret, or its seal was removed")
_CHANGED = "its seal does not match its content (the row was changed after it was written)"
_EDITED = "it was edited by hand or damaged after it was written ({} does not match its content)"


class Sealer:
    """Makes and checks seals under one key (the team secret, or none)."""

    def __init__(self, secret: str | None) -> None:
        """``secret``: ``JUDGE_CACHE_SECRET`` if set (an empty value is no secret)."""
        self._key = secret.encode("utf-8") if secret else None

    @property
    def keyed(self) -> bool:
        """Whether seals are keyed with the team secret."""
        return self._key is not None

    def seal(self, value: Any) -> str:
        """The seal of ``value``: a row's key columns, stored text and format, or a file's value."""
        data = canonical_json(value).encode("utf-8")
        if self._key is None:
            return PLAIN + hashlib.sha256(data).hexdigest()
        return KEYED + hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def digest(self, value: Any) -> str:
        """The plain digest of ``value``, whatever the key."""
        return PLAIN + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()

    def problem(self, value: Any, seal: str | None) -> str | None:
        """Why a store row sealed ``seal`` does not verify; None when it does.

        A row with no seal verifies only without the secret (written before seals).
        """
        if seal is None:
            return _UNSEALED if self._key is not None else None
        if seal.startswith(KEYED) and self._key is None:
            return _NO_SECRET
        if seal.startswith(PLAIN) and self._key is not None:
            return ("its seal is not keyed with the team secret (written without "
                    f"{SECRET_ENV}, or edited)")
        if not _matches(seal, self.seal(value)):
            return _CHANGED
        return None

    def file_problem(self, value: Any, digest: object, seal: object) -> str | None:
        """Why a file whose ``value`` came with ``digest`` and ``seal`` is refused, or None."""
        if self._key is not None:
            if seal is None:
                return _UNSEALED
            if not _matches(seal, self.seal(value)):
                return _EDITED.format("its seal") + ", or sealed with another secret"
        if digest is not None and not _matches(digest, self.digest(value)):
            return _EDITED.format("its digest")
        return None


NO_SECRET: Final = Sealer(None)
"""Seals without the team secret: plain digests (what a reader without the secret checks)."""


def _matches(given: object, expected: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given, expected)


def file_seals(sealer: Sealer, value: Any) -> dict[str, str]:
    """What a file writes beside ``value``: its ``digest``, and its ``seal`` under the secret."""
    seals = {DIGEST_FIELD: sealer.digest(value)}
    if sealer.keyed:
        seals[SEAL_FIELD] = sealer.seal(value)
    return seals


def split_seals(data: dict[str, Any]) -> tuple[dict[str, Any], object, object]:
    """A file's object without its ``digest`` and ``seal``, and the two (None when absent)."""
    rest = dict(data)
    return rest, rest.pop(DIGEST_FIELD, None), rest.pop(SEAL_FIELD, None)


def sealed_text(model: BaseModel, sealer: Sealer, data: dict[str, Any] | None = None, *,
                sealed: Any = None) -> str:
    """A sealed file's text: stable JSON of ``data`` (default: the model's JSON value).

    Beside it, the seals of ``sealed`` (default: the model's JSON value), so a field the file
    leaves out when empty is still covered.
    """
    value = model.model_dump(mode="json")
    covered = value if sealed is None else sealed
    return stable_json({**(value if data is None else data), **file_seals(sealer, covered)})


def checked_file(data: Any, source: str, model: type[_Model], sealer: Sealer | None, *,
                 error: type[ConfigError], what: str, fix: str, seal_fix: str | None = None,
                 sealed: Callable[[_Model], Any] | None = None) -> _Model:
    """A sealed file's JSON ``data`` as ``model`` once its seals verify (unchecked: ``None``).

    ``error`` (exit 2) names ``source``, the place and ``fix`` for anything else: not an
    object (``what`` is one), a field of the wrong type; ``seal_fix`` for a seal that does
    not verify. ``sealed`` gives the value the seals cover (default: the model's JSON value).
    """
    if not isinstance(data, dict):
        raise error(f"{what} is a JSON object", file=source, fix=fix)
    value, digest, seal = split_seals(data)
    parsed = strict_model(model, value, source, error, fix)
    if sealer is not None:
        covered = parsed.model_dump(mode="json") if sealed is None else sealed(parsed)
        why = sealer.file_problem(covered, digest, seal)
        if why is not None:
            raise error(why, file=source, where=SEAL_FIELD if sealer.keyed else DIGEST_FIELD,
                        fix=seal_fix or fix)
    return parsed
